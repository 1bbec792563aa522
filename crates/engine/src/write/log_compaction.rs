//! Writes a log compaction file (deltalake's `compact_logs`): the reconciled actions of commits
//! `start..=end` (`delta_rlc_protocol::log_compaction`) at `<start>.<end>.compacted.json`.
//!
//! Two stages of I/O: the commit files, fetched concurrently, then one put. The content is a pure
//! function of the commits, so a second writer of the same range writes the same file and the
//! overwriting put is safe; readers that do not use compactions never see it, and this engine's
//! own snapshots and conflict checks read the commit files (a winner's `commitInfo` is not in a
//! compaction).

use bytes::Bytes;
use delta_rlc_protocol::actions::{parse_commit, serialize_commit};
use delta_rlc_protocol::log_compaction::{compaction_path, reconcile};
use delta_rlc_protocol::log_path::{commit_file_name, LOG_DIR};
use delta_rlc_storage::{StorageErrorKind, TableStore};
use futures::{stream, StreamExt, TryStreamExt};

use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;

/// Commit files fetched at once.
const CONCURRENT_READS: usize = 16;

/// Writes the compaction of commits `start..=end` of the table `snapshot` belongs to (`end` at
/// most the snapshot's version); returns its path. Refused: `start >= end` (a compaction spans
/// two commits at least, as the spec's names require), a range past the snapshot, a commit file
/// gone from the log, a table this engine cannot write.
pub async fn write_log_compaction(
    store: &TableStore,
    snapshot: &Snapshot,
    start: u64,
    end: u64,
) -> Result<String> {
    snapshot.protocol.check_writable()?;
    if start >= end {
        return Err(EngineError::invalid(format!(
            "compact_logs: the starting version ({start}) must be below the ending version ({end})"
        )));
    }
    if end > snapshot.version {
        return Err(EngineError::invalid(format!(
            "compact_logs: version {end} does not exist (the table is at version {})",
            snapshot.version
        )));
    }
    let commits: Vec<(u64, Vec<_>)> = stream::iter((start..=end).map(|v| async move {
        let path = format!("{LOG_DIR}/{}", commit_file_name(v));
        let bytes = store.get(&path).await.map_err(|e| match e.kind {
            StorageErrorKind::NotFound => EngineError::invalid(format!(
                "compact_logs: commit {v} is no longer in the log (log cleanup removed it)"
            )),
            _ => e.into(),
        })?;
        Ok::<_, EngineError>((v, parse_commit(v, &bytes)?))
    }))
    .buffered(CONCURRENT_READS)
    .try_collect()
    .await?;
    let actions = reconcile(commits, |p| snapshot.root.resolve(p))?;
    let path = compaction_path(start, end);
    store
        .put(&path, Bytes::from(serialize_commit(&actions)?))
        .await?;
    Ok(path)
}
