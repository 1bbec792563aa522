//! Case 5 — reclustering (ZORDER / clustering OPTIMIZE) ⟂ DV-writing DML through row tracking, in
//! both directions. Switch `rowIdRemap`. Also a second path for compactions without composition
//! tags (it needs no tags, only stable row ids).
//!
//! Proves: each newly deleted row of a rewritten source F has a stable row id (materialized column,
//! else `baseRowId + physical index`), and that id occurs exactly once among the live rows of the
//! rewrite's outputs, whose materialized row-id column records the ids they carry. Deleting that
//! position deletes exactly that logical row.
//! Forward (the OPTIMIZE loses): the winner's new deletions in F (`dv_win \ dv_tomb`) are located in
//! our outputs; they join the outputs' DVs; F's tombstone is re-pointed at the winner's post-image.
//! When the winner removed F outright with `dataChange=true` (a DELETE of all its live rows, or an
//! UPDATE that moved them all to new files under the same ids) and saw the same live rows
//! (its remove's DV = our tombstone's), every row we copied from F is located and deleted from
//! our outputs and our tombstone for F is dropped: the serial order is the winner, then a
//! compaction without F.
//! Reverse (the DML loses): the DML's new deletions in F (`dv_l1 \ dv_l0`) are located in the
//! winner's outputs; the DML drops its pair on F and re-adds each affected output with its DV
//! extended (dataChange=true); every winner source and output is settled.
//! Declines: row tracking not enabled (no materialized column names); a winner that is not a pure
//! relocation (reverse) or a loser that is not one (forward); any id missing or found twice; a
//! new deletion the rewrite already dropped; a bare full-file removal of a source (H1) in reverse,
//! or in forward by a `dataChange=false` winner or one that saw other live rows; any error.
//! Events: `delta.rowTracking.conflictReconciliation.remapped` / `.reverseRemapped`.

use crate::conflict_config::Switch;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{Array, Int64Array, UInt64Array};
use arrow::datatypes::{DataType, Field};
use async_trait::async_trait;
use delta_rlc_protocol::actions::{Action, Add, Remove};
use roaring::RoaringTreemap;
use serde_json::json;

use super::{extend_dv, OwnFileCache, ReconcileContext, Reconciler, Rewrite};
use crate::conflict::checks::LoserState;
use crate::dv_io::{load_dv, load_file_dv};
use crate::error::{EngineError, Result};
use crate::events::Event;
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::{read_file, FileReadOptions, ROW_INDEX_COLUMN};
use crate::snapshot::Snapshot;

fn all_data_change_false<'a>(
    adds: impl Iterator<Item = &'a Add>,
    removes: impl Iterator<Item = &'a Remove>,
) -> bool {
    let mut adds = adds.peekable();
    let mut removes = removes.peekable();
    (adds.peek().is_some() || removes.peek().is_some())
        && adds.all(|a| !a.data_change)
        && removes.all(|r| !r.data_change)
}

/// Stable row ids of the given physical rows of `file` (DV not applied).
async fn ids_of_rows(
    ctx: &ReconcileContext<'_>,
    file: &Add,
    rows: &RoaringTreemap,
) -> Result<Vec<i64>> {
    let (id_col, ver_col) = row_tracking_columns(ctx.snapshot)
        .ok_or_else(|| EngineError::Internal("no row tracking".into()))?;
    let opts = FileReadOptions {
        apply_dv: false,
        with_row_index: true,
        extra_columns: vec![
            Field::new(&id_col, DataType::Int64, true),
            Field::new(&ver_col, DataType::Int64, true),
        ],
    };
    let mut out = Vec::with_capacity(rows.len() as usize);
    for b in read_file(ctx.store, ctx.snapshot, file, &opts).await? {
        let b = stabilize_row_tracking(ctx.snapshot, file, &b, false)?;
        let idx = b
            .column_by_name(ROW_INDEX_COLUMN)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>().cloned());
        let ids = b
            .column_by_name(&id_col)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>().cloned());
        let (Some(idx), Some(ids)) = (idx, ids) else {
            return Err(EngineError::Internal("row ids missing".into()));
        };
        for i in 0..idx.len() {
            if rows.contains(idx.value(i)) {
                if !ids.is_valid(i) {
                    return Err(EngineError::corrupt("row without a row id"));
                }
                out.push(ids.value(i));
            }
        }
    }
    if out.len() as u64 != rows.len() {
        return Err(EngineError::corrupt(format!(
            "{}: rows to remap are not in the file",
            file.path
        )));
    }
    Ok(out)
}

