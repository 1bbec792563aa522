//! Tiers of the file-level checks.
//!
//! Append check: for each read predicate, each candidate file (a winner's added file) is offered to
//! the append tiers in order; a tier may *clear* a file for that predicate only when it proves that
//! no live row of the file can satisfy the predicate. A file no tier clears is a conflict.
//!
//! Delete/read check: each winner remove of a file the loser read is offered to the delete/read
//! tiers; a tier may clear it only when it proves that none of the rows the winner removed could
//! have been seen by any of the loser's reads.
//!
//! Adding a tier is one new module plus one line in [`append_tiers`] or [`delete_read_tiers`].

mod data_skipping;
mod delete_read_refinement;
mod eligible;
mod mor_readd;
mod partition_filter;
mod relocation;
mod value_exact;

use crate::conflict_config::Switch;
use std::sync::OnceLock;

use async_trait::async_trait;
use datafusion::logical_expr::Expr;
use delta_rlc_protocol::actions::{Action, Add, Remove};
use delta_rlc_storage::TableStore;

use super::summary::WinningCommit;
use crate::conflict_config::ConflictConfig;
use crate::read_set::{ReadPredicate, ReadSet};
use crate::scan::{prune_files, prune_with_stats, FileStatsPruning, StatsSubset};
use crate::snapshot::Snapshot;

pub use eligible::eligible_filter;

pub struct TierContext<'a> {
    pub snapshot: &'a Snapshot,
    pub store: &'a TableStore,
    pub read_set: &'a ReadSet,
    pub staged: &'a [Action],
    pub config: &'a ConflictConfig,
    pub winner: &'a WinningCommit,
    /// What proofs found, to explain an abort (`conflict::abort_reason`); noting never clears.
    pub findings: &'a crate::conflict::abort_reason::Findings,
    /// The winner's added-file stats, parsed once and shared by every predicate and tier.
    winner_add_stats: OnceLock<FileStatsPruning<'a>>,
}

impl<'a> TierContext<'a> {
    pub fn new(
        snapshot: &'a Snapshot,
        store: &'a TableStore,
        read_set: &'a ReadSet,
        staged: &'a [Action],
        config: &'a ConflictConfig,
        winner: &'a WinningCommit,
        findings: &'a crate::conflict::abort_reason::Findings,
    ) -> Self {
        TierContext {
            snapshot,
            store,
            read_set,
            staged,
            config,
            winner,
            findings,
            winner_add_stats: OnceLock::new(),
        }
    }

    /// Which of `candidates` may hold a row satisfying `filter` (true = keep), from their stats and
    /// partition values. Uses the shared stats of the winner's adds when every candidate is one of
    /// them (by identity); otherwise parses the candidates' own stats. Any failure keeps all.
    pub fn prune_candidates(&self, candidates: &[&Add], filter: &Expr) -> Vec<bool> {
        let shared = self
            .winner_add_stats
            .get_or_init(|| FileStatsPruning::new(self.snapshot, &self.winner.adds));
        let keep = match shared.positions_of(candidates) {
            Some(pos) => prune_with_stats(self.snapshot, &StatsSubset::new(shared, pos), filter),
            None => {
                let files: Vec<Add> = candidates.iter().map(|a| (*a).clone()).collect();
                prune_files(self.snapshot, &files, filter)
            }
        };
        match keep {
            Ok(k) if k.len() == candidates.len() => k,
            _ => vec![true; candidates.len()],
        }
    }

    /// The loser only adds files: no removes, no DV re-adds (Case 3's scope).
    pub fn loser_is_append_only(&self) -> bool {
        self.staged.iter().all(|a| match a {
            Action::Remove(_) => false,
            Action::Add(x) => x.deletion_vector.is_none(),
            _ => true,
        })
    }
}

#[async_trait]
pub trait AppendTier: Send + Sync {
    /// Name used in events and conflict explanations.
    fn name(&self) -> &'static str;
    /// The switch that enables it; `None` = part of the OSS baseline (always on).
    fn switch(&self) -> Option<Switch>;
    /// For each candidate, true if this tier proves it cannot match `predicate`.
    async fn clear(
        &self,
        ctx: &TierContext<'_>,
        predicate: &ReadPredicate,
        candidates: &[&Add],
    ) -> Vec<bool>;
    /// True if the proof does not depend on the predicate (it shows the file holds no new rows at
    /// all), so it also holds for whole-table reads.
    fn predicate_independent(&self) -> bool {
        false
    }
}

#[async_trait]
pub trait DeleteReadTier: Send + Sync {
    fn name(&self) -> &'static str;
    fn switch(&self) -> Switch;
    /// For each winner remove of a file the loser read, true if this tier proves no conflict.
    async fn clear(&self, ctx: &TierContext<'_>, removes: &[&Remove]) -> Vec<bool>;
    /// True if the tier's proof holds for a whole-table read too (it does not depend on what the
    /// loser's predicates are), so the checker may run it for whole-table readers.
    fn refines_whole_table_reads(&self) -> bool {
        false
    }
}

/// The append-check tiers in order, cheapest first: the proofs from the log's own actions and
/// statistics, then those that read DVs or data. A candidate cleared by one tier needs no other
/// (each proof stands alone), so the order changes only the cost and the tier named: a lost race
/// on an object store reads a winner's DV only for the files its statistics could not clear (it
/// was a round trip per winner before the retry's put).
pub fn append_tiers() -> Vec<Box<dyn AppendTier>> {
    vec![
        Box::new(relocation::RelocationAdds),
        Box::new(partition_filter::PartitionFilter),
        Box::new(data_skipping::DataSkipping),
        Box::new(mor_readd::MergeOnReadReAdd),
        Box::new(value_exact::ValueExact),
    ]
}

/// The delete/read tiers in order.
pub fn delete_read_tiers() -> Vec<Box<dyn DeleteReadTier>> {
    vec![
        Box::new(relocation::RelocationRemoves),
        Box::new(delete_read_refinement::RemovedRowsRefinement),
    ]
}
