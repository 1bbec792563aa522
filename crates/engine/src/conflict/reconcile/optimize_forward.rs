//! Case 4 forward remap — the OPTIMIZE loses to a DV-writing DML. Switch `optimizeForward`.
//!
//! Proves: for every compacted source F the winner DV-updated, the winner's new deletions in F
//! (`dv_win \ dv_read`, where `dv_read` is the DV the compaction applied — on our tombstone) land at
//! known positions of our output: the source's live rows were written as one contiguous run at
//! `rowOffsetInTarget`, in order, so row i of F is output row `offset + liveRank(i)`.
//! Rewrite: those positions join the output's DV (a new DV file; stats widened), F's tombstone is
//! re-pointed at the winner's post-image (dataChange stays false), F is settled.
//! Why this is safe: the output then holds exactly F's rows minus everything the winner deleted —
//! the same rows a compaction run after the winner would produce.
//! Declines (all-or-nothing): DVs not writable; any winner removal of a source without a re-add
//! (full delete or rewrite); an untagged or multi-run source; `dv_read ⊄ dv_win`; a position out of
//! range (`liveRank ≥ liveCount`, or past the output's numRecords); any DV read/write error.
//! Event: `delta.optimize.conflictReconciliation.remapped`.

use crate::conflict_config::Switch;
use std::collections::BTreeMap;

use async_trait::async_trait;
use delta_rlc_protocol::actions::{Action, Add};
use roaring::RoaringTreemap;
use serde_json::json;

use super::compaction::{parse, read_time_dv, remap};
use super::{extend_dv, ReconcileContext, Reconciler, Rewrite};
use crate::conflict::checks::LoserState;
use crate::dv_io::{load_dv, load_file_dv};
use crate::error::Result;
use crate::events::Event;

pub struct OptimizeForward;

fn num_records(a: &Add) -> Option<u64> {
    a.num_records().and_then(|n| u64::try_from(n).ok())
}

async fn plan(
    ctx: &ReconcileContext<'_>,
    state: &LoserState,
) -> Result<Option<(Vec<Action>, Vec<String>, usize)>> {
    if !ctx.snapshot.deletion_vectors_enabled() {
        return Ok(None);
    }
    let loser_is_compaction = state.staged.iter().all(|a| match a {
        Action::Add(x) => !x.data_change,
        Action::Remove(x) => !x.data_change,
        _ => true,
    });
    if !loser_is_compaction {
        return Ok(None);
    }
    let our_sources: BTreeMap<&str, &delta_rlc_protocol::actions::Remove> = state
        .staged
        .iter()
        .filter_map(Action::as_remove)
        .map(|r| (r.path.as_str(), r))
        .collect();
    let touched: Vec<&delta_rlc_protocol::actions::Remove> = ctx
        .winner
        .removes
        .iter()
        .filter(|r| our_sources.contains_key(r.path.as_str()) && !ctx.resolved.contains(&r.path))
        .collect();
    if touched.is_empty() {
        return Ok(None);
    }
    let mut positions: BTreeMap<String, RoaringTreemap> = BTreeMap::new();
    let mut repoint: BTreeMap<String, Add> = BTreeMap::new();
    for wr in touched {
        let Some(ours) = our_sources.get(wr.path.as_str()) else {
            return Ok(None);
        };
        let Some(comp) = parse(ours, &ctx.snapshot.root) else {
            return Ok(None);
        };
        let Some(post) = ctx.winner.adds.iter().find(|a| a.path == wr.path) else {
            return Ok(None);
        };
        let n = num_records(post).or(Some(comp.physical_records));
        let dv_win = load_file_dv(ctx.store, &ctx.snapshot.root, post).await?;
        let dv_tomb = match &ours.deletion_vector {
            Some(d) => {
                load_dv(
                    ctx.store,
                    &ctx.snapshot.root,
                    d,
                    n.and_then(|x| i64::try_from(x).ok()),
                )
                .await?
            }
            None => RoaringTreemap::new(),
        };
        let dv_read = match read_time_dv(&comp, ours) {
            Some(d) => {
                load_dv(
                    ctx.store,
                    &ctx.snapshot.root,
                    d,
                    n.and_then(|x| i64::try_from(x).ok()),
                )
                .await?
            }
            None => RoaringTreemap::new(),
        };
        // Lineage: what the compaction applied ⊆ what our tombstone points at ⊆ the winner's post-image.
        if !dv_read.is_subset(&dv_tomb) || !dv_tomb.is_subset(&dv_win) {
            return Ok(None);
        }
        // Only deletions not yet reflected in our output (earlier winners were remapped already).
        let new_rows = &dv_win - &dv_tomb;
        let Some(pos) = remap(&comp, &dv_read, &new_rows) else {
            return Ok(None);
        };
        positions
            .entry(comp.output.clone())
            .or_default()
            .extend(pos);
        repoint.insert(wr.path.clone(), post.clone());
    }
    let now = ctx.env.clock.now_ms();
    let mut staged = Vec::with_capacity(state.staged.len());
    let mut outputs = 0usize;
    for a in &state.staged {
        match a {
            Action::Add(out) if positions.contains_key(&out.path) => {
                let Some(extra) = positions.get(&out.path) else {
                    return Ok(None);
                };
                let Some(n) = num_records(out) else {
                    return Ok(None);
                };
                if extra.max().is_some_and(|m| m >= n) {
                    return Ok(None);
                }
                let new = extend_dv(ctx, out, extra, out.data_change).await?;
                outputs += 1;
                staged.push(Action::Add(new));
            }
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
    if outputs != positions.len() {
        return Ok(None);
    }
    Ok(Some((staged, repoint.into_keys().collect(), outputs)))
}

#[async_trait]
impl Reconciler for OptimizeForward {
    fn name(&self) -> &'static str {
        "optimizeForward"
    }

    fn switch(&self) -> Switch {
        Switch::OptimizeForward
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
            crate::events::EventName::OptimizeRemapped,
            json!({"winningCommitVersion": ctx.winner.version, "resolvedSources": sources, "outputsRemapped": outputs, "winningOperation": ctx.winner.operation()}),
        );
        Ok(Some(Rewrite {
            staged,
            settled: sources,
            event,
        }))
    }
}