/// The materialized row ids of `out` with their physical positions, sorted by id (rows without
/// one carry fresh ids, not the sources' stable ids, and are left out); `None` when the columns
/// are missing.
async fn row_ids_of_output(
    ctx: &ReconcileContext<'_>,
    snapshot: &Snapshot,
    out: &Add,
    id_col: &str,
) -> Result<Option<Vec<(i64, u64)>>> {
    let opts = FileReadOptions {
        apply_dv: false,
        with_row_index: true,
        extra_columns: vec![Field::new(id_col, DataType::Int64, true)],
    };
    let mut rows = Vec::new();
    for b in read_file(ctx.store, snapshot, out, &opts).await? {
        let idx = b
            .column_by_name(ROW_INDEX_COLUMN)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>().cloned());
        let ids = b
            .column_by_name(id_col)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>().cloned());
        let (Some(idx), Some(ids)) = (idx, ids) else {
            return Ok(None);
        };
        rows.extend(
            (0..idx.len())
                .filter(|i| ids.is_valid(*i))
                .map(|i| (ids.value(i), idx.value(i))),
        );
    }
    rows.sort_unstable();
    Ok(Some(rows))
}

/// Position of every wanted id among the *live* rows of `outputs`; each must occur exactly once.
/// With `cache` (the outputs are the loser's own files), each output's ids are read once per
/// transaction; its DV, which winners may have extended, is read every time.
async fn locate(
    ctx: &ReconcileContext<'_>,
    snapshot: &Snapshot,
    outputs: &[&Add],
    wanted: &[i64],
    cache: Option<&OwnFileCache>,
) -> Result<Option<BTreeMap<String, RoaringTreemap>>> {
    let Some((id_col, _)) = row_tracking_columns(snapshot) else {
        return Ok(None);
    };
    let want: BTreeSet<i64> = wanted.iter().copied().collect();
    if want.len() != wanted.len() {
        return Ok(None);
    }
    let mut found: HashMap<i64, (String, u64)> = HashMap::new();
    let mut dup = false;
    for out in outputs {
        let ids = match cache.and_then(|c| c.row_ids(&out.path)) {
            Some(ids) => ids,
            None => {
                let Some(ids) = row_ids_of_output(ctx, snapshot, out, &id_col).await? else {
                    return Ok(None);
                };
                let ids = Arc::new(ids);
                if let Some(c) = cache {
                    c.keep_row_ids(&out.path, Arc::clone(&ids));
                }
                ids
            }
        };
        let mut dv: Option<RoaringTreemap> = None;
        for &id in &want {
            let from = ids.partition_point(|(x, _)| *x < id);
            for &(_, pos) in ids
                .get(from..)
                .unwrap_or_default()
                .iter()
                .take_while(|(x, _)| *x == id)
            {
                if dv.is_none() {
                    dv = Some(load_file_dv(ctx.store, &snapshot.root, out).await?);
                }
                if dv.as_ref().is_some_and(|d| d.contains(pos)) {
                    continue;
                }
                if found.insert(id, (out.path.clone(), pos)).is_some() {
                    dup = true;
                }
            }
        }
    }
    if dup || found.len() != want.len() {
        return Ok(None);
    }
    let mut by_output: BTreeMap<String, RoaringTreemap> = BTreeMap::new();
    for (_, (path, pos)) in found {
        by_output.entry(path).or_default().insert(pos);
    }
    Ok(Some(by_output))
}

async fn dv_of(
    ctx: &ReconcileContext<'_>,
    d: Option<&delta_rlc_protocol::DvDescriptor>,
) -> Result<RoaringTreemap> {
    match d {
        Some(d) => load_dv(ctx.store, &ctx.snapshot.root, d, None).await,
        None => Ok(RoaringTreemap::new()),
    }
}

/// The stable ids of the rows of source `wr.path` that our compaction copied — every row not in
/// our tombstone's DV — when the winner deleted them all: `wr` is a `dataChange=true` remove with
/// no re-add (a DELETE of every live row, or an UPDATE that rewrote them into new files, which
/// keep their ids), and its DV is exactly our tombstone's (both saw the same live rows). Deleting
/// those ids from our outputs gives "the winner, then a compaction without that source". `None`
/// (decline) for a `dataChange=false` remove (a concurrent compaction moved the rows: they are
/// not deleted), a differing DV, or a source not in the snapshot we read.
async fn copied_rows_of_removed_source(
    ctx: &ReconcileContext<'_>,
    wr: &Remove,
    dv_tomb: &RoaringTreemap,
) -> Result<Option<Vec<i64>>> {
    if !wr.data_change {
        return Ok(None);
    }
    let Some(source) = ctx.snapshot.files.iter().find(|a| a.path == wr.path) else {
        return Ok(None);
    };
    let Some(num_records) = source.num_records().and_then(|n| u64::try_from(n).ok()) else {
        return Ok(None);
    };
    if dv_of(ctx, wr.deletion_vector.as_deref()).await? != *dv_tomb {
        return Ok(None);
    }
    let mut copied = RoaringTreemap::new();
    copied.insert_range(0..num_records);
    copied -= dv_tomb;
    Ok(Some(ids_of_rows(ctx, source, &copied).await?))
}

