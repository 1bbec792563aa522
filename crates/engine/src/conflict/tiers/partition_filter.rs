//! Partition filter (OSS baseline): a winner's file whose partition values cannot satisfy the
//! partition part of a read predicate cannot hold a row the read would have seen.
//!
//! Proof: every row of a file carries the file's partition values, so if the partition conjuncts are
//! false (or NULL) for those values they are false for every row, and so is the whole conjunction.
//! Declines (clears nothing) when the predicate has no partition part or evaluation fails.

use crate::conflict_config::Switch;
use async_trait::async_trait;
use delta_rlc_protocol::actions::Add;

use super::{AppendTier, TierContext};
use crate::read_set::ReadPredicate;

pub struct PartitionFilter;

#[async_trait]
impl AppendTier for PartitionFilter {
    fn name(&self) -> &'static str {
        "partitionFilter"
    }

    fn switch(&self) -> Option<Switch> {
        None
    }

    async fn clear(
        &self,
        ctx: &TierContext<'_>,
        predicate: &ReadPredicate,
        candidates: &[&Add],
    ) -> Vec<bool> {
        let Some(part) = &predicate.partition else {
            return vec![false; candidates.len()];
        };
        ctx.prune_candidates(candidates, part)
            .into_iter()
            .map(|keep| !keep)
            .collect()
    }
}
