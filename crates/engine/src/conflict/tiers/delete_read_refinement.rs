//! Case 1b — delete/read refinement. Switch `deleteReadRefinement`.
//!
//! Proves: none of the rows the winner actually removed from a file the loser read satisfies any of
//! the loser's read predicates. Removed rows = the pre-image's live rows (the DV on the winner's
//! remove) minus the post-image's live rows (the DV on the winner's re-add of the same path; none
//! for a full removal). A DML only adds deletions, so the post-image DV contains the pre-image DV
//! (checked; a violation declines).
//! Why skipping is safe: the loser's reads are OR-ed predicates; if no removed row satisfies any of
//! them, re-running the loser after the winner reads exactly the same rows from this file.
//! Declines: whole-table readers, any read without a predicate, a removed file of a partitioned table
//! without partition values, any read/DV/evaluation error. A removed row a predicate matches is
//! noted as a true overlap (`abort_reason`) when it was deleted, not possibly moved: a DV update,
//! or a winner that added no file.

use crate::conflict_config::Switch;
use async_trait::async_trait;
use delta_rlc_protocol::actions::{Add, Remove};

use super::{DeleteReadTier, TierContext};
use crate::conflict::rows::{any_row_matches, removed_rows};
use crate::dv_io::load_file_dv;
use crate::error::Result;

pub struct RemovedRowsRefinement;

fn pre_image(r: &Remove) -> Add {
    Add {
        path: r.path.clone(),
        partition_values: r.partition_values.clone().unwrap_or_default(),
        size: r.size.unwrap_or(0),
        modification_time: 0,
        data_change: false,
        stats: r.stats.clone(),
        tags: None,
        deletion_vector: r.deletion_vector.clone(),
        base_row_id: r.base_row_id,
        default_row_commit_version: r.default_row_commit_version,
        clustering_provider: None,
        extra: Default::default(),
    }
}

async fn no_removed_row_was_read(ctx: &TierContext<'_>, r: &Remove) -> Result<bool> {
    let partitioned = !ctx.snapshot.metadata.partition_columns.is_empty();
    if partitioned && r.partition_values.is_none() {
        return Ok(false);
    }
    let mut pre = pre_image(r);
    if pre.stats.is_none() {
        // DV validation needs numRecords; take it from the read snapshot's copy of the file.
        if let Some(f) = ctx.snapshot.file(&r.path) {
            pre.stats = f.stats.clone();
        }
    }
    let post = ctx.winner.adds.iter().find(|a| a.path == r.path);
    let post_dv = match post {
        Some(a) => Some(load_file_dv(ctx.store, &ctx.snapshot.root, a).await?),
        None => None,
    };
    let batches = removed_rows(ctx.store, ctx.snapshot, &pre, post_dv.as_ref()).await?;
    for pred in &ctx.read_set.predicates {
        if pred.full().is_none() && pred.exact_keys.is_none() {
            return Ok(false);
        }
        for (b, sel) in &batches {
            let matched = any_row_matches(ctx.snapshot, pred, b, Some(sel)).inspect_err(|_| {
                ctx.findings.predicate_unusable(&r.path);
            })?;
            if matched {
                // The removed rows are exactly the deleted ones when the winner re-added the file
                // with a DV, or added nothing at all; a rewrite may have copied them elsewhere.
                if post.is_some() || ctx.winner.adds.is_empty() {
                    ctx.findings.overlap(&r.path);
                }
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[async_trait]
impl DeleteReadTier for RemovedRowsRefinement {
    fn name(&self) -> &'static str {
        "deleteReadRefinement"
    }

    fn switch(&self) -> Switch {
        Switch::DeleteReadRefinement
    }

    async fn clear(&self, ctx: &TierContext<'_>, removes: &[&Remove]) -> Vec<bool> {
        if ctx.read_set.whole_table || ctx.read_set.predicates.is_empty() {
            return vec![false; removes.len()];
        }
        let mut out = Vec::with_capacity(removes.len());
        for r in removes {
            let verdict = no_removed_row_was_read(ctx, r).await;
            if verdict.is_err() {
                ctx.findings.failed(&r.path);
            }
            out.push(matches!(verdict, Ok(true)));
        }
        out
    }
}
