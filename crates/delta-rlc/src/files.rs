//! The objects under a location as files and directories, for a pyarrow file system over the
//! table's store (deltalake's `DeltaStorageHandler`) and for tools that browse a table's folder.
//! Reads and writes go through the same store, options and retries as the table's; nothing here
//! commits (a `_delta_log` file written here is not a commit the engine made).

use std::collections::BTreeMap;

use bytes::Bytes;
use delta_rlc_engine::EngineError;
use delta_rlc_storage::{StorageErrorKind, TableStore};

use crate::error::Result;

/// A file under the root: its path relative to the root, size and last-modified time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Relative to the root, `/`-separated.
    pub path: String,
    /// Bytes.
    pub size: u64,
    /// Last modified, nanoseconds since the epoch (as precise as the store keeps it).
    pub modified_ns: i64,
}

/// One level of a directory: its files and its sub-directories (paths relative to the root).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirListing {
    /// The files directly in the directory, by path.
    pub files: Vec<FileEntry>,
    /// Its sub-directories (key prefixes with an object under them), by path.
    pub dirs: Vec<String>,
}

/// The store under a location, as files.
#[derive(Debug, Clone)]
pub struct ObjectFiles {
    store: TableStore,
}

fn storage(e: delta_rlc_storage::StorageError) -> crate::Error {
    EngineError::from(e).into()
}

fn entry(f: delta_rlc_storage::FileMeta) -> FileEntry {
    FileEntry {
        path: f.path,
        size: f.size,
        modified_ns: f.modified_ns,
    }
}

impl ObjectFiles {
    /// The files under `location` (a table URI or path), opened with `storage_options` as a
    /// table there would be.
    pub fn open(location: &str, storage_options: &BTreeMap<String, String>) -> Result<Self> {
        let store = TableStore::open_with_options(location, storage_options).map_err(storage)?;
        Ok(ObjectFiles { store })
    }

    /// The root's URI.
    pub fn root_uri(&self) -> &str {
        self.store.root_uri()
    }

    /// The file at `path`, or `None` when there is none.
    pub async fn file(&self, path: &str) -> Result<Option<FileEntry>> {
        match self.store.file_meta(path).await {
            Ok(f) => Ok(Some(entry(f))),
            Err(e) if e.kind == StorageErrorKind::NotFound => Ok(None),
            Err(e) => Err(storage(e)),
        }
    }

    /// The files and sub-directories directly under `dir` ("" = the root).
    pub async fn list_dir(&self, dir: &str) -> Result<DirListing> {
        let entries = self.store.list_entries(dir).await.map_err(storage)?;
        Ok(DirListing {
            files: entries.files.into_iter().map(entry).collect(),
            dirs: entries.dirs,
        })
    }

    /// Every file under `dir`, at any depth.
    pub async fn list_all(&self, dir: &str) -> Result<Vec<FileEntry>> {
        let files = self.store.list_files(dir).await.map_err(storage)?;
        Ok(files.into_iter().map(entry).collect())
    }

    /// Bytes `start..end` of the file at `path`.
    pub async fn read_range(&self, path: &str, start: u64, end: u64) -> Result<Bytes> {
        if end <= start {
            return Ok(Bytes::new());
        }
        let mut parts = self
            .store
            .get_ranges(path, &[start..end])
            .await
            .map_err(storage)?;
        Ok(parts.pop().unwrap_or_default())
    }

    /// Writes (or replaces) the file at `path`.
    pub async fn write(&self, path: &str, bytes: Bytes) -> Result<()> {
        self.store.put(path, bytes).await.map_err(storage)
    }

    /// Deletes the file at `path` (a missing file is not an error).
    pub async fn delete(&self, path: &str) -> Result<()> {
        self.store.delete(path).await.map_err(storage)
    }

    /// Copies `from` to `to`, replacing it.
    pub async fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.store.copy(from, to).await.map_err(storage)
    }

    /// Moves `from` to `to`, replacing it.
    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.store.rename(from, to).await.map_err(storage)
    }
}
