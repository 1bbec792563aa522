//! A table's commit history: each version's `commitInfo`, newest first, read with the commit
//! files fetched concurrently (history is a list of independent GETs, not a chain). Versions whose
//! commit file is gone (expired by log cleanup) end the history.

use delta_rlc_protocol::actions::{parse_commit, Action, CommitInfo};
use delta_rlc_protocol::log_path::{commit_file_name, LOG_DIR};
use futures::{stream, StreamExt};

use crate::error::Result;
use delta_rlc_storage::TableStore;

/// Commit files fetched at once.
const CONCURRENT_READS: usize = 16;

/// (version, commitInfo) from `latest` down, at most `limit` entries; a commit without a
/// `commitInfo` gives an empty one.
pub async fn commit_infos(
    store: &TableStore,
    latest: u64,
    limit: Option<usize>,
) -> Result<Vec<(u64, CommitInfo)>> {
    let count = limit.map_or(latest.saturating_add(1), |l| {
        (l as u64).min(latest.saturating_add(1))
    });
    let versions = (0..count).map(|i| latest - i);
    let mut reads = stream::iter(versions.map(|v| {
        let store = store.clone();
        async move {
            let path = format!("{LOG_DIR}/{}", commit_file_name(v));
            (v, store.get(&path).await)
        }
    }))
    .buffered(CONCURRENT_READS);
    let mut out = Vec::new();
    while let Some((v, bytes)) = reads.next().await {
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) if e.kind == delta_rlc_storage::StorageErrorKind::NotFound => break,
            Err(e) => return Err(e.into()),
        };
        let info = parse_commit(v, &bytes)?
            .into_iter()
            .find_map(|a| match a {
                Action::CommitInfo(c) => Some(c),
                _ => None,
            })
            .unwrap_or_default();
        out.push((v, info));
    }
    Ok(out)
}
