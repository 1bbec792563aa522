//! Objects written in the background while a statement goes on: a statement's new DV file is
//! uploaded while its new data file is encoded and written, and a conflict check's merged DV file
//! while the checks of the next winning commits run, instead of one after the other.
//!
//! Invariant: whoever writes a log entry naming these objects first waits for every upload
//! started ([`PendingUploads::finish`]), so a commit never names an object that is not there. An
//! upload that fails fails the statement, and nothing becomes visible (the object, if it landed,
//! is an orphan VACUUM removes, as for any aborted statement).
//!
//! Until it lands, an object being uploaded is served to the statement's own reads from its
//! statement cache (when the handle has one): a later check that reads the DV it just merged does
//! not race the upload. Without room in the cache such a read goes to the store and may not find
//! the object yet; the caller then fails safe (a check that cannot read declines).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::task::JoinHandle;

use super::{Result, StorageError, StorageErrorKind, TableStore};

type Upload = (String, JoinHandle<Result<()>>);

/// Uploads in flight, shared by the clones of one transaction (whichever commits waits for them).
#[derive(Clone, Default)]
pub struct PendingUploads {
    handles: Arc<Mutex<Vec<Upload>>>,
}

impl std::fmt::Debug for PendingUploads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.handles.lock().map(|h| h.len()).unwrap_or(0);
        write!(f, "PendingUploads({n})")
    }
}

/// Puts `bytes` in `store`'s statement cache under `rel`; whether reads of `rel` are now served.
fn serve(store: &TableStore, rel: &str, bytes: &Bytes) -> bool {
    match &store.cache {
        Some(cache) => {
            cache.insert(rel, bytes);
            cache.get(rel).is_some()
        }
        None => false,
    }
}

fn poisoned() -> StorageError {
    StorageError::new(StorageErrorKind::Io, "pending uploads: lock poisoned")
}

impl PendingUploads {
    /// Starts writing `bytes` to `rel` (an overwriting put of a new, uniquely named object) and
    /// serves it to this statement's reads through `store` until then. Returns whether it is
    /// served: `false` when the handle has no statement cache or no room in it, and a read of
    /// `rel` before [`PendingUploads::finish`] may then not find it.
    pub fn start(&self, store: &TableStore, rel: String, bytes: Bytes) -> Result<bool> {
        let served = serve(store, &rel, &bytes);
        self.spawn(store, rel, bytes)?;
        Ok(served)
    }

    /// Writes `bytes` to `rel` in the background when this statement's reads can be served it
    /// meanwhile ([`PendingUploads::start`]); otherwise writes it now, waiting for that one put
    /// only (never for, nor taking the results of, the uploads already in flight: those stay for
    /// [`PendingUploads::finish`], whose caller must see their failures).
    pub async fn start_or_put(&self, store: &TableStore, rel: String, bytes: Bytes) -> Result<()> {
        if serve(store, &rel, &bytes) {
            return self.spawn(store, rel, bytes);
        }
        store.put(&rel, bytes).await
    }

    fn spawn(&self, store: &TableStore, rel: String, bytes: Bytes) -> Result<()> {
        let store = store.clone();
        let path = rel.clone();
        let handle = tokio::spawn(async move { store.put(&path, bytes).await });
        self.handles
            .lock()
            .map_err(|_| poisoned())?
            .push((rel, handle));
        Ok(())
    }

    /// Whether no upload is in flight.
    pub fn is_empty(&self) -> bool {
        self.handles.lock().map(|h| h.is_empty()).unwrap_or(false)
    }

    /// Waits for every upload started so far; the first failure is the result.
    pub async fn finish(&self) -> Result<()> {
        let handles = std::mem::take(&mut *self.handles.lock().map_err(|_| poisoned())?);
        let mut first_error = None;
        for (rel, h) in handles {
            let r = match h.await {
                Ok(r) => r,
                Err(e) => Err(StorageError::new(
                    StorageErrorKind::Io,
                    format!("uploading {rel}: {e}"),
                )),
            };
            if let (Err(e), None) = (r, &first_error) {
                first_error = Some(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
