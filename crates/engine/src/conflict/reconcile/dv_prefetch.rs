//! One read stage for the winners' deletion vectors the DV merge (`dv_merge`) will need.
//!
//! A lost race has a run of winners, checked one after another: the DV merge of each reads the
//! winner's post-image DV of every file both it and the loser DV-updated, so on an object store a
//! race with N such winners waited N round trips. This stage, run once per attempt over the
//! winners already fetched, reads those DVs together (at most [`DVS_IN_FLIGHT`] at once) into the
//! loser's [`DvCache`], where the merge finds them.
//!
//! Proves nothing and settles nothing: it only fills a cache of immutable values (a DV's unique id
//! names one stored bitmap; the entry is checked against the same row count the merge would use,
//! read through the same store and table root), so every decision is the merge's own, made on the
//! bitmaps a read would return. A failed read is dropped: the merge reads again and declines on
//! error, as without this stage.
//!
//! It reads only where the merge would: the `dvMerge` switch on, DVs on the table, a loser that
//! read neither the whole table nor through a query, a winner that re-added (remove + add with a
//! DV) a file the loser DV-updated with the same row count, and only for the winners before the
//! first that changes metadata (the merge judges later ones under that winner's table
//! configuration). It stops once [`PREFETCH_BYTES`] of decoded bitmaps are kept or the cache has
//! no room left: it never makes the cache start over (`DvCache::keep_if_room`), so nothing the
//! reconcilers read or wrote is pushed out. An id two actions describe differently (size,
//! cardinality) is left to the merge. The caller bounds its time to a part of the attempt's
//! budget, leaving the rest to the checks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use delta_rlc_protocol::actions::{parse_commit, Action};
use delta_rlc_protocol::dv::DvDescriptor;
use delta_rlc_protocol::table_path::TableRoot;
use delta_rlc_storage::TableStore;
use futures::StreamExt;
use roaring::RoaringTreemap;

use super::dv_cache::MAX_CACHED_DV_BYTES;
use super::DvCache;
use crate::conflict::checks::LoserState;
use crate::conflict::summary::WinningCommit;
use crate::conflict_config::{ConflictConfig, Switch};
use crate::snapshot::Snapshot;

/// DV reads in flight at once: small objects, bound by round trips, not by this machine's CPU.
const DVS_IN_FLIGHT: usize = 16;

/// Decoded DV bytes one stage keeps at most: a quarter of the DV cache.
const PREFETCH_BYTES: usize = MAX_CACHED_DV_BYTES / 4;

/// A file the loser DV-updated: its row count, the loser's new DV and its read-time DV (the
/// remove's), the two the merge reads beside the winner's.
struct Updated<'a> {
    num_records: i64,
    current: &'a DvDescriptor,
    base: Option<&'a DvDescriptor>,
}

/// The loser's DV-updated files (an add with a DV and a remove of the same path among its staged
/// actions); none when the merge would decline the loser's reads.
fn dv_updated(state: &LoserState) -> BTreeMap<&str, Updated<'_>> {
    if state.read_set.whole_table || state.read_set.query_reads {
        return BTreeMap::new();
    }
    let removed: BTreeMap<&str, Option<&DvDescriptor>> = state
        .staged
        .iter()
        .filter_map(Action::as_remove)
        .map(|r| (r.path.as_str(), r.deletion_vector.as_deref()))
        .collect();
    state
        .staged
        .iter()
        .filter_map(Action::as_add)
        .filter_map(|a| {
            let base = removed.get(a.path.as_str())?;
            let updated = Updated {
                num_records: a.num_records()?,
                current: a.deletion_vector.as_deref()?,
                base: *base,
            };
            Some((a.path.as_str(), updated))
        })
        .collect()
}

