//! Reconcilers: each looks at (loser state, winning commit) and either proposes a [`Rewrite`] of the
//! loser's staged actions — with the paths it settles, which the file-level checks then skip — or
//! declines (`Ok(None)`), or fails (`Err`, which the checker treats as a decline and reports).
//! Declining is always safe: the standard checks then abort. A reconciler only reads the loser's
//! state; the checker applies a rewrite whole ([`apply`]), so nothing can be half-applied.

mod compaction;
mod dv_cache;
mod dv_merge;
mod dv_prefetch;
mod optimize_forward;
mod optimize_reverse;
mod own_files;
mod rowid_remap;

pub use dv_cache::DvCache;
pub use dv_prefetch::prefetch_winner_dvs;
pub use own_files::OwnFileCache;

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
    /// What proofs found, to explain an abort (`conflict::abort_reason`); noting never settles.
    pub findings: &'a super::abort_reason::Findings,
    /// Where a reconciler's new files go: uploaded in the background, awaited before the commit
    /// ([`LoserState::uploads`]).
    pub uploads: &'a delta_rlc_storage::PendingUploads,
}

/// A reconciler's proposal: the loser's new staged actions, the winner paths it settles, and the
/// event that reports it.
pub struct Rewrite {
    pub staged: Vec<delta_rlc_protocol::actions::Action>,
    pub settled: Vec<String>,
    pub event: Event,
}

/// Applies a rewrite to the loser: the new staged actions, and the settled paths dropped from the
/// read files (they no longer stand for what the loser read). Returns the settled paths and the
/// event.
pub(super) fn apply(state: &mut LoserState, rewrite: Rewrite) -> (Vec<String>, Event) {
    state.staged = rewrite.staged;
    let settled = rewrite.settled;
    state.read_set.files.retain(|(p, _)| !settled.contains(p));
    (settled, rewrite.event)
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
    new.deletion_vector = Some(Box::new(
        start_dv_upload(ctx, std::slice::from_ref(&dv))
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| crate::error::EngineError::Internal("no DV descriptor".into()))?,
    ));
    if let Some(s) = &new.stats {
        let mut st = delta_rlc_protocol::stats::FileStats::parse(s)?;
        st.widen();
        new.stats = Some(st.to_json_string());
    }
    Ok(new)
}

/// Encodes `bitmaps` into one new DV file whose upload starts now and is awaited before the
/// commit (so a later winner's checks run while it uploads); their descriptors, in order. Where
/// the statement cannot serve the file to its own reads meanwhile (no statement cache, or no room
/// in it), it is written here, before returning: a later check must be able to read it. (Only
/// this file's put is awaited: an earlier upload's failure stays for the commit to see.)
pub(super) async fn start_dv_upload(
    ctx: &ReconcileContext<'_>,
    bitmaps: &[roaring::RoaringTreemap],
) -> crate::error::Result<Vec<delta_rlc_protocol::dv::DvDescriptor>> {
    let Some((rel, file, descriptors)) = crate::dv_io::encode_dvs(ctx.env.ids.uuid(), bitmaps)?
    else {
        return Ok(Vec::new());
    };
    ctx.uploads.start_or_put(ctx.store, rel, file).await?;
    Ok(descriptors)
}

#[async_trait]
pub trait Reconciler: Send + Sync {
    fn name(&self) -> &'static str;
    fn switch(&self) -> Switch;
    /// Whether this reconciler proves that its rewrite leaves every row of
    /// `ReadSet::kept_rows` on the paths it settles as the loser read it (the DV merge checks
    /// that the winner deleted none of them). A reconciler that does not say so never settles
    /// such a path: the checker declines its rewrite (the one-way default for a new reconciler).
    fn keeps_read_rows(&self) -> bool {
        false
    }
    /// A rewrite of `state` that settles some of the winner's paths, `Ok(None)` when it does not
    /// apply or cannot prove its case, `Err` when it failed (treated as a decline).
    async fn reconcile(
        &self,
        ctx: &ReconcileContext<'_>,
        state: &LoserState,
    ) -> crate::error::Result<Option<Rewrite>>;
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
