//! A file-system view of the store under a root, for callers that browse and move objects rather
//! than read a table (deltalake's `DeltaStorageHandler`, a pyarrow file system): one level of a
//! listing with its sub-directories, and server-side copy and rename. Directories are key
//! prefixes: they exist while an object lies under them.

use object_store::ObjectStoreExt;

use super::{Result, StorageError, TableStore};
use crate::meter::RequestKind;
use crate::retry::retrying;

/// A file under the root: its path relative to the root, size and modification time to the
/// nanosecond where the store keeps it (a file system's own times, as a pyarrow file system
/// reports them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    pub path: String,
    pub size: u64,
    pub modified_ns: i64,
}

/// One level of a listing: the files directly under a directory and its sub-directories
/// (paths relative to the root), each sorted.
#[derive(Debug, Clone, Default)]
pub struct DirEntries {
    pub files: Vec<FileMeta>,
    pub dirs: Vec<String>,
}

impl TableStore {
    fn file_meta_of(&self, m: object_store::ObjectMeta) -> FileMeta {
        let ms = m.last_modified.timestamp_millis();
        FileMeta {
            path: self.relative(&m.location),
            size: m.size,
            modified_ns: m
                .last_modified
                .timestamp_nanos_opt()
                .unwrap_or(ms.saturating_mul(1_000_000)),
        }
    }

    /// Keeps what lies under the root on a local disk (no symbolic link leads out of it).
    fn inside_root(&self, files: &mut Vec<FileMeta>) {
        if self.local_fs.is_some() {
            files.retain(|f| {
                self.object_path(&f.path)
                    .and_then(|p| self.check_local(&p, &f.path))
                    .is_ok()
            });
        }
    }

    /// The file at `rel`.
    pub async fn file_meta(&self, rel: &str) -> Result<FileMeta> {
        let p = self.object_path(rel)?;
        self.check_local(&p, rel)?;
        let m = self.head_meta(&p, rel).await?;
        Ok(self.file_meta_of(m))
    }

    /// The files directly under `rel_dir` ("" = the root) and its sub-directories.
    pub async fn list_entries(&self, rel_dir: &str) -> Result<DirEntries> {
        let res = self.list_delimited(rel_dir).await?;
        let mut files: Vec<FileMeta> = res
            .objects
            .into_iter()
            .map(|m| self.file_meta_of(m))
            .collect();
        self.inside_root(&mut files);
        files.sort_by(|a, b| a.path.cmp(&b.path));
        // A directory reached through a symbolic link is not under the root: left out.
        let mut dirs: Vec<String> = res
            .common_prefixes
            .iter()
            .filter(|d| self.local_fs.is_none() || self.check_local(d, &self.relative(d)).is_ok())
            .map(|d| self.relative(d))
            .collect();
        dirs.sort();
        Ok(DirEntries { files, dirs })
    }

    /// Every file under `rel_dir` ("" = the root), at any depth, sorted by path.
    pub async fn list_files(&self, rel_dir: &str) -> Result<Vec<FileMeta>> {
        let metas = self.list_metas(rel_dir).await?;
        let mut files: Vec<FileMeta> = metas.into_iter().map(|m| self.file_meta_of(m)).collect();
        self.inside_root(&mut files);
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(files)
    }

    /// Copies `from` to `to` (replacing it), on the store's side where it can.
    pub async fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.copy_or_rename(from, to, false).await
    }

    /// Moves `from` to `to` (replacing it). Not atomic on every store (a copy then a delete):
    /// never used for commits, which are put-if-absent.
    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.copy_or_rename(from, to, true).await
    }

    /// One server-side copy or rename: the source is read as a read is checked, the target
    /// written as a write is (no symbolic link below a local root on either side).
    async fn copy_or_rename(&self, from: &str, to: &str, rename: bool) -> Result<()> {
        let (src, dst) = (self.object_path(from)?, self.object_path(to)?);
        self.check_local(&src, from)?;
        self.check_local_target(&dst, to)?;
        let _req = self.track(RequestKind::Put, 1, to);
        let (src, dst) = (&src, &dst);
        retrying(self.retry, move || async move {
            match rename {
                true => self.store.rename(src, dst).await,
                false => self.store.copy(src, dst).await,
            }
            .map_err(|e| StorageError::from_os(e, from))
        })
        .await
    }
}
