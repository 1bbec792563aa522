//! Bringing a held latest snapshot up to date without a listing: read the commit files after its
//! version in turn until the first that is not there, and replay them onto its state.
//!
//! Why a missing version means "not written yet" and never "cleaned up" (the one thing a listing
//! would tell us that the probe cannot): the caller established the held version as the latest at
//! `latest_at_ms`, taken before the listing or probe that found no later commit, so every later
//! commit file was written at or after that time. Log cleanup removes only commit files older than
//! `delta.logRetentionDuration`. The caller probes only within `MAX_TRANSACTION_MS` of
//! `latest_at_ms` and only when the retention is at least `MIN_RETENTION_FLOOR_MS` (that limit plus
//! an hour for clock skew between writers), so no commit written since can have been removed.
//! A stale "latest" would be worse than slow: a commit at the missing version would succeed and
//! overwrite history; the conditions below are what rule it out, and any doubt declines.
//!
//! Declines (None, and the caller lists) when:
//! - the held snapshot has no commit hash, or its commit file is no longer the one it was built
//!   from (the table was deleted and re-created in place);
//! - the retention is below the floor or unparsable, or the held state is older than the limit;
//! - a probed commit changes the metadata or the protocol (it may shorten the retention the
//!   argument rests on; such commits are rare and a listing costs little then);
//! - a probed commit carries no timestamp of its own (the state would need the file's
//!   modification time, which a read does not give here);
//! - more than [`PROBE_LIMIT`] commits follow (a listing may find a newer checkpoint that is
//!   cheaper to load than many commits).
//!
//! The new snapshot keeps the held one's checkpoint version: it is that checkpoint plus commits.

use std::sync::Arc;

use delta_rlc_protocol::actions::{parse_commit, Action};
use delta_rlc_storage::{StorageErrorKind, TableStore};

use super::{commit_hash, commit_path, ReplayState, Snapshot};
use crate::error::Result;

/// The most commits one probe replays before it leaves the update to a listing.
pub const PROBE_LIMIT: u64 = 100;

/// Whether the log retention of `snapshot` lets a reader treat a missing commit file after a
/// version it knew as latest (within `MAX_TRANSACTION_MS`) as not written yet: at least
/// `MIN_RETENTION_FLOOR_MS`, or unset (the default, 30 days). Unparsable declines.
pub fn retention_allows_probe(snapshot: &Snapshot) -> bool {
    match snapshot
        .property(delta_rlc_protocol::table_properties::TableProperty::LogRetentionDuration)
    {
        None => true,
        Some(r) => crate::retention::parse_interval_ms(r)
            .is_some_and(|ms| ms >= crate::retention::MIN_RETENTION_FLOOR_MS),
    }
}

/// The latest snapshot built from `held` by reading the commits after it, or None when that is
/// not proven sound (module header). `held_age_ms` is the time since `held` was established as
/// the latest version.
pub async fn probe_latest(
    store: &TableStore,
    held: &Arc<Snapshot>,
    held_age_ms: i64,
) -> Result<Option<Arc<Snapshot>>> {
    if held_age_ms > crate::retention::MAX_TRANSACTION_MS || !retention_allows_probe(held) {
        return Ok(None);
    }
    let Some(hash) = held.commit_hash else {
        return Ok(None);
    };
    match store.get(&commit_path(held.version)).await {
        Ok(bytes) if commit_hash(&bytes) == hash => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind == StorageErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let mut newer: Vec<(u64, Vec<Action>, u64)> = Vec::new();
    let mut v = held.version + 1;
    loop {
        let bytes = match store.get(&commit_path(v)).await {
            Ok(b) => b,
            Err(e) if e.kind == StorageErrorKind::NotFound => break,
            Err(e) => return Err(e.into()),
        };
        if newer.len() as u64 >= PROBE_LIMIT {
            return Ok(None);
        }
        let actions = parse_commit(v, &bytes)?;
        let changes_table = actions
            .iter()
            .any(|a| matches!(a, Action::Metadata(_) | Action::Protocol(_)));
        let has_timestamp = actions.iter().any(|a| {
            matches!(a, Action::CommitInfo(ci)
                if ci.in_commit_timestamp.or(ci.timestamp).is_some())
        });
        if changes_table || !has_timestamp {
            return Ok(None);
        }
        newer.push((v, actions, commit_hash(&bytes)));
        v += 1;
    }
    let Some(&(latest, _, last_hash)) = newer.last() else {
        return Ok(Some(Arc::clone(held)));
    };
    let mut state = ReplayState::from_snapshot(held);
    for (v, actions, _) in newer {
        // The timestamp comes from the commit itself (checked above); the time given here is
        // never used.
        state.apply_commit(v, actions, held.timestamp_ms)?;
    }
    let mut snap = state.finish(latest, held.checkpoint_version)?;
    snap.commit_hash = Some(last_hash);
    snap.commit_file_id = None;
    Ok(Some(Arc::new(snap)))
}