/// The DVs (descriptor, the loser's row count of the file) the merge will read for `winners`
/// and `cache` does not hold, in winner order, once per unique id, within [`PREFETCH_BYTES`]: on
/// each path both a winner and the loser DV-updated, the winner's post-image and the loser's
/// current and read-time DVs.
fn wanted<'a>(
    updated: &BTreeMap<&str, Updated<'a>>,
    winners: &'a [WinningCommit],
    cache: &DvCache,
) -> Vec<(&'a DvDescriptor, i64)> {
    let mut seen: BTreeMap<String, &DvDescriptor> = BTreeMap::new();
    let mut ambiguous: BTreeSet<String> = BTreeSet::new();
    let mut out: Vec<(&'a DvDescriptor, i64)> = Vec::new();
    for w in winners {
        let removed: BTreeSet<&str> = w.removes.iter().map(|r| r.path.as_str()).collect();
        for a in &w.adds {
            let (Some(dv), Some(u)) = (a.deletion_vector.as_deref(), updated.get(a.path.as_str()))
            else {
                continue;
            };
            let n = u.num_records;
            // The merge reads a re-added file only, and declines another row count.
            if !removed.contains(a.path.as_str()) || a.num_records() != Some(n) {
                continue;
            }
            for d in [Some(dv), Some(u.current), u.base].into_iter().flatten() {
                let id = d.unique_id();
                match seen.get(&id) {
                    Some(first) => {
                        let same = first.size_in_bytes == d.size_in_bytes
                            && first.cardinality == d.cardinality;
                        if !same {
                            ambiguous.insert(id);
                        }
                    }
                    None => {
                        seen.insert(id.clone(), d);
                        if cache.get(&id, n).is_none() {
                            out.push((d, n));
                        }
                    }
                }
            }
        }
    }
    out.into_iter()
        .filter(|(d, _)| !ambiguous.contains(&d.unique_id()))
        .collect()
}

/// Reads the DVs the merge will want from the winning commits `fetched` (version → commit file
/// bytes), [`DVS_IN_FLIGHT`] at a time, into `state.dvs`, each kept as it arrives. Paths and DVs
/// resolve against the table root of `state`'s view of `read_snapshot`, as the merge resolves
/// them. A commit that does not parse is skipped here; the checker reports it.
pub async fn prefetch_winner_dvs(
    store: &TableStore,
    config: &ConflictConfig,
    read_snapshot: &Snapshot,
    state: &LoserState,
    fetched: &BTreeMap<u64, Bytes>,
) {
    let view = state.view(read_snapshot);
    if !config.enabled(Switch::DvMerge) || !view.deletion_vectors_enabled() {
        return;
    }
    let updated = dv_updated(state);
    if updated.is_empty() || fetched.is_empty() {
        return;
    }
    let root = &view.root;
    let mut winners: Vec<WinningCommit> = Vec::new();
    for (v, bytes) in fetched {
        let Some(w) = parse_commit(*v, bytes)
            .ok()
            .and_then(|actions| WinningCommit::from_actions(*v, actions, root).ok())
        else {
            break;
        };
        let changes_metadata = w.metadata.is_some();
        winners.push(w);
        if changes_metadata {
            break;
        }
    }
    let cache = Arc::clone(&state.dvs);
    let reads: Vec<_> = wanted(&updated, &winners, &cache)
        .into_iter()
        .map(|(dv, n)| load_one(store, root, dv, n))
        .collect();
    let mut loaded = futures::stream::iter(reads).buffer_unordered(DVS_IN_FLIGHT);
    let mut kept = 0usize;
    while let Some((id, n, bitmap)) = loaded.next().await {
        let Some(bitmap) = bitmap else {
            continue;
        };
        kept = kept.saturating_add(bitmap.serialized_size());
        // Dropping the stream cancels the reads still in flight; they store nothing.
        if kept > PREFETCH_BYTES || !cache.keep_if_room(id, n, Arc::new(bitmap)) {
            break;
        }
    }
}

/// One DV read: its unique id, the row count it was checked against, the bitmap (None on error).
async fn load_one(
    store: &TableStore,
    root: &TableRoot,
    dv: &DvDescriptor,
    n: i64,
) -> (String, i64, Option<RoaringTreemap>) {
    let read = crate::dv_io::load_dv(store, root, dv, Some(n)).await;
    (dv.unique_id(), n, read.ok())
}
