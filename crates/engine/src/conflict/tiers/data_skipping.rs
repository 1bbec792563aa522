//! Tier 1 — conflict-time data skipping by stats (no I/O). Switch `dataSkipping`.
//!
//! Proves: the winner file's min/max/null-count stats (and partition values) make the read
//! predicate false for every row — using the same `PruningPredicate` machinery as scans.
//! Why skipping is safe: the pruning is sound for any bounds that contain the live rows; wide bounds
//! (DV'd files) only widen; missing or NULL stats keep the file; the predicate is first reduced to its
//! eligible over-approximation (volatile parts, subqueries → TRUE).
//! Declines: no eligible predicate (reads everything), any planning or evaluation error.
//! Event: `delta.conflictDetection.dataSkipping.filesSkipped` (candidateFiles, skippedFiles, tier).

use crate::conflict_config::Switch;
use async_trait::async_trait;
use delta_rlc_protocol::actions::Add;

use super::{eligible_filter, AppendTier, TierContext};
use crate::read_set::ReadPredicate;

pub struct DataSkipping;

#[async_trait]
impl AppendTier for DataSkipping {
    fn name(&self) -> &'static str {
        "dataSkipping"
    }

    fn switch(&self) -> Option<Switch> {
        Some(Switch::DataSkipping)
    }

    async fn clear(
        &self,
        ctx: &TierContext<'_>,
        predicate: &ReadPredicate,
        candidates: &[&Add],
    ) -> Vec<bool> {
        let none = vec![false; candidates.len()];
        let Some(full) = predicate.full() else {
            return none;
        };
        let Some(usable) = eligible_filter(&full) else {
            return none;
        };
        ctx.prune_candidates(candidates, &usable)
            .into_iter()
            .map(|keep| !keep)
            .collect()
    }
}
