//! A table store for one statement: its request meter, its cache of the immutable objects it read,
//! and prefetching into that cache (docs/design/object-store-io.md).

use std::sync::Arc;

use futures::StreamExt;

use super::TableStore;
use crate::meter::{InFlight, RequestKind, RequestMeter};
use crate::object_cache::{ObjectCache, CACHE_BUDGET};
use bytes::Bytes;

/// Reads one statement's prefetch keeps in flight at once (object stores serve many more; a
/// bound keeps a statement from opening hundreds of connections).
pub const PREFETCH_CONCURRENCY: usize = 32;

/// What prefetch charges the budget for an object of unknown size.
const UNKNOWN_SIZE_ESTIMATE: u64 = 256 * 1024;

impl TableStore {
    /// The store for one statement: a fresh request meter counts every request made through the
    /// returned handle (and its clones), with the statement's critical-path depth; and the
    /// immutable objects it reads are kept for the rest of the statement ([`ObjectCache`]), so
    /// none is fetched twice.
    pub fn metered(&self) -> (TableStore, Arc<RequestMeter>) {
        self.metered_by(RequestMeter::new(), CACHE_BUDGET)
    }

    /// [`TableStore::metered`] counting on `meter` (e.g. a [`RequestMeter::traced`] one), keeping
    /// at most `cache_budget` bytes of objects read.
    pub fn metered_by(
        &self,
        meter: Arc<RequestMeter>,
        cache_budget: usize,
    ) -> (TableStore, Arc<RequestMeter>) {
        let mut store = self.clone();
        store.meter = Some(meter.clone());
        // On a local disk a second read is a copy from the page cache: keeping the bytes would
        // only add to the statement's memory (its peak is what local benchmarks measure).
        store.cache = match self.local_fs {
            Some(_) => None,
            None => Some(Arc::new(ObjectCache::with_budget(cache_budget))),
        };
        (store, meter)
    }

    /// This handle keeping the data and DV files its statements read, up to `budget` bytes, for
    /// as long as it (or a clone) lives: a later statement reads only files no earlier one read.
    /// Nothing is kept on a local disk (see [`TableStore::metered_by`]) or with a budget of 0.
    pub fn keeping_objects(mut self, budget: usize) -> TableStore {
        self.kept = (self.local_fs.is_none() && budget > 0)
            .then(|| Arc::new(ObjectCache::across_statements(budget)));
        self
    }

    /// This handle sharing `kept` (a session's cache for one location) as its
    /// [`TableStore::keeping_objects`] cache; a local disk keeps nothing.
    pub fn sharing_kept_objects(mut self, kept: Arc<ObjectCache>) -> TableStore {
        self.kept = self.local_fs.is_none().then_some(kept);
        self
    }

    /// The handle's cache of data and DV files, when it keeps one.
    pub fn kept_objects(&self) -> Option<&Arc<ObjectCache>> {
        self.kept.as_ref()
    }

    /// An object this statement or handle already read.
    pub(crate) fn cached(&self, rel: &str) -> Option<Bytes> {
        [&self.cache, &self.kept]
            .into_iter()
            .flatten()
            .find_map(|c| c.get(rel))
    }

    /// Reads `objects` (relative path, size when known) into this statement's cache, up to
    /// [`PREFETCH_CONCURRENCY`] at a time, as many as fit the cache's budget: one stage of
    /// concurrent requests instead of one request after another as the statement decodes each
    /// file. A no-op without a cache (a handle not made by [`TableStore::metered`]) or on a local
    /// disk (no round trips to save). A failed read is left for the statement's own read to
    /// report.
    pub async fn prefetch(&self, objects: Vec<(String, Option<u64>)>) {
        let Some(cache) = &self.cache else { return };
        if self.local_fs.is_some() || cache.free() == 0 {
            return;
        }
        let mut free = cache.free() as u64;
        let mut seen = std::collections::HashSet::new();
        let mut wanted: Vec<String> = Vec::new();
        for (path, size) in objects {
            if cache.contains(&path) || !seen.insert(path.clone()) {
                continue;
            }
            // Kept by the handle: copied into the statement's cache (and marked used there), so
            // the handle's own evictions during this prefetch cannot drop it.
            if let Some(bytes) = self.kept.as_ref().and_then(|k| k.get(&path)) {
                cache.insert(&path, &bytes);
                free = free.saturating_sub(bytes.len() as u64);
                continue;
            }
            // An unknown size (a DV file, a commit) is charged an estimate, so that many of them
            // cannot claim more than the budget; one that does not fit is read when needed.
            let size = size.unwrap_or(UNKNOWN_SIZE_ESTIMATE);
            if size > free {
                continue;
            }
            free -= size;
            wanted.push(path);
        }
        let this = self.clone();
        futures::stream::iter(wanted)
            .map(move |path| {
                let store = this.clone();
                async move {
                    let _ = store.get(&path).await;
                }
            })
            .buffer_unordered(PREFETCH_CONCURRENCY)
            .collect::<Vec<()>>()
            .await;
    }

    /// Storage options this store accepted but ignores, each a one-line warning (deltalake's
    /// options that mean nothing here); the front end shows them.
    pub fn ignored_option_warnings(&self) -> &[String] {
        &self.warnings
    }

    /// This handle's meter, when it has one.
    pub fn meter(&self) -> Option<&Arc<RequestMeter>> {
        self.meter.as_ref()
    }

    /// Records `n` concurrent requests of `kind` until the guard drops.
    pub(crate) fn track(&self, kind: RequestKind, n: u64, rel: &str) -> InFlight {
        match &self.meter {
            Some(m) => m.start(kind, n, rel),
            None => InFlight::none(),
        }
    }
}
