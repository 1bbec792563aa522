//! A fault-injecting object store for tests and simulation: wraps any store and, on request, makes
//! the next matching put land but lose its response, fail before landing, or write a torn object;
//! throttles the next requests (a transient "503 SlowDown"); lets the next listing of the log lag
//! behind its newest commits; or delays every response. Faults are armed explicitly and fire once
//! (latency stays until changed), so tests stay deterministic.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The put lands, but the caller gets an error (a lost response / timeout).
    LoseResponse,
    /// The put fails without landing (a transient error).
    FailBeforeLanding,
    /// Only the first half of the bytes land (a torn write by a non-atomic store), no error.
    Torn,
}

#[derive(Default)]
struct Armed {
    /// Test-only: a deliberately broken store whose put-if-absent overwrites.
    broken_put_if_absent: bool,
    /// (path suffix, fault) pairs; the first put whose path ends with the suffix triggers it.
    faults: Vec<(String, Fault)>,
    fired: Vec<(String, Fault)>,
    /// Paths (by suffix) the next directory listing leaves out, as a listing racing a concurrent
    /// create may on a local filesystem. Each is hidden from one listing.
    hidden_once: Vec<String>,
    /// The next this many reads, listings, heads, deletes and overwriting puts fail with a
    /// transient error before reaching the store.
    throttled: u32,
    throttles_fired: u64,
    /// The next listing of a `_delta_log` directory lags: its newest this many commits, and
    /// every log entry of their versions or later, are missing.
    stale_log_listing: usize,
    stale_listings_fired: u64,
    /// Added to every request.
    latency: std::time::Duration,
    /// Requests by kind (GET, PUT, LIST, DELETE), as a cloud store would bill them.
    requests: std::collections::BTreeMap<&'static str, u64>,
}

pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    armed: Mutex<Armed>,
}

impl fmt::Debug for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

