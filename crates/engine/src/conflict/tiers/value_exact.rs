//! Tier 2 — value-exact existence check. Switch `valueExact`; bound `valueExact.maxBytes`.
//!
//! Proves: no live row of the winner's file (its DV applied, partition values filled in) satisfies
//! the read predicate — evaluated row by row, including a MERGE source-key marker (a semi-join of
//! the file's key tuples with the source keys).
//! Why skipping is safe: the evaluation is exact over exactly the rows a serial re-execution of the
//! loser after the winner would see in that file; NULL results count as "not read" only because SQL
//! filters drop them too.
//! Declines: candidates larger than the byte bound in total, any read or evaluation error (unknown
//! column, corrupt file, unreadable DV), a predicate with no condition at all. A matching row is
//! noted as a true overlap when the file holds only rows the winner wrote (not copied ones), an
//! error as a failed proof or an unusable predicate (`abort_reason`).

use crate::conflict_config::Switch;
use async_trait::async_trait;
use delta_rlc_protocol::actions::Add;

use super::{AppendTier, TierContext};
use crate::conflict::abort_reason::holds_only_written_rows;
use crate::conflict::rows::{any_row_matches, live_rows};
use crate::read_set::ReadPredicate;

pub struct ValueExact;

#[async_trait]
impl AppendTier for ValueExact {
    fn name(&self) -> &'static str {
        "valueExact"
    }

    fn switch(&self) -> Option<Switch> {
        Some(Switch::ValueExact)
    }

    async fn clear(
        &self,
        ctx: &TierContext<'_>,
        predicate: &ReadPredicate,
        candidates: &[&Add],
    ) -> Vec<bool> {
        let mut out = vec![false; candidates.len()];
        if predicate.full().is_none() && predicate.exact_keys.is_none() {
            return out;
        }
        let total: i64 = candidates.iter().map(|a| a.size).sum();
        if total < 0 || total as u64 > ctx.config.value_exact_max_bytes {
            return out;
        }
        for (i, add) in candidates.iter().enumerate() {
            // What is found is noted to explain an abort; only a clean pass clears the file.
            let Ok(batches) = live_rows(ctx.store, ctx.snapshot, add).await else {
                ctx.findings.failed(&add.path);
                continue;
            };
            let mut clear = true;
            for b in &batches {
                match any_row_matches(ctx.snapshot, predicate, b, None) {
                    Ok(false) => {}
                    Ok(true) => {
                        if holds_only_written_rows(ctx.winner, &add.path) {
                            ctx.findings.overlap(&add.path);
                        }
                        clear = false;
                        break;
                    }
                    Err(_) => {
                        ctx.findings.predicate_unusable(&add.path);
                        clear = false;
                        break;
                    }
                }
            }
            out[i] = clear;
        }
        out
    }
}
