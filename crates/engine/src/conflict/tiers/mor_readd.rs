//! Merge-on-read re-adds carry no new rows. Switch `deleteReadRefinement` (Case 1b).
//!
//! Proves: a winner add whose path the same winner also removed (a DV update: remove(F, dv0) +
//! add(F, dv1)) holds a subset of the rows already in F before the winner — no row in it is new.
//! Why skipping is safe: the rows the winner *removed* from F are judged by the delete/read check
//! (a loser that read F is checked there; a loser that did not read F pruned it at read time, and
//! removing rows cannot make a pruned file match). The re-add must not resurrect rows: its DV must
//! contain the removed tombstone's DV (both bitmaps are read and compared).
//! Declines: paths not removed by the winner, a re-add whose DV is not a superset, unreadable DVs.

use crate::conflict_config::Switch;
use async_trait::async_trait;
use delta_rlc_protocol::actions::Add;

use super::{AppendTier, TierContext};
use crate::dv_io::{load_dv, load_file_dv};
use crate::read_set::ReadPredicate;

pub struct MergeOnReadReAdd;

#[async_trait]
impl AppendTier for MergeOnReadReAdd {
    fn name(&self) -> &'static str {
        "mergeOnReadReAdd"
    }

    fn switch(&self) -> Option<Switch> {
        Some(Switch::DeleteReadRefinement)
    }

    fn predicate_independent(&self) -> bool {
        true
    }

    async fn clear(
        &self,
        ctx: &TierContext<'_>,
        _predicate: &ReadPredicate,
        candidates: &[&Add],
    ) -> Vec<bool> {
        let mut out = Vec::with_capacity(candidates.len());
        for a in candidates {
            let Some(r) = ctx.winner.removes.iter().find(|r| r.path == a.path) else {
                out.push(false);
                continue;
            };
            let verdict = async {
                let new_dv = load_file_dv(ctx.store, &ctx.snapshot.root, a).await?;
                let old_dv = match &r.deletion_vector {
                    Some(d) => load_dv(ctx.store, &ctx.snapshot.root, d, None).await?,
                    None => roaring::RoaringTreemap::new(),
                };
                Ok::<bool, crate::error::EngineError>(old_dv.is_subset(&new_dv))
            }
            .await;
            out.push(matches!(verdict, Ok(true)));
        }
        out
    }
}
