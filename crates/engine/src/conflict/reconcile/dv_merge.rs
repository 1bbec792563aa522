//! Case 2 — same-file deletion-vector merge (DML ⟂ DML). Switch `dvMerge`.
//!
//! Proves: on every file path both transactions DV-updated, the rows newly deleted by the loser
//! (`dv_cur \ dv_base`, where `dv_base` is the DV on the loser's remove — its read-time DV) are
//! disjoint from everything the winner's post-image deletes (`dv_win`), `dv_base ⊆ dv_win`
//! (the winner's post-image descends from the state the loser read), and the winner's new
//! deletions (`dv_win \ dv_base`) hold none of the rows the loser read and depends on without
//! changing them (`ReadSet::kept_rows`: a MERGE's matched rows no clause changed, whose existence
//! decided that it inserted nothing for their source rows).
//! Rewrite: the loser's add(P) gets `dv_win ∪ dv_cur` (all merged DVs of one winner in one new DV
//! file, uploading while later winners are checked; the commit waits for it before its put), its
//! remove(P) is re-pointed at
//! the winner's post-image, P is settled for the file-level checks and dropped from the read files.
//! Why this is safe: "loser after winner" is then a valid serial order — the loser deletes exactly
//! its own rows from the file the winner left; no row is deleted or updated twice. The winner's new
//! image files are never settled here: they still go through the append check (an UPDATE may move
//! a row *into* the loser's predicate). With several winners, each step uses the previous winner's
//! post-image as the base (the loser's re-pointed remove), so chains stay conservative.
//! Declines (all-or-nothing): DVs not writable on the table; a loser that read the whole table or
//! read it through a query besides its target scan (a MERGE source or subquery over the same
//! table: the proof covers only rows the loser's own target predicate decides one by one, and a
//! row the winner deleted may change what such a read computes); a path the winner removed
//! outright; a path the loser only read; any overlap, of changed rows or of a kept row the winner
//! deleted; `dv_base ⊄ dv_win`; any DV read or write error. Merged DV files of failed attempts are orphans left to VACUUM.
//! Event: `delta.rowLevelConcurrency.deletionVectorsMerged` (winningCommitVersion, resolvedPaths,
//! winningOperation).

use crate::conflict_config::Switch;
use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use delta_rlc_protocol::actions::{Action, Add, Remove};
use delta_rlc_protocol::dv::DvDescriptor;
use delta_rlc_protocol::stats::FileStats;
use futures::StreamExt;
use roaring::RoaringTreemap;
use serde_json::json;

use super::DvCache;
use super::{ReconcileContext, Reconciler, Rewrite};
use crate::conflict::checks::LoserState;
use crate::dv_io::load_dv;
use crate::error::{EngineError, Result};
use crate::events::Event;

pub struct DvMerge;

/// path → (add with DV, remove) for a commit's DV updates.
fn dv_updates<'a>(
    adds: impl Iterator<Item = &'a Add>,
    removes: &'a [&'a Remove],
) -> BTreeMap<String, (&'a Add, &'a Remove)> {
    let mut out = BTreeMap::new();
    for a in adds {
        if a.deletion_vector.is_none() {
            continue;
        }
        if let Some(r) = removes.iter().find(|r| r.path == a.path) {
            out.insert(a.path.clone(), (a, *r));
        }
    }
    out
}

/// The DV `dv` of a file of `num_records` rows (empty for none), from the transaction's cache or
/// read and kept there.
async fn cached_dv(
    ctx: &ReconcileContext<'_>,
    cache: &DvCache,
    path: &str,
    dv: Option<&DvDescriptor>,
    num_records: i64,
) -> Result<Arc<RoaringTreemap>> {
    let Some(dv) = dv else {
        return Ok(Arc::new(RoaringTreemap::new()));
    };
    let id = dv.unique_id();
    if let Some(hit) = cache.get(&id, num_records) {
        return Ok(hit);
    }
    let bitmap = load_dv(ctx.store, &ctx.snapshot.root, dv, Some(num_records))
        .await
        .map_err(|e| EngineError::corrupt(format!("deletion vector of {path}: {e}")))?;
    let bitmap = Arc::new(bitmap);
    cache.keep(id, num_records, Arc::clone(&bitmap));
    Ok(bitmap)
}

