//! Reconcilers: each looks at (loser state, winning commit) and either rewrites the loser's staged
//! actions — returning the paths it settled, which the file-level checks then skip — or declines.
//! Declining is always safe: the standard checks then abort. A reconciler that fails midway
//! declines; it never half-applies (it builds the new state aside and swaps it in at the end).

mod compaction;
mod dv_merge;
mod optimize_forward;
mod optimize_reverse;
mod rowid_remap;

use crate::conflict_config::Switch;
use std::collections::BTreeSet;

use async_trait::async_trait;
use delta_rlc_storage::TableStore;

use super::checks::LoserState;
use super::summary::WinningCommit;
use super::Event;
use crate::conflict_config::ConflictConfig;
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

/// Swaps in a reconciler's rewrite: the new staged actions, the settled paths dropped from the
/// read files (they no longer stand for what the loser read), and the event.
pub(super) fn settle(
    state: &mut LoserState,
    staged: Vec<delta_rlc_protocol::actions::Action>,
    settled: Vec<String>,
    event: Event,
) -> Reconciled {
    state.staged = staged;
    state.read_set.files.retain(|(p, _)| !settled.contains(p));
    Reconciled {
        resolved_paths: settled,
        events: vec![event],
    }
}

/// `out` with its DV extended by `extra` (a new DV file) and its stats made wide.
pub(super) async fn extend_dv(
    ctx: &ReconcileContext<'_>,
    out: &delta_rlc_protocol::actions::Add,
    extra: &roaring::RoaringTreemap,
    data_change: bool,
) -> crate::error::Result<delta_rlc_protocol::actions::Add> {
    let mut dv = crate::dv_io::load_file_dv(ctx.store, &ctx.snapshot.root, out).await?;
    dv |= extra;
    let mut new = out.clone();
    new.data_change = data_change;
    new.deletion_vector = Some(crate::dv_io::write_dv(ctx.store, ctx.env.ids.uuid(), &dv).await?);
    if let Some(s) = &new.stats {
        let mut st = delta_rlc_protocol::stats::FileStats::parse(s)?;
        st.widen();
        new.stats = Some(st.to_json_string());
    }
    Ok(new)
}

#[async_trait]
pub trait Reconciler: Send + Sync {
    fn name(&self) -> &'static str;
    fn switch(&self) -> Switch;
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
