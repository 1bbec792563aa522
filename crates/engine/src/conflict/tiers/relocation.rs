//! Case 3 — relocation (dataChange=false) exclusion for append-only losers. Switch `relocation`.
//!
//! Proves: a winner file action with dataChange=false only relocates rows that were already in the
//! table (OPTIMIZE); for a loser that only adds files (no removes, no DV re-adds), relocated rows
//! add nothing it should have read, and removing the originals deletes nothing it read.
//! Why skipping is safe: dataChange=false means the records of a removed file are contained in the
//! adds of the same version and vice versa (protocol §dataChange); the loser's reads see the same
//! rows before and after. The transitive hazard (#1305): if a later winner deletes rows from the
//! relocation *outputs*, the loser must still notice — so when a read file is relocated, the outputs
//! inherit the loser's read interest (the checker adds them to the read set).
//! Declines: a loser with removes or DV re-adds (a DML loser overlapping an OPTIMIZE remove still
//! conflicts: Case 4's job), any dataChange=true action, a winner mixing dataChange values.

use async_trait::async_trait;
use delta_rlc_protocol::actions::{Add, Remove};

use super::{AppendTier, DeleteReadTier, TierContext};
use crate::txn::read_set::ReadPredicate;

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

    fn switch(&self) -> Option<&'static str> {
        Some("relocation")
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
        let ok = ctx.loser_is_append_only() && winner_is_pure_relocation(ctx);
        candidates.iter().map(|a| ok && !a.data_change).collect()
    }
}

pub struct RelocationRemoves;

#[async_trait]
impl DeleteReadTier for RelocationRemoves {
    fn name(&self) -> &'static str {
        "relocation"
    }

    fn switch(&self) -> &'static str {
        "relocation"
    }

    async fn clear(&self, ctx: &TierContext<'_>, removes: &[&Remove]) -> Vec<bool> {
        let ok = ctx.loser_is_append_only() && winner_is_pure_relocation(ctx);
        removes.iter().map(|r| ok && !r.data_change).collect()
    }
}