/// `dv_win ∪ dv_cur` and the file's numRecords when the loser's new deletions on `path` are
/// disjoint from the winner's post-image and `dv_base ⊆ dv_win ∩ dv_cur`; `None` otherwise.
async fn checked_merge(
    ctx: &ReconcileContext<'_>,
    cache: &DvCache,
    path: &str,
    win_add: &Add,
    cur_add: &Add,
    cur_rm: &Remove,
    kept: Option<&RoaringTreemap>,
) -> Result<Option<(RoaringTreemap, i64)>> {
    let num_records = cur_add
        .num_records()
        .ok_or_else(|| EngineError::corrupt(format!("{path}: DV file without numRecords")))?;
    // The winner's post-image is of the same file: it must state the same row count.
    if win_add.deletion_vector.is_some() && win_add.num_records() != Some(num_records) {
        return Ok(None);
    }
    let (dv_win, dv_cur, dv_base) = futures::try_join!(
        cached_dv(
            ctx,
            cache,
            path,
            win_add.deletion_vector.as_deref(),
            num_records
        ),
        cached_dv(
            ctx,
            cache,
            path,
            cur_add.deletion_vector.as_deref(),
            num_records
        ),
        cached_dv(
            ctx,
            cache,
            path,
            cur_rm.deletion_vector.as_deref(),
            num_records
        ),
    )?;
    let (dv_win, dv_cur, dv_base) = (dv_win.as_ref(), dv_cur.as_ref(), dv_base.as_ref());
    // The loser's own new deletions, a few rows where the DVs hold many: with `dv_base ⊆ dv_cur`
    // (checked by cardinality: |cur \ base| + |base| = |cur| exactly then), the overlap
    // `(win ∩ cur) \ base` is `win ∩ own`, and with `dv_base ⊆ dv_win` the merge `win ∪ cur` is
    // `win ∪ own`. Two passes over the large sets instead of five.
    let own = dv_cur - dv_base;
    if own.len().checked_add(dv_base.len()) != Some(dv_cur.len()) || !dv_base.is_subset(dv_win) {
        return Ok(None);
    }
    if !own.is_disjoint(dv_win) {
        // Both delete the same row: a true conflict, named in the abort.
        ctx.findings.overlap(path);
        return Ok(None);
    }
    // A row the loser read and depends on without changing it (a MERGE's matched row no clause
    // changed) that the winner newly deleted: re-run after the winner, the loser would act
    // otherwise (insert for that source row). A true conflict too.
    if let Some(kept) = kept {
        if !(dv_win - dv_base).is_disjoint(kept) {
            ctx.findings.overlap(path);
            return Ok(None);
        }
    }
    Ok(Some((dv_win | &own, num_records)))
}

