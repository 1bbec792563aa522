//! Deletion vectors the reconcilers of one transaction have read or written, by the DV's unique id
//! (`storageType + pathOrInlineDv [@offset]`) and the file's row count it was checked against.
//!
//! Sound because a DV is immutable: its unique id names one stored bitmap (a DV file is written
//! once under a fresh name, an inline DV carries its bytes in the id), so a cached bitmap is
//! exactly what a read would return; and an entry was checked against the same row count a read
//! would check. What changes between winners is which DV a file's action points at — that is
//! always read from the actions, never from here.
//!
//! Why: Case 2 needs three DVs per shared path and winner (the loser's read-time DV, the winner's
//! post-image, the loser's current DV). Along a chain of winners, one winner's post-image is the
//! next step's base and the loser's current DV is the merge it just wrote, so only the new
//! winner's post-image must be read. Holds at most [`MAX_CACHED_DV_BYTES`] (serialized size);
//! past that it starts over.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use roaring::RoaringTreemap;

/// The serialized size of the cached bitmaps, at most.
pub const MAX_CACHED_DV_BYTES: usize = 64 << 20;

#[derive(Debug, Default)]
pub struct DvCache {
    inner: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    dvs: HashMap<(String, i64), Arc<RoaringTreemap>>,
    bytes: usize,
}

impl DvCache {
    pub fn get(&self, unique_id: &str, num_records: i64) -> Option<Arc<RoaringTreemap>> {
        let held = self.inner.lock().ok()?;
        held.dvs.get(&(unique_id.to_string(), num_records)).cloned()
    }

    /// Keeps `dv` if it fits beside what is held, never starting over; whether it was kept (or
    /// was already there). For reads made ahead of need (`dv_prefetch`): they must not push out
    /// what the reconcilers read or wrote.
    pub fn keep_if_room(
        &self,
        unique_id: String,
        num_records: i64,
        dv: Arc<RoaringTreemap>,
    ) -> bool {
        let Ok(mut held) = self.inner.lock() else {
            return false;
        };
        let key = (unique_id, num_records);
        if held.dvs.contains_key(&key) {
            return true;
        }
        let size = dv.serialized_size();
        if held.bytes.saturating_add(size) > MAX_CACHED_DV_BYTES {
            return false;
        }
        held.dvs.insert(key, dv);
        held.bytes += size;
        true
    }

    /// Keeps `dv` (read or written as `unique_id` for a file of `num_records` rows).
    pub fn keep(&self, unique_id: String, num_records: i64, dv: Arc<RoaringTreemap>) {
        let Ok(mut held) = self.inner.lock() else {
            return;
        };
        let size = dv.serialized_size();
        if size > MAX_CACHED_DV_BYTES {
            return;
        }
        if held.bytes.saturating_add(size) > MAX_CACHED_DV_BYTES {
            held.dvs.clear();
            held.bytes = 0;
        }
        if held.dvs.insert((unique_id, num_records), dv).is_none() {
            held.bytes += size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_keyed_by_id_and_row_count_and_the_cache_starts_over_when_full() {
        let cache = DvCache::default();
        let dv = Arc::new(RoaringTreemap::from_iter([1u64, 5, 9]));
        cache.keep("uab@1".into(), 10, Arc::clone(&dv));
        assert_eq!(cache.get("uab@1", 10).as_deref(), Some(dv.as_ref()));
        assert!(
            cache.get("uab@1", 11).is_none(),
            "checked against another row count"
        );
        assert!(cache.get("uab@2", 10).is_none());
        // A bitmap that fills the cache clears what was there.
        let big = Arc::new(RoaringTreemap::from_iter(
            (0u64..(MAX_CACHED_DV_BYTES as u64) * 2).step_by(70_000),
        ));
        let size = big.serialized_size();
        assert!(size < MAX_CACHED_DV_BYTES);
        let mut n = 0;
        while cache.inner.lock().unwrap().bytes + size <= MAX_CACHED_DV_BYTES {
            cache.keep(format!("ubig{n}"), 1, Arc::clone(&big));
            n += 1;
            assert!(n < 1_000_000);
        }
        assert!(cache.get("uab@1", 10).is_some());
        // Reads made ahead of need never push anything out: refused when full.
        assert!(!cache.keep_if_room("uahead".into(), 1, Arc::clone(&big)));
        assert!(cache.get("uab@1", 10).is_some(), "nothing pushed out");
        assert!(
            cache.keep_if_room("uab@1".into(), 10, Arc::clone(&dv)),
            "already held"
        );
        cache.keep("ulast".into(), 1, big);
        assert!(cache.get("uab@1", 10).is_none(), "started over");
        assert!(cache.get("ulast", 1).is_some());
        assert!(
            cache.keep_if_room("usmall".into(), 1, dv),
            "room after starting over"
        );
    }
}
