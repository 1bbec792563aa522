//! Case 2 — same-file deletion-vector merge (DML ⟂ DML). Switch `dvMerge`.
//!
//! Proves: on every file path both transactions DV-updated, the rows newly deleted by the loser
//! (`dv_cur \ dv_base`, where `dv_base` is the DV on the loser's remove — its read-time DV) are
//! disjoint from everything the winner's post-image deletes (`dv_win`), and `dv_base ⊆ dv_win`
//! (the winner's post-image descends from the state the loser read).
//! Rewrite: the loser's add(P) gets `dv_win ∪ dv_cur` (a new DV file), its remove(P) is re-pointed at
//! the winner's post-image, P is settled for the file-level checks and dropped from the read files.
//! Why this is safe: "loser after winner" is then a valid serial order — the loser deletes exactly
//! its own rows from the file the winner left; no row is deleted or updated twice. The winner's new
//! image files are never settled here: they still go through the append check (an UPDATE may move
//! a row *into* the loser's predicate). With several winners, each step uses the previous winner's
//! post-image as the base (the loser's re-pointed remove), so chains stay conservative.
//! Declines (all-or-nothing): DVs not writable on the table; a path the winner removed outright; a
//! path the loser only read; any overlap; `dv_base ⊄ dv_win`; any DV read or write error. Merged DV
//! files of failed attempts are orphans left to VACUUM.
//! Event: `delta.rowLevelConcurrency.deletionVectorsMerged` (winningCommitVersion, resolvedPaths,
//! winningOperation).

use crate::conflict_config::Switch;
use std::collections::BTreeMap;

use async_trait::async_trait;
use delta_rlc_protocol::actions::{Action, Add, Remove};
use delta_rlc_protocol::stats::FileStats;
use serde_json::json;

use super::{ReconcileContext, Reconciler, Rewrite};
use crate::conflict::checks::LoserState;
use crate::dv_io::{load_dv, load_file_dv, write_dv};
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

async fn merge(
    ctx: &ReconcileContext<'_>,
    state: &LoserState,
) -> Result<Option<(Vec<Action>, Vec<String>)>> {
    if !ctx.snapshot.deletion_vectors_enabled() {
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
    let now = ctx.env.clock.now_ms();
    let mut replacements: BTreeMap<String, (Option<Add>, Remove)> = BTreeMap::new();
    for p in &shared {
        let (Some((win_add, _)), Some((cur_add, cur_rm))) = (winner.get(p), loser.get(p)) else {
            return Ok(None);
        };
        let num_records = cur_add
            .num_records()
            .ok_or_else(|| EngineError::corrupt(format!("{p}: DV file without numRecords")))?;
        let dv_win = load_file_dv(ctx.store, &ctx.snapshot.root, win_add).await?;
        let dv_cur = load_file_dv(ctx.store, &ctx.snapshot.root, cur_add).await?;
        let dv_base = match &cur_rm.deletion_vector {
            Some(d) => load_dv(ctx.store, &ctx.snapshot.root, d, Some(num_records)).await?,
            None => roaring::RoaringTreemap::new(),
        };
        if !dv_base.is_subset(&dv_cur) || !dv_base.is_subset(&dv_win) {
            return Ok(None);
        }
        let mut overlap = &dv_win & &dv_cur;
        overlap -= &dv_base;
        if !overlap.is_empty() {
            return Ok(None);
        }
        let merged = &dv_win | &dv_cur;
        let new_remove = win_add.to_remove(now, true);
        let new_add = if merged.len() >= num_records as u64 {
            None
        } else {
            let desc = write_dv(ctx.store, ctx.env.ids.uuid(), &merged).await?;
            let mut a = (*cur_add).clone();
            a.deletion_vector = Some(desc);
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

    async fn reconcile(
        &self,
        ctx: &ReconcileContext<'_>,
        state: &LoserState,
    ) -> Result<Option<Rewrite>> {
        let Some((staged, paths)) = merge(ctx, state).await? else {
            return Ok(None);
        };
        let event = Event::new(
            "delta.rowLevelConcurrency.deletionVectorsMerged",
            json!({"winningCommitVersion": ctx.winner.version, "resolvedPaths": paths, "winningOperation": ctx.winner.operation()}),
        );
        Ok(Some(Rewrite {
            staged,
            settled: paths,
            event,
        }))
    }
}