async fn merge(
    ctx: &ReconcileContext<'_>,
    state: &LoserState,
) -> Result<Option<(Vec<Action>, Vec<String>)>> {
    if !ctx.snapshot.deletion_vectors_enabled()
        || state.read_set.whole_table
        || state.read_set.query_reads
    {
        return Ok(None);
    }
    let win_removes: Vec<&Remove> = ctx.winner.removes.iter().collect();
    let winner = dv_updates(ctx.winner.adds.iter(), &win_removes);
    let loser_removes: Vec<&Remove> = state.staged.iter().filter_map(Action::as_remove).collect();
    let loser = dv_updates(
        state.staged.iter().filter_map(Action::as_add),
        &loser_removes,
    );
    let shared: Vec<String> = loser
        .keys()
        .filter(|p| winner.contains_key(*p) && !ctx.resolved.contains(*p))
        .cloned()
        .collect();
    if shared.is_empty() {
        return Ok(None);
    }
    // Every shared path is checked before anything is written (all-or-nothing), its three DVs
    // loaded concurrently; the merged DVs then go into one new DV file, as a statement writes them.
    let mut pending = Vec::with_capacity(shared.len());
    for p in &shared {
        let (Some((win_add, _)), Some((cur_add, cur_rm))) = (winner.get(p), loser.get(p)) else {
            return Ok(None);
        };
        let kept = state.read_set.kept_rows.get(p.as_str());
        pending.push(checked_merge(
            ctx, &state.dvs, p, win_add, cur_add, cur_rm, kept,
        ));
    }
    let checks = futures::stream::iter(pending)
        .buffered(ctx.env.parallelism.max(1))
        .collect::<Vec<Result<Option<(RoaringTreemap, i64)>>>>()
        .await;
    // (path, whether the merged DV deletes every row); the partial DVs, in path order.
    let mut merged: Vec<(&String, bool)> = Vec::with_capacity(shared.len());
    let mut partial: Vec<RoaringTreemap> = Vec::with_capacity(shared.len());
    let mut partial_records: Vec<i64> = Vec::with_capacity(shared.len());
    for (p, checked) in shared.iter().zip(checks) {
        let Some((bitmap, records)) = checked? else {
            return Ok(None);
        };
        let num_records = u64::try_from(records)
            .map_err(|_| EngineError::corrupt(format!("{p}: negative numRecords")))?;
        let whole = bitmap.len() >= num_records;
        if !whole {
            partial.push(bitmap);
            partial_records.push(records);
        }
        merged.push((p, whole));
    }
    let written = super::start_dv_upload(ctx, &partial).await?;
    // The merged DVs are the loser's current DVs at the next winner.
    for ((bitmap, records), desc) in partial.into_iter().zip(&partial_records).zip(&written) {
        state.dvs.keep(desc.unique_id(), *records, Arc::new(bitmap));
    }
    let mut descriptors = written.into_iter();
    let now = ctx.env.clock.now_ms();
    let mut replacements: BTreeMap<String, (Option<Add>, Remove)> = BTreeMap::new();
    for (p, whole) in merged {
        let (Some((win_add, _)), Some((cur_add, _))) = (winner.get(p), loser.get(p)) else {
            return Ok(None);
        };
        let new_remove = win_add.to_remove(now, true);
        let new_add = if whole {
            None
        } else {
            let desc = descriptors
                .next()
                .ok_or_else(|| EngineError::Internal("fewer DV descriptors than DVs".into()))?;
            let mut a = (*cur_add).clone();
            a.deletion_vector = Some(Box::new(desc));
            a.data_change = true;
            if let Some(s) = &a.stats {
                let mut st = FileStats::parse(s)?;
                st.widen();
                a.stats = Some(st.to_json_string());
            }
            Some(a)
        };
        replacements.insert(p.clone(), (new_add, new_remove));
    }
    let mut staged = Vec::with_capacity(state.staged.len());
    for a in &state.staged {
        match a {
            Action::Add(x) if replacements.contains_key(&x.path) && x.deletion_vector.is_some() => {
                if let Some((Some(new_add), _)) = replacements.get(&x.path) {
                    staged.push(Action::Add(new_add.clone()));
                }
            }
            Action::Remove(x) if replacements.contains_key(&x.path) => {
                if let Some((_, new_rm)) = replacements.get(&x.path) {
                    staged.push(Action::Remove(new_rm.clone()));
                }
            }
            other => staged.push(other.clone()),
        }
    }
    Ok(Some((staged, shared)))
}

#[async_trait]
impl Reconciler for DvMerge {
    fn name(&self) -> &'static str {
        "dvMerge"
    }

    fn switch(&self) -> Switch {
        Switch::DvMerge
    }

    fn keeps_read_rows(&self) -> bool {
        true
    }

    async fn reconcile(
        &self,
        ctx: &ReconcileContext<'_>,
        state: &LoserState,
    ) -> Result<Option<Rewrite>> {
        let Some((staged, paths)) = merge(ctx, state).await? else {
            return Ok(None);
        };
        let event = Event::new(
            crate::events::EventName::DeletionVectorsMerged,
            json!({"winningCommitVersion": ctx.winner.version, "resolvedPaths": paths, "winningOperation": ctx.winner.operation()}),
        );
        Ok(Some(Rewrite {
            staged,
            settled: paths,
            event,
        }))
    }
}
