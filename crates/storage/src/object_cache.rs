//! Objects one statement has already read, kept for the rest of the statement so that nothing is
//! fetched twice (a DML's matching pass and its rewrite pass read the same data file; a MERGE's
//! key probe and its join read the same files; a commit retry reads the same winners).
//!
//! Only immutable objects are kept: every object under a table root is written once under a unique
//! name (data files, deletion vectors, and commits, which put-if-absent never overwrites) — except
//! `_delta_log/_last_checkpoint`, a hint rewritten in place, which is never cached. A classic
//! checkpoint (`N.checkpoint.parquet`) may be written again by another writer, with the same
//! state of version N: either copy serves. Commits on a store without conditional writes
//! (`unsafe_single_writer`) are only as immutable as the single-writer promise makes them. Failed reads are not cached: a commit that did not exist yet may exist on the next look.
//! The cache holds at most its budget ([`CACHE_BUDGET`] unless the statement has a memory limit);
//! past that, objects are read as before.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use bytes::Bytes;

/// Bytes one statement keeps at most.
pub const CACHE_BUDGET: usize = 128 * 1024 * 1024;

#[derive(Debug)]
pub struct ObjectCache {
    inner: Mutex<CacheState>,
    budget: usize,
}

impl Default for ObjectCache {
    fn default() -> Self {
        ObjectCache::with_budget(CACHE_BUDGET)
    }
}

#[derive(Debug, Default)]
struct CacheState {
    objects: HashMap<String, Bytes>,
    bytes: usize,
}

/// Whether an object may be kept: written once under its name.
fn immutable(rel: &str) -> bool {
    !rel.ends_with("_last_checkpoint")
}

impl ObjectCache {
    /// A cache holding at most `budget` bytes.
    pub fn with_budget(budget: usize) -> Self {
        ObjectCache {
            inner: Mutex::new(CacheState::default()),
            budget,
        }
    }

    pub(crate) fn get(&self, rel: &str) -> Option<Bytes> {
        self.inner.lock().ok()?.objects.get(rel).cloned()
    }

    /// `ranges` of a kept object, when it is kept and they lie inside it.
    pub(crate) fn get_ranges(&self, rel: &str, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
        let whole = self.get(rel)?;
        let len = whole.len() as u64;
        ranges
            .iter()
            .map(|r| {
                (r.start <= r.end && r.end <= len).then(|| {
                    // In bounds of a `usize`-sized buffer, so the casts are exact.
                    whole.slice(r.start as usize..r.end as usize)
                })
            })
            .collect()
    }

    /// Bytes still free in the budget.
    pub(crate) fn free(&self) -> usize {
        self.inner
            .lock()
            .map(|s| self.budget.saturating_sub(s.bytes))
            .unwrap_or(0)
    }

    pub(crate) fn contains(&self, rel: &str) -> bool {
        self.inner
            .lock()
            .map(|s| s.objects.contains_key(rel))
            .unwrap_or(false)
    }

    pub(crate) fn insert(&self, rel: &str, bytes: &Bytes) {
        if !immutable(rel) {
            return;
        }
        if let Ok(mut s) = self.inner.lock() {
            if s.objects.contains_key(rel) || s.bytes.saturating_add(bytes.len()) > self.budget {
                return;
            }
            s.bytes += bytes.len();
            s.objects.insert(rel.to_string(), bytes.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_immutable_objects_within_the_budget() {
        let c = ObjectCache::default();
        c.insert("a.parquet", &Bytes::from_static(b"0123456789"));
        c.insert("_delta_log/_last_checkpoint", &Bytes::from_static(b"x"));
        assert_eq!(
            c.get("a.parquet").unwrap(),
            Bytes::from_static(b"0123456789")
        );
        assert!(c.get("_delta_log/_last_checkpoint").is_none());
        let parts = c.get_ranges("a.parquet", &[2..4, 8..10]).unwrap();
        assert_eq!(
            parts,
            vec![Bytes::from_static(b"23"), Bytes::from_static(b"89")]
        );
        assert!(c.get_ranges("a.parquet", &[8..11]).is_none());
        let big = Bytes::from(vec![0u8; CACHE_BUDGET]);
        c.insert("big.parquet", &big);
        assert!(c.get("big.parquet").is_none(), "past the budget");
    }
}
