//! Request accounting for one statement: how many requests of each kind it sent to the store, and
//! its critical-path depth — the longest chain of requests in which each one started only after
//! the previous one had answered. On an object store a statement's time is about its depth times
//! the store's latency, so depth is what planning I/O in concurrent stages minimises.
//!
//! Depth is measured without knowing which request waited on which: a request's depth is one more
//! than the deepest request that had *completed* when it started (it may have waited on any of
//! them). That is an upper bound on the true dependency chain and exact for a statement whose
//! requests are issued stage by stage, so a change that turns concurrent reads serial raises it.
//!
//! Counts are logical requests as the table store issues them: one per call, except a ranged read,
//! which counts the ranges an object store would fetch separately (ranges closer than
//! [`COALESCE_GAP`] merge, as object_store's default `get_ranges` does). Transparent retries of a
//! failed request are not counted again.

use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Ranges of one object closer than this are fetched as one request (object_store's default).
pub const COALESCE_GAP: u64 = 1024 * 1024;

/// The kinds of request a cloud store bills separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Get,
    Put,
    List,
    Head,
    Delete,
}

/// What a statement sent to the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    pub get: u64,
    pub put: u64,
    pub list: u64,
    pub head: u64,
    pub delete: u64,
    /// The longest chain of requests each of which started after the previous answered.
    pub critical_path_depth: u32,
}

impl RequestCounts {
    pub fn total(&self) -> u64 {
        self.get + self.put + self.list + self.head + self.delete
    }
}

impl std::fmt::Display for RequestCounts {
    /// `27 requests (GET 23, PUT 3, LIST 1, HEAD 0, DELETE 0), critical path 6 round trip(s)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests (GET {}, PUT {}, LIST {}, HEAD {}, DELETE {}), critical path {} round trip(s)",
            self.total(),
            self.get,
            self.put,
            self.list,
            self.head,
            self.delete,
            self.critical_path_depth
        )
    }
}

#[derive(Debug, Default)]
struct MeterState {
    counts: RequestCounts,
    /// The deepest request that has completed so far.
    deepest_done: u32,
    /// With [`RequestMeter::traced`]: every request, in the order they started.
    trace: Option<Vec<TracedRequest>>,
}

/// One request as a traced meter saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedRequest {
    pub kind: RequestKind,
    /// The path relative to the table root (the directory, for a listing).
    pub path: String,
    /// How many requests it stands for (ranges of one object fetched separately).
    pub count: u64,
    /// Its place on the critical path (1: it waited on nothing).
    pub depth: u32,
}

/// Counts the requests of the table store it is attached to ([`crate::TableStore::metered`]).
#[derive(Debug, Default)]
pub struct RequestMeter {
    state: Mutex<MeterState>,
}

impl RequestMeter {
    pub fn new() -> Arc<Self> {
        Arc::new(RequestMeter::default())
    }

    /// A meter that also records every request (path, kind, depth): to see what a statement's
    /// requests were for.
    pub fn traced() -> Arc<Self> {
        let m = RequestMeter::default();
        if let Ok(mut s) = m.state.lock() {
            s.trace = Some(Vec::new());
        }
        Arc::new(m)
    }

    /// The recorded requests (empty unless [`RequestMeter::traced`]).
    pub fn trace(&self) -> Vec<TracedRequest> {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.trace.clone())
            .unwrap_or_default()
    }

    /// The counts so far.
    pub fn counts(&self) -> RequestCounts {
        self.state.lock().map(|s| s.counts).unwrap_or_default()
    }

    /// Starts `n` concurrent requests of `kind`; they complete when the returned guard drops.
    pub(crate) fn start(self: &Arc<Self>, kind: RequestKind, n: u64, path: &str) -> InFlight {
        let depth = match self.state.lock() {
            Ok(mut s) => {
                let c = &mut s.counts;
                match kind {
                    RequestKind::Get => c.get += n,
                    RequestKind::Put => c.put += n,
                    RequestKind::List => c.list += n,
                    RequestKind::Head => c.head += n,
                    RequestKind::Delete => c.delete += n,
                }
                let depth = s.deepest_done.saturating_add(1);
                if n > 0 {
                    s.counts.critical_path_depth = s.counts.critical_path_depth.max(depth);
                    if let Some(t) = &mut s.trace {
                        t.push(TracedRequest {
                            kind,
                            path: path.to_string(),
                            count: n,
                            depth,
                        });
                    }
                }
                depth
            }
            Err(_) => 0,
        };
        InFlight {
            meter: Some(self.clone()),
            depth,
        }
    }
}

/// Requests in flight: their completion is recorded when this drops (answered or failed).
pub(crate) struct InFlight {
    meter: Option<Arc<RequestMeter>>,
    depth: u32,
}

impl InFlight {
    /// A guard for an unmetered store.
    pub(crate) fn none() -> Self {
        InFlight {
            meter: None,
            depth: 0,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(m) = &self.meter {
            if let Ok(mut s) = m.state.lock() {
                s.deepest_done = s.deepest_done.max(self.depth);
            }
        }
    }
}

/// How many requests an object store makes for `ranges` of one object: ranges closer than
/// [`COALESCE_GAP`] are fetched together.
pub(crate) fn coalesced_requests(ranges: &[Range<u64>]) -> u64 {
    let mut sorted: Vec<&Range<u64>> = ranges.iter().collect();
    sorted.sort_by_key(|r| r.start);
    let mut n = 0u64;
    let mut end: Option<u64> = None;
    for r in sorted {
        match end {
            Some(e) if r.start <= e.saturating_add(COALESCE_GAP) => end = Some(e.max(r.end)),
            _ => {
                n += 1;
                end = Some(r.end);
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_only_requests_that_waited() {
        let m = RequestMeter::new();
        {
            // Three concurrent reads: one stage.
            let _a = m.start(RequestKind::Get, 1, "a");
            let _b = m.start(RequestKind::Get, 1, "a");
            let _c = m.start(RequestKind::List, 1, "");
        }
        {
            // Then a write that waited on them, and a second stage of two.
            let _w = m.start(RequestKind::Put, 2, "b");
        }
        let _late = m.start(RequestKind::Put, 1, "c");
        let c = m.counts();
        assert_eq!((c.get, c.list, c.put, c.total()), (2, 1, 3, 6));
        assert_eq!(c.critical_path_depth, 3);
    }

    #[test]
    fn near_ranges_are_one_request() {
        assert_eq!(coalesced_requests(&[]), 0);
        assert_eq!(coalesced_requests(&[0..10, 20..30, 5..8]), 1);
        assert_eq!(
            coalesced_requests(&[0..10, (10 + COALESCE_GAP + 1)..(20 + COALESCE_GAP)]),
            2
        );
    }
}
