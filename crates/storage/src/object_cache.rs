//! Immutable objects already read, kept so that nothing is fetched twice. Two scopes:
//!
//! - **A statement** ([`ObjectCache::with_budget`]): everything it read, for the rest of the
//!   statement (a DML's matching pass and its rewrite pass read the same data file; a MERGE's key
//!   probe and its join read the same files; a commit retry reads the same winners). Full caches
//!   keep what they have and read the rest as before.
//! - **A table handle** ([`ObjectCache::across_statements`]): the data and deletion-vector files
//!   its statements read, for as long as the handle lives (a Python `DeltaTable` running MERGE
//!   after MERGE reads the files no earlier statement read). The least recently used object
//!   makes room for a new one.
//!
//! Only immutable objects are kept. Data and DV files are written once under unique names
//! (PROTOCOL.md: data files "MUST be uniquely named and MUST NOT be overwritten"), so a kept copy
//! is the object for as long as it exists, in any table ever created at this root. A commit is
//! immutable while the table lives (put-if-absent never overwrites it), but a table deleted and
//! created again at the same root reuses its names: so `_delta_log/` objects are kept for one
//! statement only, never by a handle. `_delta_log/_last_checkpoint`, a hint rewritten in place, is
//! never kept. A classic checkpoint (`N.checkpoint.parquet`) may be written again by another
//! writer, with the same state of version N: either copy serves. Commits on a store without
//! conditional writes (`unsafe_single_writer`) are only as immutable as the single-writer promise
//! makes them. Failed reads are not kept: a commit that did not exist yet may exist on the next
//! look.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use bytes::Bytes;

/// Bytes one statement keeps at most.
pub const CACHE_BUDGET: usize = 128 * 1024 * 1024;

/// Bytes a table handle keeps across its statements, at most.
pub const HANDLE_CACHE_BUDGET: usize = 64 * 1024 * 1024;

#[derive(Debug)]
pub struct ObjectCache {
    inner: Mutex<CacheState>,
    budget: usize,
    scope: Scope,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// One statement: keeps every immutable object until full.
    Statement,
    /// A table handle: keeps data and DV files only, least recently used out first.
    Handle,
}

impl Default for ObjectCache {
    fn default() -> Self {
        ObjectCache::with_budget(CACHE_BUDGET)
    }
}

#[derive(Debug, Default)]
struct CacheState {
    objects: HashMap<String, Kept>,
    bytes: usize,
    /// Bumped on every use; an object's `used` orders eviction.
    clock: u64,
}

#[derive(Debug)]
struct Kept {
    bytes: Bytes,
    used: u64,
}

impl ObjectCache {
    /// A statement's cache holding at most `budget` bytes.
    pub fn with_budget(budget: usize) -> Self {
        ObjectCache {
            inner: Mutex::new(CacheState::default()),
            budget,
            scope: Scope::Statement,
        }
    }

    /// A table handle's cache of data and DV files, holding at most `budget` bytes.
    pub fn across_statements(budget: usize) -> Self {
        ObjectCache {
            inner: Mutex::new(CacheState::default()),
            budget,
            scope: Scope::Handle,
        }
    }

    /// Whether this cache may keep the object at `rel` (module header).
    fn may_keep(&self, rel: &str) -> bool {
        match self.scope {
            Scope::Statement => !rel.ends_with("_last_checkpoint"),
            Scope::Handle => !rel.starts_with("_delta_log/") && !rel.contains("/_delta_log/"),
        }
    }

    pub(crate) fn get(&self, rel: &str) -> Option<Bytes> {
        let mut s = self.inner.lock().ok()?;
        s.clock += 1;
        let now = s.clock;
        let kept = s.objects.get_mut(rel)?;
        kept.used = now;
        Some(kept.bytes.clone())
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

    /// Bytes kept now.
    pub fn kept_bytes(&self) -> usize {
        self.inner.lock().map(|s| s.bytes).unwrap_or(0)
    }

    pub(crate) fn insert(&self, rel: &str, bytes: &Bytes) {
        if !self.may_keep(rel) || bytes.len() > self.budget {
            return;
        }
        let Ok(mut s) = self.inner.lock() else { return };
        if s.objects.contains_key(rel) {
            return;
        }
        if s.bytes.saturating_add(bytes.len()) > self.budget {
            match self.scope {
                Scope::Statement => return,
                Scope::Handle => evict_until(&mut s, self.budget - bytes.len()),
            }
        }
        s.clock += 1;
        let used = s.clock;
        s.bytes += bytes.len();
        s.objects.insert(
            rel.to_string(),
            Kept {
                bytes: bytes.clone(),
                used,
            },
        );
    }
}

/// Drops the least recently used objects until at most `limit` bytes are kept.
fn evict_until(s: &mut CacheState, limit: usize) {
    let mut by_use: Vec<(u64, String)> =
        s.objects.iter().map(|(k, v)| (v.used, k.clone())).collect();
    by_use.sort_unstable();
    for (_, key) in by_use {
        if s.bytes <= limit {
            break;
        }
        if let Some(gone) = s.objects.remove(&key) {
            s.bytes = s.bytes.saturating_sub(gone.bytes.len());
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
        c.insert(
            "_delta_log/00000000000000000001.json",
            &Bytes::from_static(b"{}"),
        );
        assert_eq!(
            c.get("a.parquet").unwrap(),
            Bytes::from_static(b"0123456789")
        );
        assert!(c.get("_delta_log/_last_checkpoint").is_none());
        assert!(c.get("_delta_log/00000000000000000001.json").is_some());
        let parts = c.get_ranges("a.parquet", &[2..4, 8..10]).unwrap();
        assert_eq!(
            parts,
            vec![Bytes::from_static(b"23"), Bytes::from_static(b"89")]
        );
        assert!(c.get_ranges("a.parquet", &[8..11]).is_none());
        let big = Bytes::from(vec![0u8; CACHE_BUDGET]);
        c.insert("big.parquet", &big);
        assert!(c.get("big.parquet").is_none(), "past the budget");
        assert!(
            c.get("a.parquet").is_some(),
            "a statement's cache never evicts"
        );
    }

    #[test]
    fn a_handle_keeps_data_files_only_and_evicts_the_least_recently_used() {
        let c = ObjectCache::across_statements(30);
        for log in [
            "_delta_log/00000000000000000001.json",
            "_delta_log/00000000000000000010.checkpoint.parquet",
            "p=1/_delta_log/x.json",
        ] {
            c.insert(log, &Bytes::from_static(b"{}"));
            assert!(c.get(log).is_none(), "{log}: a re-created table reuses it");
        }
        c.insert("a.parquet", &Bytes::from(vec![1u8; 10]));
        c.insert("deletion_vector_1.bin", &Bytes::from(vec![2u8; 10]));
        c.insert("b.parquet", &Bytes::from(vec![3u8; 10]));
        assert_eq!(c.kept_bytes(), 30);
        // `a` was used last, so `deletion_vector_1` is the least recently used.
        assert!(c.get("a.parquet").is_some());
        c.insert("c.parquet", &Bytes::from(vec![4u8; 10]));
        assert_eq!(c.kept_bytes(), 30);
        assert!(c.get("deletion_vector_1.bin").is_none());
        for kept in ["a.parquet", "b.parquet", "c.parquet"] {
            assert!(c.get(kept).is_some(), "{kept}");
        }
        c.insert("huge.parquet", &Bytes::from(vec![0u8; 31]));
        assert!(c.get("huge.parquet").is_none(), "larger than the budget");
        assert_eq!(c.kept_bytes(), 30, "and it evicted nothing");
    }
}
