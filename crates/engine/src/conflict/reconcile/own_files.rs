//! Facts about the loser's own new files that a reconciler may compute once per transaction and
//! reuse for every winning commit. Sound because those files are written by this transaction under
//! fresh unique names and never rewritten: a fact read from a path's bytes holds for every attempt.
//! Anything that can change between winners — a file's deletion vector — is never cached here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Row ids by output: for each path, its rows' materialized row ids with their physical positions,
/// sorted by id (rows without a materialized id are left out: they carry fresh ids, not stable
/// ones). Holds at most [`MAX_CACHED_ROWS`] rows in all; beyond that callers read again.
#[derive(Debug, Default)]
pub struct OwnFileCache {
    row_ids: Mutex<HashMap<String, Arc<Vec<(i64, u64)>>>>,
}

/// 16 bytes a row: 256 MiB at most.
pub const MAX_CACHED_ROWS: usize = 16 << 20;

impl OwnFileCache {
    pub fn row_ids(&self, path: &str) -> Option<Arc<Vec<(i64, u64)>>> {
        self.row_ids.lock().ok()?.get(path).cloned()
    }

    /// Keeps `ids` for `path` when the cache has room (a full cache is simply not extended).
    pub fn keep_row_ids(&self, path: &str, ids: Arc<Vec<(i64, u64)>>) {
        let Ok(mut map) = self.row_ids.lock() else {
            return;
        };
        let held: usize = map.values().map(|v| v.len()).sum();
        if held.saturating_add(ids.len()) <= MAX_CACHED_ROWS {
            map.insert(path.to_string(), ids);
        }
    }
}
