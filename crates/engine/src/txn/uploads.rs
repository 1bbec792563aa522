//! Objects a transaction writes in the background while it goes on planning: a statement's new
//! deletion-vector file is uploaded while its new data file is encoded and written, instead of one
//! after the other. The commit waits for every upload before it writes the log entry, so a commit
//! never names an object that is not there; an upload that fails fails the statement, and nothing
//! becomes visible (the object, if it landed, is an orphan VACUUM removes, as for any aborted
//! statement).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use delta_rlc_storage::TableStore;
use tokio::task::JoinHandle;

use crate::error::{EngineError, Result};

/// Uploads in flight (shared by the transaction's clones: whichever commits waits for them).
#[derive(Clone, Default)]
pub struct PendingUploads {
    handles: Arc<Mutex<Vec<(String, JoinHandle<Result<()>>)>>>,
}

impl std::fmt::Debug for PendingUploads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.handles.lock().map(|h| h.len()).unwrap_or(0);
        write!(f, "PendingUploads({n})")
    }
}

impl PendingUploads {
    /// Starts writing `bytes` to `rel` (an overwriting put of a new, uniquely named object).
    pub fn start(&self, store: &TableStore, rel: String, bytes: Bytes) -> Result<()> {
        let store = store.clone();
        let path = rel.clone();
        let handle = tokio::spawn(async move { Ok(store.put(&path, bytes).await?) });
        self.handles
            .lock()
            .map_err(|_| EngineError::Internal("pending uploads poisoned".into()))?
            .push((rel, handle));
        Ok(())
    }

    /// Waits for every upload started so far; the first failure is the result.
    pub async fn finish(&self) -> Result<()> {
        let handles = std::mem::take(
            &mut *self
                .handles
                .lock()
                .map_err(|_| EngineError::Internal("pending uploads poisoned".into()))?,
        );
        let mut first_error = None;
        for (rel, h) in handles {
            let r = match h.await {
                Ok(r) => r,
                Err(e) => Err(EngineError::Internal(format!("uploading {rel}: {e}"))),
            };
            if let (Err(e), None) = (r, &first_error) {
                first_error = Some(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
