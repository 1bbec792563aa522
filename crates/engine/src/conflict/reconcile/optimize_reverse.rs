//! Case 4 reverse remap — a DV-writing DML loses to a pure compaction. Switch `optimizeReverse`.
//!
//! Proves: the winner only relocated rows (all its actions dataChange=false), every source the DML
//! changed is tagged with a single-run composition into one of the winner's outputs, and each of
//! the DML's new deletions in such a source F (`dv_l1 \ dv_l0`) is a row the compaction carried
//! over (not in the compaction's read DV `dv_o`), at output position `offset + liveRank(i)`
//! relative to `dv_o`.
//! Rewrite: the DML's remove/add pair on F is dropped; for each output O it re-adds O with O's DV ∪
//! the remapped positions (remove(O) + add(O), dataChange=true); its image files are untouched.
//! The tagged sources and the outputs their tags name are settled (pure relocation). A winner may
//! also hold untagged sources and outputs no tag names (an incremental clustering OPTIMIZE reorders
//! new files and purges clustered ones in one commit): the DML must not have changed those sources,
//! and they stay for the other checks (Case 3 relocation clears what the DML only read).
//! Why this is safe: after the rewrite the DML deletes exactly the same logical rows, now addressed
//! in the file that holds them; the compaction changed no data; nothing untagged is settled here.
//! Declines: DVs not writable; a winner with a dataChange=true action or no tagged source; a
//! source the DML changed that is untagged (ZORDER, engines that do not tag) or that the DML
//! removed outright (the H1 rule); a new deletion the compaction already saw; `dv_l0 ⊄ dv_l1` or
//! `dv_l0 ⊄ dv_o`; positions out of range; any DV error.
//! Event: `delta.optimize.conflictReconciliation.reverseRemapped`.

use crate::conflict_config::Switch;
use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use delta_rlc_protocol::actions::{Action, Add};
use roaring::RoaringTreemap;
use serde_json::json;

use super::compaction::{parse, read_time_dv, remap, Composition};
use super::{extend_dv, ReconcileContext, Reconciler, Rewrite};
use crate::conflict::checks::LoserState;
use crate::dv_io::{load_dv, load_file_dv};
use crate::error::Result;
use crate::events::Event;

pub struct OptimizeReverse;

fn n_records(a: &Add) -> Option<i64> {
    a.num_records()
}

