//! Writes through a [`TableStore`]: the overwriting put of data, DV and checkpoint files, and the
//! commit primitive, put-if-absent — the local disk's own (a hard link of a durable temporary
//! file), the store's conditional create, or the opt-in unsafe single-writer fallback.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::{PutOutcome, Result, StorageError, StorageErrorKind, TableStore, UNIQUE};
use crate::cloud::CommitMode;
use crate::local::{put_if_absent_durable, LocalPut};
use crate::meter::RequestKind;
use crate::retry::retrying;

impl TableStore {
    /// Overwriting write (data files, DV files, checkpoints, `_last_checkpoint`).
    pub async fn put(&self, rel: &str, bytes: Bytes) -> Result<()> {
        let p = self.object_path(rel)?;
        self.check_local_target(&p, rel)?;
        let _req = self.track(RequestKind::Put, 1, rel);
        let (store, p) = (&self.store, &p);
        let payload = bytes.clone();
        retrying(self.retry, move || {
            let payload = PutPayload::from(payload.clone());
            async move {
                store
                    .put(p, payload)
                    .await
                    .map_err(|e| StorageError::from_os(e, rel))
            }
        })
        .await?;
        // A data or DV file this handle wrote is what a later statement would read back.
        if let Some(k) = &self.kept {
            k.insert(rel, &bytes);
        }
        Ok(())
    }

    /// The commit primitive: create `rel` only if it does not exist.
    pub async fn put_if_absent(&self, rel: &str, bytes: Bytes) -> PutOutcome {
        self.put_if_absent_tagged(rel, bytes).await.0
    }

    /// [`TableStore::put_if_absent`], with the entity tag the store gave the created object when
    /// it gives one (object stores; a listing shows the same tag for the same object).
    pub async fn put_if_absent_tagged(
        &self,
        rel: &str,
        bytes: Bytes,
    ) -> (PutOutcome, Option<String>) {
        self.faulty_commit(rel, bytes, |bytes| self.put_if_absent_unfaulted(rel, bytes))
            .await
    }

    async fn put_if_absent_unfaulted(
        &self,
        rel: &str,
        bytes: Bytes,
    ) -> (PutOutcome, Option<String>) {
        let p = match self.object_path(rel) {
            Ok(p) => p,
            Err(e) => return (PutOutcome::Unknown(e), None),
        };
        let _req = self.track(RequestKind::Put, 1, rel);
        if let Some(dir) = &self.local_dir {
            let target = dir.join(rel);
            let unique = format!(
                "{}-{}",
                std::process::id(),
                UNIQUE.fetch_add(1, Ordering::Relaxed)
            );
            let res = tokio::task::spawn_blocking(move || {
                put_if_absent_durable(&target, &bytes, &unique)
            })
            .await;
            let outcome = match res {
                Ok(Ok(LocalPut::Created)) => PutOutcome::Created,
                Ok(Ok(LocalPut::AlreadyExists)) => PutOutcome::AlreadyExists,
                Ok(Err(e)) => PutOutcome::Unknown(StorageError::new(
                    StorageErrorKind::Io,
                    format!("{rel}: {e}"),
                )),
                Err(e) => PutOutcome::Unknown(StorageError::new(
                    StorageErrorKind::Io,
                    format!("{rel}: {e}"),
                )),
            };
            return (outcome, None);
        }
        match self.commit_mode {
            CommitMode::PutIfAbsent => {}
            CommitMode::Refuse => {
                return (PutOutcome::Refused(StorageError::new(
                    StorageErrorKind::Unsupported,
                    format!(
                        "{}: the store has no conditional writes (aws_conditional_put = disabled), so commits cannot be made atomic; set the storage option unsafe_single_writer = true only if no other process ever writes this table",
                        self.root_uri
                    ),
                )), None)
            }
            CommitMode::UnsafeSingleWriter => {
                // Check, then put: atomic only because the user promised a single writer.
                let outcome = match self.exists(rel).await {
                    Ok(true) => PutOutcome::AlreadyExists,
                    Ok(false) => match self.store.put(&p, PutPayload::from(bytes)).await {
                        Ok(_) => PutOutcome::Created,
                        Err(e) => PutOutcome::Unknown(StorageError::from_os(e, rel)),
                    },
                    Err(e) => PutOutcome::Unknown(e),
                };
                return (outcome, None);
            }
        }
        let opts = PutOptions::from(PutMode::Create);
        let outcome = match self.store.put_opts(&p, PutPayload::from(bytes), opts).await {
            Ok(created) => return (PutOutcome::Created, created.e_tag),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => PutOutcome::AlreadyExists,
            Err(e @ object_store::Error::NotImplemented { .. }) => {
                PutOutcome::Refused(StorageError::new(
                    StorageErrorKind::Unsupported,
                    format!("{rel}: the store cannot create an object only if it is absent: {e}"),
                ))
            }
            Err(e) => PutOutcome::Unknown(StorageError::from_os(e, rel)),
        };
        (outcome, None)
    }
}
