//! Tiers of the append check. For each read predicate, each candidate file (a winner's added file)
//! is offered to the tiers in order; a tier may *clear* a file for that predicate only when it proves
//! that no live row of the file can satisfy the predicate. A file that no tier clears for some
//! predicate is a conflict. Adding a tier is one new module plus one line in [`append_tiers`].

mod partition_filter;

use delta_rlc_protocol::actions::Add;

use super::config::ConflictConfig;
use super::summary::WinningCommit;
use crate::snapshot::Snapshot;
use crate::txn::read_set::{ReadPredicate, ReadSet};

pub struct AppendContext<'a> {
    pub snapshot: &'a Snapshot,
    pub read_set: &'a ReadSet,
    pub config: &'a ConflictConfig,
    pub winner: &'a WinningCommit,
}

pub trait AppendTier: Send + Sync {
    /// Name used in events and conflict explanations.
    fn name(&self) -> &'static str;
    /// The switch that enables it; `None` = part of the OSS baseline (always on).
    fn switch(&self) -> Option<&'static str>;
    /// For each candidate, true if this tier proves it cannot match `predicate`.
    fn clear(
        &self,
        ctx: &AppendContext<'_>,
        predicate: &ReadPredicate,
        candidates: &[&Add],
    ) -> Vec<bool>;
}

/// The append-check tiers in order.
pub fn append_tiers() -> Vec<Box<dyn AppendTier>> {
    vec![Box::new(partition_filter::PartitionFilter)]
}