async fn plan(
    ctx: &ReconcileContext<'_>,
    state: &LoserState,
) -> Result<Option<(Vec<Action>, Vec<String>, Vec<String>)>> {
    let w = ctx.winner;
    if !ctx.snapshot.deletion_vectors_enabled() || w.removes.is_empty() {
        return Ok(None);
    }
    // The winner must be a pure, fully tagged compaction.
    if w.adds.iter().any(|a| a.data_change) || w.removes.iter().any(|r| r.data_change) {
        return Ok(None);
    }
    let mut comps: BTreeMap<&str, Composition> = BTreeMap::new();
    let mut untagged: BTreeSet<&str> = BTreeSet::new();
    for r in &w.removes {
        match parse(r, &ctx.snapshot.root) {
            Some(c) => {
                if !w.adds.iter().any(|a| a.path == c.output) {
                    return Ok(None);
                }
                comps.insert(r.path.as_str(), c);
            }
            None => {
                untagged.insert(r.path.as_str());
            }
        }
    }
    if comps.is_empty() {
        return Ok(None);
    }
    // An untagged source's rows cannot be located in the outputs: the DML must not have changed it.
    let touches_untagged = state.staged.iter().any(|a| match a {
        Action::Add(x) => untagged.contains(x.path.as_str()),
        Action::Remove(x) => untagged.contains(x.path.as_str()),
        _ => false,
    });
    if touches_untagged {
        return Ok(None);
    }
    let referenced: BTreeSet<&str> = comps.values().map(|c| c.output.as_str()).collect();
    // The DML's actions on compacted sources: every one must be a DV update (H1).
    let loser_removes: Vec<&delta_rlc_protocol::actions::Remove> = state
        .staged
        .iter()
        .filter_map(Action::as_remove)
        .filter(|r| comps.contains_key(r.path.as_str()))
        .collect();
    let loser_adds_on_sources: Vec<&Add> = state
        .staged
        .iter()
        .filter_map(Action::as_add)
        .filter(|a| comps.contains_key(a.path.as_str()))
        .collect();
    if loser_removes.is_empty() {
        return Ok(None);
    }
    for a in &loser_adds_on_sources {
        if !loser_removes.iter().any(|r| r.path == a.path) {
            return Ok(None);
        }
    }
    let mut positions: BTreeMap<String, RoaringTreemap> = BTreeMap::new();
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    for lr in &loser_removes {
        let Some(la) = loser_adds_on_sources.iter().find(|a| a.path == lr.path) else {
            return Ok(None);
        };
        let (Some(comp), Some(wr)) = (
            comps.get(lr.path.as_str()),
            w.removes.iter().find(|r| r.path == lr.path),
        ) else {
            return Ok(None);
        };
        let n = n_records(la);
        let dv_l1 = load_file_dv(ctx.store, &ctx.snapshot.root, la).await?;
        let dv_l0 = match &lr.deletion_vector {
            Some(d) => load_dv(ctx.store, &ctx.snapshot.root, d, n).await?,
            None => RoaringTreemap::new(),
        };
        // dv_tomb: the source as the compaction's commit removed it; dv_o: the DV it applied when
        // writing the output (positions are relative to it).
        let dv_tomb = match &wr.deletion_vector {
            Some(d) => load_dv(ctx.store, &ctx.snapshot.root, d, n).await?,
            None => RoaringTreemap::new(),
        };
        let dv_o = match read_time_dv(comp, wr) {
            Some(d) => load_dv(ctx.store, &ctx.snapshot.root, d, n).await?,
            None => RoaringTreemap::new(),
        };
        if !dv_l0.is_subset(&dv_l1) || !dv_l0.is_subset(&dv_tomb) || !dv_o.is_subset(&dv_tomb) {
            return Ok(None);
        }
        let new_rows = &dv_l1 - &dv_l0;
        if !(&new_rows & &dv_tomb).is_empty() {
            return Ok(None);
        }
        let Some(pos) = remap(comp, &dv_o, &new_rows) else {
            return Ok(None);
        };
        positions
            .entry(comp.output.clone())
            .or_default()
            .extend(pos);
        dropped.insert(lr.path.clone());
    }
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
    for (out, pos) in &positions {
        let Some(wa) = w.adds.iter().find(|a| &a.path == out) else {
            return Ok(None);
        };
        let Some(n) = n_records(wa).and_then(|x| u64::try_from(x).ok()) else {
            return Ok(None);
        };
        if pos.max().is_some_and(|m| m >= n) {
            return Ok(None);
        }
        let new = extend_dv(ctx, wa, pos, true).await?;
        staged.push(Action::Remove(wa.to_remove(now, true)));
        staged.push(Action::Add(new));
    }
    let sources: Vec<String> = comps.keys().map(|s| s.to_string()).collect();
    let outputs: Vec<String> = referenced.iter().map(|s| s.to_string()).collect();
    Ok(Some((staged, sources, outputs)))
}

#[async_trait]
impl Reconciler for OptimizeReverse {
    fn name(&self) -> &'static str {
        "optimizeReverse"
    }

    fn switch(&self) -> Switch {
        Switch::OptimizeReverse
    }

    async fn reconcile(
        &self,
        ctx: &ReconcileContext<'_>,
        state: &LoserState,
    ) -> Result<Option<Rewrite>> {
        let Some((staged, sources, outputs)) = plan(ctx, state).await? else {
            return Ok(None);
        };
        let event = Event::new(
            crate::events::EventName::OptimizeReverseRemapped,
            json!({"winningCommitVersion": ctx.winner.version, "resolvedSources": sources, "outputs": outputs, "winningOperation": ctx.winner.operation()}),
        );
        let mut resolved = sources;
        resolved.extend(outputs);
        Ok(Some(Rewrite {
            staged,
            settled: resolved,
            event,
        }))
    }
}