fn injected(msg: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyStore",
        source: msg.to_string().into(),
    }
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        FaultyStore {
            inner,
            armed: Mutex::new(Armed::default()),
        }
    }

    /// Arms `fault` for the next put to a path ending with `suffix`.
    pub fn arm(&self, suffix: &str, fault: Fault) {
        if let Ok(mut a) = self.armed.lock() {
            a.faults.push((suffix.to_string(), fault));
        }
    }

    /// Makes put-if-absent overwrite silently (a broken store the oracle must catch).
    /// The next directory listing omits entries whose path ends with `suffix`.
    pub fn hide_from_next_listing(&self, suffix: &str) {
        if let Ok(mut a) = self.armed.lock() {
            a.hidden_once.push(suffix.to_string());
        }
    }

    pub fn break_put_if_absent(&self) {
        if let Ok(mut a) = self.armed.lock() {
            a.broken_put_if_absent = true;
        }
    }

    /// The next `n` reads, listings, heads, deletes and overwriting puts fail with a transient
    /// error ("503 SlowDown"), as a throttling service answers.
    pub fn throttle_next(&self, n: u32) {
        if let Ok(mut a) = self.armed.lock() {
            // A burst, not a queue: armed bursts do not add up past what one request's retries
            // absorb.
            a.throttled = a.throttled.max(n);
        }
    }

    /// Disarms throttles and lagging listings not yet fired (before a check that must see the
    /// store as it is).
    pub fn clear_transient(&self) {
        if let Ok(mut a) = self.armed.lock() {
            a.throttled = 0;
            a.stale_log_listing = 0;
        }
    }

    /// The next listing of the log misses its newest `k` commits (and anything newer), as a
    /// listing that does not yet show the latest writes; the oldest listed commit always shows.
    pub fn lag_next_log_listing(&self, k: usize) {
        if let Ok(mut a) = self.armed.lock() {
            a.stale_log_listing = k;
        }
    }

    /// Delays every request by `d` (slow responses).
    pub fn set_latency(&self, d: std::time::Duration) {
        if let Ok(mut a) = self.armed.lock() {
            a.latency = d;
        }
    }

    /// (throttled requests, lagging listings) so far.
    pub fn transient_faults_fired(&self) -> (u64, u64) {
        self.armed
            .lock()
            .map(|a| (a.throttles_fired, a.stale_listings_fired))
            .unwrap_or_default()
    }

    /// Requests by kind so far (GET includes HEAD and ranged reads; LIST is one per listing
    /// call), then reset.
    pub fn take_requests(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.armed
            .lock()
            .map(|mut a| std::mem::take(&mut a.requests))
            .unwrap_or_default()
    }

    fn count(&self, kind: &'static str) {
        if let Ok(mut a) = self.armed.lock() {
            *a.requests.entry(kind).or_default() += 1;
        }
    }

    /// Waits out the latency, then fails if a throttle is armed.
    async fn admit(&self) -> Result<()> {
        let (latency, throttled) = match self.armed.lock() {
            Ok(mut a) => {
                let t = a.throttled > 0;
                if t {
                    a.throttled -= 1;
                    a.throttles_fired += 1;
                }
                (a.latency, t)
            }
            Err(_) => (std::time::Duration::ZERO, false),
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if throttled {
            return Err(injected("503 SlowDown: please reduce your request rate"));
        }
        Ok(())
    }

    /// Faults that have fired, in order.
    pub fn fired(&self) -> Vec<(String, Fault)> {
        self.armed
            .lock()
            .map(|a| a.fired.clone())
            .unwrap_or_default()
    }

    /// A throttle for a streaming request (no latency: streams are used by recursive listings
    /// and batch deletes, which the latency of their items covers).
    fn throttle_now(&self) -> Option<object_store::Error> {
        let mut a = self.armed.lock().ok()?;
        if a.throttled == 0 {
            return None;
        }
        a.throttled -= 1;
        a.throttles_fired += 1;
        Some(injected("503 SlowDown: please reduce your request rate"))
    }

    fn take(&self, location: &Path) -> Option<Fault> {
        let mut a = self.armed.lock().ok()?;
        let loc = location.as_ref().to_string();
        let i = a
            .faults
            .iter()
            .position(|(s, _)| loc.ends_with(s.as_str()))?;
        let (_, f) = a.faults.remove(i);
        a.fired.push((loc, f.clone()));
        Some(f)
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        mut opts: PutOptions,
    ) -> Result<PutResult> {
        if self
            .armed
            .lock()
            .map(|a| a.broken_put_if_absent)
            .unwrap_or(false)
        {
            opts.mode = object_store::PutMode::Overwrite;
        }
        self.count("PUT");
        if opts.mode == object_store::PutMode::Overwrite {
            self.admit().await?;
        } else {
            let latency = self.armed.lock().map(|a| a.latency).unwrap_or_default();
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
        }
        match self.take(location) {
            None => self.inner.put_opts(location, payload, opts).await,
            Some(Fault::LoseResponse) => {
                self.inner.put_opts(location, payload, opts).await?;
                Err(injected("response lost after the put landed"))
            }
            Some(Fault::FailBeforeLanding) => Err(injected("put failed before landing")),
            Some(Fault::Torn) => {
                let bytes: Bytes = payload.into();
                let half = bytes.slice(..bytes.len() / 2);
                self.inner
                    .put_opts(location, PutPayload::from(half), opts)
                    .await
            }
        }
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.count("GET");
        self.admit().await?;
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.count("DELETE");
        if let Some(e) = self.throttle_now() {
            return Box::pin(futures::stream::once(async move { Err(e) }));
        }
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.count("LIST");
        if let Some(e) = self.throttle_now() {
            return Box::pin(futures::stream::once(async move { Err(e) }));
        }
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.count("LIST");
        self.admit().await?;
        let mut res = self.inner.list_with_delimiter(prefix).await?;
        let lag = self
            .armed
            .lock()
            .map(|mut a| {
                let is_log = prefix.is_some_and(|p| p.as_ref().ends_with("_delta_log"));
                let k = if is_log {
                    std::mem::take(&mut a.stale_log_listing)
                } else {
                    0
                };
                if k > 0 {
                    a.stale_listings_fired += 1;
                }
                k
            })
            .unwrap_or(0);
        if lag > 0 {
            let version = |m: &ObjectMeta| -> Option<u64> {
                let name = m.location.filename()?;
                let digits = name.get(..20)?;
                digits.parse().ok()
            };
            let mut commits: Vec<u64> = res
                .objects
                .iter()
                .filter(|m| m.location.as_ref().ends_with(".json"))
                .filter_map(version)
                .collect();
            commits.sort_unstable();
            commits.dedup();
            // The table's first commit stays visible: a lagging listing shows an older table,
            // never no table.
            let keep = commits.len().saturating_sub(lag).max(1);
            if let Some(&cut) = commits.get(keep) {
                res.objects.retain(|m| version(m).is_none_or(|v| v < cut));
            }
        }
        let hidden = self
            .armed
            .lock()
            .map(|mut a| std::mem::take(&mut a.hidden_once))
            .unwrap_or_default();
        res.objects.retain(|m| {
            !hidden
                .iter()
                .any(|h| m.location.as_ref().ends_with(h.as_str()))
        });
        Ok(res)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
