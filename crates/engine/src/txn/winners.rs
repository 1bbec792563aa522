//! The winners of a lost commit race on an object store, fetched without a listing: a window of
//! versions from the lost one read together (one round trip however many won), a full window
//! followed by one twice as wide, until a version is missing.

use bytes::Bytes;
use delta_rlc_protocol::log_path::{commit_file_name, LOG_DIR};
use delta_rlc_storage::StorageErrorKind;

use crate::error::{EngineError, Result};

/// The most commit versions one probe after a lost race fetches at once.
pub(super) const MAX_WINNER_WINDOW: u64 = 32;

/// The commits from `from` on, `window` versions fetched together, a full window followed by one
/// twice as wide, until a version is missing: the commits found, and the first version missing.
/// A version found missing may be written a moment later; the put at it is still arbitrated by
/// put-if-absent. Only for a log that may be probed (`Transaction::may_probe_commits`).
pub(super) async fn fetch_winners(
    store: &delta_rlc_storage::TableStore,
    from: u64,
    mut window: u64,
) -> Result<(std::collections::BTreeMap<u64, Bytes>, u64)> {
    let mut found = std::collections::BTreeMap::new();
    let mut next = from;
    loop {
        // In version order as they complete in order: the first missing version ends the probe
        // without waiting for the reads after it (the slowest of a window is a long tail).
        let reads = (next..next.saturating_add(window)).map(|v| async move {
            let path = format!("{LOG_DIR}/{}", commit_file_name(v));
            (v, store.get(&path).await)
        });
        let mut reads =
            futures::StreamExt::buffered(futures::stream::iter(reads), MAX_WINNER_WINDOW as usize);
        while let Some((v, read)) = futures::StreamExt::next(&mut reads).await {
            match read {
                Ok(bytes) => {
                    found.insert(v, bytes);
                }
                // Results come in version order: every version before `v` was found, and the
                // first gap ends the winners (versions are written in order).
                Err(e) if e.kind == StorageErrorKind::NotFound => return Ok((found, v)),
                Err(e) => return Err(EngineError::Storage(e)),
            }
        }
        next = next.saturating_add(window);
        window = window.saturating_mul(2).min(MAX_WINNER_WINDOW);
    }
}