pub struct RowIdForward;

async fn forward(
    ctx: &ReconcileContext<'_>,
    state: &LoserState,
) -> Result<Option<(Vec<Action>, Vec<String>)>> {
    if !ctx.snapshot.deletion_vectors_enabled() || row_tracking_columns(ctx.snapshot).is_none() {
        return Ok(None);
    }
    let adds: Vec<&Add> = state.staged.iter().filter_map(Action::as_add).collect();
    let removes: Vec<&Remove> = state.staged.iter().filter_map(Action::as_remove).collect();
    if !all_data_change_false(adds.iter().copied(), removes.iter().copied()) || adds.is_empty() {
        return Ok(None);
    }
    let touched: Vec<&Remove> = ctx
        .winner
        .removes
        .iter()
        .filter(|r| removes.iter().any(|o| o.path == r.path) && !ctx.resolved.contains(&r.path))
        .collect();
    if touched.is_empty() {
        return Ok(None);
    }
    let mut wanted = Vec::new();
    let mut repoint: BTreeMap<String, Add> = BTreeMap::new();
    // Sources the winner removed outright: our tombstones for them are dropped (theirs stands).
    let mut gone: BTreeSet<String> = BTreeSet::new();
    for wr in touched {
        let Some(ours) = removes.iter().find(|r| r.path == wr.path) else {
            return Ok(None);
        };
        let dv_tomb = dv_of(ctx, ours.deletion_vector.as_deref()).await?;
        let Some(post) = ctx.winner.adds.iter().find(|a| a.path == wr.path) else {
            let Some(ids) = copied_rows_of_removed_source(ctx, wr, &dv_tomb).await? else {
                return Ok(None);
            };
            wanted.extend(ids);
            gone.insert(wr.path.clone());
            continue;
        };
        let dv_win = load_file_dv(ctx.store, &ctx.snapshot.root, post).await?;
        if !dv_tomb.is_subset(&dv_win) {
            return Ok(None);
        }
        let new_rows = &dv_win - &dv_tomb;
        wanted.extend(ids_of_rows(ctx, post, &new_rows).await?);
        repoint.insert(wr.path.clone(), post.clone());
    }
    let Some(positions) = locate(ctx, ctx.snapshot, &adds, &wanted, Some(&state.own_files)).await?
    else {
        return Ok(None);
    };
    let now = ctx.env.clock.now_ms();
    let mut staged = Vec::with_capacity(state.staged.len());
    for a in &state.staged {
        match a {
            Action::Add(out) if positions.contains_key(&out.path) => {
                let Some(extra) = positions.get(&out.path) else {
                    return Ok(None);
                };
                let extended = extend_dv(ctx, out, extra, false).await?;
                let deleted = extended
                    .deletion_vector
                    .as_ref()
                    .map_or(0, |d| d.cardinality);
                // An output left without a live row (it held only rows of removed sources) is
                // not added at all.
                if extended.num_records().is_none_or(|n| deleted < n) {
                    staged.push(Action::Add(extended));
                }
            }
            Action::Remove(r) if gone.contains(&r.path) => {}
            Action::Remove(r) if repoint.contains_key(&r.path) => {
                let Some(post) = repoint.get(&r.path) else {
                    return Ok(None);
                };
                let mut nr = post.to_remove(now, false);
                nr.tags = r.tags.clone();
                nr.stats = None;
                staged.push(Action::Remove(nr));
            }
            other => staged.push(other.clone()),
        }
    }
    let mut settled: Vec<String> = repoint.into_keys().collect();
    settled.extend(gone);
    Ok(Some((staged, settled)))
}

