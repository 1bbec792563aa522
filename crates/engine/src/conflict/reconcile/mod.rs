//! Reconcilers: each looks at (loser state, winning commit) and either rewrites the loser's staged
//! actions — returning the paths it settled, which the file-level checks then skip — or declines.
//! Declining is always safe: the standard checks then abort. A reconciler that fails midway
//! declines; it never half-applies (it builds the new state aside and swaps it in at the end).

mod compaction;
mod dv_merge;
mod optimize_forward;
mod optimize_reverse;
mod rowid_remap;

use std::collections::BTreeSet;

use async_trait::async_trait;
use delta_rlc_storage::TableStore;

use super::checks::LoserState;
use super::config::ConflictConfig;
use super::summary::WinningCommit;
use super::Event;
use crate::env::Env;
use crate::snapshot::Snapshot;

pub struct ReconcileContext<'a> {
    pub snapshot: &'a Snapshot,
    pub store: &'a TableStore,
    pub config: &'a ConflictConfig,
    pub env: &'a Env,
    pub winner: &'a WinningCommit,
    /// Paths already settled by an earlier reconciler for this winner.
    pub resolved: &'a BTreeSet<String>,
}

pub struct Reconciled {
    pub resolved_paths: Vec<String>,
    pub events: Vec<Event>,
}

#[async_trait]
pub trait Reconciler: Send + Sync {
    fn name(&self) -> &'static str;
    fn switch(&self) -> &'static str;
    /// Rewrites `state` and returns what it settled, or returns None and leaves `state` untouched.
    async fn reconcile(
        &self,
        ctx: &ReconcileContext<'_>,
        state: &mut LoserState,
    ) -> Option<Reconciled>;
}

/// Reconcilers in order.
pub fn reconcilers() -> Vec<Box<dyn Reconciler>> {
    vec![
        Box::new(dv_merge::DvMerge),
        Box::new(optimize_forward::OptimizeForward),
        Box::new(optimize_reverse::OptimizeReverse),
        Box::new(rowid_remap::RowIdForward),
        Box::new(rowid_remap::RowIdReverse),
    ]
}
