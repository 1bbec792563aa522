//! Case 3 — relocation (dataChange=false) exclusion. Switch `relocation`.
//!
//! Proves: a winner whose file actions are all dataChange=false only relocated rows that were
//! already in the table (OPTIMIZE): its adds hold no new rows, and removing a file it relocated
//! deletes no row. So for a loser, the relocation outputs are not new data (append check), and the
//! relocation of a file the loser only *read* does not change what it read (delete/read check).
//! Why skipping is safe: dataChange=false means the records of a removed file are contained in the
//! adds of the same version and vice versa (protocol §dataChange). Files the loser *wrote* (removed
//! or DV-updated) are never cleared here: the delete/delete check still catches them (Case 4
//! reconciles those). The transitive hazard (#1305): if a later winner deletes rows from the
//! relocation outputs, the loser must still notice — so when a read file is relocated, the outputs
//! inherit the loser's read interest (the checker adds them to the read set).
//! Scope: the reference (PR #7331) limits this to append-only losers; the argument above holds for
//! any loser as long as written files stay under the delete/delete check, which is how it is used.
//! Declines: a winner with any dataChange=true action; files the loser removed.

use crate::conflict_config::Switch;
use async_trait::async_trait;
use delta_rlc_protocol::actions::{Add, Remove};

use super::{AppendTier, DeleteReadTier, TierContext};
use crate::read_set::ReadPredicate;

fn winner_is_pure_relocation(ctx: &TierContext<'_>) -> bool {
    ctx.winner.adds.iter().all(|a| !a.data_change)
        && ctx.winner.removes.iter().all(|r| !r.data_change)
}

pub struct RelocationAdds;

#[async_trait]
impl AppendTier for RelocationAdds {
    fn name(&self) -> &'static str {
        "relocation"
    }

    fn switch(&self) -> Option<Switch> {
        Some(Switch::Relocation)
    }

    fn predicate_independent(&self) -> bool {
        true
    }

    async fn clear(
        &self,
        ctx: &TierContext<'_>,
        _predicate: &ReadPredicate,
        candidates: &[&Add],
    ) -> Vec<bool> {
        let ok = winner_is_pure_relocation(ctx);
        candidates.iter().map(|a| ok && !a.data_change).collect()
    }
}

pub struct RelocationRemoves;

#[async_trait]
impl DeleteReadTier for RelocationRemoves {
    fn name(&self) -> &'static str {
        "relocation"
    }

    /// A pure relocation moves no rows, whatever the loser read.
    fn refines_whole_table_reads(&self) -> bool {
        true
    }

    fn switch(&self) -> Switch {
        Switch::Relocation
    }

    async fn clear(&self, ctx: &TierContext<'_>, removes: &[&Remove]) -> Vec<bool> {
        let ok = winner_is_pure_relocation(ctx);
        let written: std::collections::BTreeSet<&str> = ctx
            .staged
            .iter()
            .filter_map(delta_rlc_protocol::actions::Action::as_remove)
            .map(|r| r.path.as_str())
            .collect();
        removes
            .iter()
            .map(|r| ok && !r.data_change && !written.contains(r.path.as_str()))
            .collect()
    }
}
