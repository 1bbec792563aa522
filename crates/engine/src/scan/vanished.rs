//! A file of the read snapshot that is no longer there. A statement reads the files of the version
//! it started from; when a later version removed one and VACUUM (with a retention shorter than the
//! statement took) deleted it, the read finds nothing. Running the statement again, from the
//! latest version, can succeed: that is a retryable error (`TransactionExpired`, kind Conflict),
//! not a missing file of the table. When no later version exists, the file is missing from the
//! latest version itself and the storage error stands (a retry cannot help).

use delta_rlc_protocol::log_path::{commit_file_name, LOG_DIR};
use delta_rlc_storage::{StorageError, StorageErrorKind, TableStore};

use crate::error::EngineError;

/// The error for reading `path`, a file of version `version`, that failed with `error`.
pub(crate) async fn read_error(
    store: &TableStore,
    version: u64,
    path: &str,
    error: StorageError,
) -> EngineError {
    if error.kind != StorageErrorKind::NotFound {
        return EngineError::Storage(error);
    }
    let next = format!("{LOG_DIR}/{}", commit_file_name(version.saturating_add(1)));
    match store.exists(&next).await {
        Ok(true) => EngineError::TransactionExpired(format!(
            "{path}, a file of version {version}, is gone: a later version removed it and VACUUM deleted it while this statement ran; run it again"
        )),
        // No later version (or the log cannot say): the file is missing from the table itself.
        _ => EngineError::Storage(error),
    }
}

/// The deletion vector of `add`, a file of `snapshot`, as `crate::dv_io::load_file_dv` reads it;
/// a DV file VACUUM deleted under the statement is [`read_error`]'s retryable error, as a data
/// file is. Every statement path that reads its own snapshot's DVs loads them through here.
pub(crate) async fn snapshot_dv(
    store: &TableStore,
    snapshot: &crate::snapshot::Snapshot,
    add: &delta_rlc_protocol::actions::Add,
) -> crate::error::Result<roaring::RoaringTreemap> {
    match crate::dv_io::load_file_dv(store, &snapshot.root, add).await {
        Err(EngineError::Storage(e)) => {
            let what = format!("the deletion vector of {}", add.path);
            Err(read_error(store, snapshot.version, &what, e).await)
        }
        other => other,
    }
}