#[async_trait]
impl Reconciler for RowIdForward {
    fn name(&self) -> &'static str {
        "rowIdRemapForward"
    }

    fn switch(&self) -> Switch {
        Switch::RowIdRemap
    }

    async fn reconcile(
        &self,
        ctx: &ReconcileContext<'_>,
        state: &LoserState,
    ) -> Result<Option<Rewrite>> {
        let Some((staged, sources)) = forward(ctx, state).await? else {
            return Ok(None);
        };
        let event = Event::new(
            crate::events::EventName::RowIdRemapped,
            json!({"winningCommitVersion": ctx.winner.version, "resolvedSources": sources, "winningOperation": ctx.winner.operation()}),
        );
        Ok(Some(Rewrite {
            staged,
            settled: sources,
            event,
        }))
    }
}

pub struct RowIdReverse;

async fn reverse(
    ctx: &ReconcileContext<'_>,
    state: &LoserState,
) -> Result<Option<(Vec<Action>, Vec<String>)>> {
    let w = ctx.winner;
    if !ctx.snapshot.deletion_vectors_enabled() || row_tracking_columns(ctx.snapshot).is_none() {
        return Ok(None);
    }
    if !all_data_change_false(w.adds.iter(), w.removes.iter()) || w.adds.is_empty() {
        return Ok(None);
    }
    let sources: BTreeSet<&str> = w.removes.iter().map(|r| r.path.as_str()).collect();
    let lr: Vec<&Remove> = state
        .staged
        .iter()
        .filter_map(Action::as_remove)
        .filter(|r| sources.contains(r.path.as_str()))
        .collect();
    let la: Vec<&Add> = state
        .staged
        .iter()
        .filter_map(Action::as_add)
        .filter(|a| sources.contains(a.path.as_str()))
        .collect();
    if lr.is_empty() || la.iter().any(|a| !lr.iter().any(|r| r.path == a.path)) {
        return Ok(None);
    }
    let mut wanted = Vec::new();
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    for r in &lr {
        // H1: a bare full-file removal of a rewritten source cannot be remapped.
        let Some(a) = la.iter().find(|a| a.path == r.path) else {
            return Ok(None);
        };
        let Some(wr) = w.removes.iter().find(|x| x.path == r.path) else {
            return Ok(None);
        };
        let dv_l1 = load_file_dv(ctx.store, &ctx.snapshot.root, a).await?;
        let dv_l0 = dv_of(ctx, r.deletion_vector.as_deref()).await?;
        let dv_tomb = dv_of(ctx, wr.deletion_vector.as_deref()).await?;
        if !dv_l0.is_subset(&dv_l1) || !dv_l0.is_subset(&dv_tomb) {
            return Ok(None);
        }
        let new_rows = &dv_l1 - &dv_l0;
        if !(&new_rows & &dv_tomb).is_empty() {
            return Ok(None);
        }
        wanted.extend(ids_of_rows(ctx, a, &new_rows).await?);
        dropped.insert(r.path.clone());
    }
    let outputs: Vec<&Add> = w.adds.iter().collect();
    let Some(positions) = locate(ctx, ctx.snapshot, &outputs, &wanted, None).await? else {
        return Ok(None);
    };
    let now = ctx.env.clock.now_ms();
    let mut staged: Vec<Action> = state
        .staged
        .iter()
        .filter(|a| match a {
            Action::Add(x) => !dropped.contains(&x.path),
            Action::Remove(x) => !dropped.contains(&x.path),
            _ => true,
        })
        .cloned()
        .collect();
    for (path, extra) in &positions {
        let Some(out) = w.adds.iter().find(|a| &a.path == path) else {
            return Ok(None);
        };
        staged.push(Action::Remove(out.to_remove(now, true)));
        staged.push(Action::Add(extend_dv(ctx, out, extra, true).await?));
    }
    let mut settled: Vec<String> = w.removes.iter().map(|r| r.path.clone()).collect();
    settled.extend(w.adds.iter().map(|a| a.path.clone()));
    Ok(Some((staged, settled)))
}

#[async_trait]
impl Reconciler for RowIdReverse {
    fn name(&self) -> &'static str {
        "rowIdRemapReverse"
    }

    fn switch(&self) -> Switch {
        Switch::RowIdRemap
    }

    async fn reconcile(
        &self,
        ctx: &ReconcileContext<'_>,
        state: &LoserState,
    ) -> Result<Option<Rewrite>> {
        let Some((staged, settled)) = reverse(ctx, state).await? else {
            return Ok(None);
        };
        let event = Event::new(
            crate::events::EventName::RowIdReverseRemapped,
            json!({"winningCommitVersion": ctx.winner.version, "settledPaths": settled.len(), "winningOperation": ctx.winner.operation()}),
        );
        Ok(Some(Rewrite {
            staged,
            settled,
            event,
        }))
    }
}
