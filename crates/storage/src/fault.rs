//! A fault-injecting object store for tests and simulation: wraps any store and, on request, makes
//! the next matching put land but lose its response, fail before landing, or write a torn object.
//! Faults are armed explicitly and fire once, so tests stay deterministic.

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

    /// Faults that have fired, in order.
    pub fn fired(&self) -> Vec<(String, Fault)> {
        self.armed
            .lock()
            .map(|a| a.fired.clone())
            .unwrap_or_default()
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
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let mut res = self.inner.list_with_delimiter(prefix).await?;
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
