//! [`TableStore`]: one table root on an object store, with the put-if-absent commit primitive.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use thiserror::Error;

use crate::cloud::{open_cloud, CommitMode};
use crate::latency::{take_latency_options, with_latency};
use crate::meter::{coalesced_requests, RequestKind, RequestMeter};
use crate::object_cache::ObjectCache;
use crate::retry::{retrying, RetryPolicy};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageErrorKind {
    NotFound,
    AlreadyExists,
    /// The path is not a safe path under the root.
    InvalidPath,
    /// The location could not be opened (bad URL, missing credentials).
    InvalidLocation,
    /// Any other I/O or service failure; a retry may help.
    Io,
    /// The store cannot do what is asked (a commit on a store without conditional writes).
    Unsupported,
    /// The handle's read budget is spent ([`ReadBudget`]); nothing is wrong with the store.
    BudgetExceeded,
}

#[derive(Debug, Error, Clone)]
#[error("{message}")]
pub struct StorageError {
    pub kind: StorageErrorKind,
    pub message: String,
}

impl StorageError {
    pub(crate) fn new(kind: StorageErrorKind, message: impl Into<String>) -> Self {
        StorageError {
            kind,
            message: message.into(),
        }
    }

    fn from_os(e: object_store::Error, what: &str) -> Self {
        let kind = match &e {
            object_store::Error::NotFound { .. } => StorageErrorKind::NotFound,
            object_store::Error::AlreadyExists { .. } => StorageErrorKind::AlreadyExists,
            object_store::Error::InvalidPath { .. } => StorageErrorKind::InvalidPath,
            object_store::Error::NotImplemented { .. } => StorageErrorKind::Unsupported,
            // Credentials the store refuses: retrying cannot help.
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => StorageErrorKind::InvalidLocation,
            _ => StorageErrorKind::Io,
        };
        let msg = match kind {
            StorageErrorKind::NotFound => format!("{what}: not found"),
            _ => format!("{what}: {e}"),
        };
        StorageError::new(kind, msg)
    }
}

type Result<T> = std::result::Result<T, StorageError>;

/// Result of the commit primitive.
#[derive(Debug)]
pub enum PutOutcome {
    Created,
    AlreadyExists,
    /// The write may or may not have landed (lost response, timeout, fsync failure).
    Unknown(StorageError),
    /// The store cannot make this write atomic (no conditional writes and no single-writer
    /// opt-in); nothing was written.
    Refused(StorageError),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Decoded path relative to the table root.
    pub path: String,
    pub size: u64,
    /// Milliseconds since the epoch.
    pub last_modified_ms: i64,
    /// The store's entity tag for this version of the object, when it gives one (S3, Azure, GCS,
    /// local files, memory): a rewritten object gets another.
    pub e_tag: Option<String>,
}

/// One table root. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TableStore {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    root_uri: String,
    local_dir: Option<PathBuf>,
    /// The local filesystem store behind `store` (same root), to map object paths to files.
    local_fs: Option<Arc<LocalFileSystem>>,
    /// The root directory as `local_fs` maps paths: what a checked file's ancestors must reach.
    local_root: Option<PathBuf>,
    commit_mode: CommitMode,
    /// Retries of idempotent operations on remote stores (none on a local disk).
    retry: RetryPolicy,
    /// Counts this handle's requests (a statement's own clone, [`TableStore::metered`]).
    meter: Option<Arc<RequestMeter>>,
    /// The objects this statement has read (a statement's own clone, [`TableStore::metered`]).
    cache: Option<Arc<ObjectCache>>,
    /// The data and DV files this handle's statements have read, kept across statements
    /// ([`TableStore::keeping_objects`]); shared by every clone.
    kept: Option<Arc<ObjectCache>>,
    /// Storage options accepted but ignored (deltalake's that mean nothing here), as warnings.
    warnings: Arc<Vec<String>>,
    /// Caps the bytes this handle's reads hand out ([`TableStore::with_read_budget`]).
    read_budget: Option<Arc<ReadBudget>>,
    /// Faults injected into this handle's commit puts ([`TableStore::with_commit_faults`]).
    commit_faults: Option<Arc<CommitFaults>>,
}

mod commit_faults;
mod files;
mod listing;
mod local_read;
mod read_budget;
mod statement;
mod uploads;
mod writes;

pub use commit_faults::CommitFaults;
pub use files::{DirEntries, FileMeta};
pub use read_budget::ReadBudget;
pub use uploads::PendingUploads;

fn memory_stores() -> &'static Mutex<HashMap<String, Arc<InMemory>>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<InMemory>>>> = OnceLock::new();
    STORES.get_or_init(|| Mutex::new(HashMap::new()))
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn invalid(msg: impl Into<String>) -> StorageError {
    StorageError::new(StorageErrorKind::InvalidLocation, msg)
}

impl TableStore {
    /// Opens a location: a local path, `file://…`, `s3://bucket/prefix` (credentials, region and
    /// endpoint from the standard AWS environment variables) or `memory://name/prefix` (process-wide
    /// in-memory stores, shared by name).
    pub fn open(location: &str) -> Result<TableStore> {
        TableStore::open_with_options(location, &BTreeMap::new())
    }

    /// [`TableStore::open`] with object-store options (`AWS_ACCESS_KEY_ID`, `aws_endpoint_url`,
    /// `aws_region`, `aws_allow_http`, … — the keys object_store's S3 builder understands, in
    /// either case). Options override the standard environment variables; an unknown key is an
    /// error. Local and in-memory locations take no options and ignore them.
    pub fn open_with_options(
        location: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<TableStore> {
        let location = location.trim();
        if location.is_empty() {
            return Err(invalid("empty table location"));
        }
        let (latency, options) = take_latency_options(options)?;
        let options = &options;
        let opendal_dir = crate::opendal_fs::local_dir(location, options)?;
        let opendal_location = opendal_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned());
        let location = opendal_location.as_deref().unwrap_or(location);
        if let Some(cloud) = open_cloud(location, options)? {
            return Ok(TableStore {
                warnings: Arc::new(cloud.warnings),
                store: with_latency(cloud.store, &latency),
                prefix: cloud.prefix,
                root_uri: cloud.root_uri,
                local_dir: None,
                local_fs: None,
                local_root: None,
                commit_mode: cloud.commit_mode,
                retry: RetryPolicy::DEFAULT,
                meter: None,
                read_budget: None,
                commit_faults: None,
                cache: None,
                kept: None,
            });
        }
        if let Some(rest) = location.strip_prefix("memory://") {
            let (name, key) = rest.split_once('/').unwrap_or((rest, ""));
            let mut stores = memory_stores()
                .lock()
                .map_err(|_| invalid("memory store registry poisoned"))?;
            let store = stores
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(InMemory::new()))
                .clone();
            let key = key.trim_end_matches('/');
            return Ok(TableStore {
                store: with_latency(store, &latency),
                prefix: Path::from(key),
                root_uri: format!("memory://{name}/{key}")
                    .trim_end_matches('/')
                    .to_string(),
                local_dir: None,
                local_fs: None,
                local_root: None,
                commit_mode: CommitMode::PutIfAbsent,
                retry: RetryPolicy::DEFAULT,
                meter: None,
                read_budget: None,
                commit_faults: None,
                cache: None,
                kept: None,
                warnings: Default::default(),
            });
        }
        if latency.is_some() {
            return Err(invalid(
                "delta_rlc_latency_profile applies to object-store and memory:// locations (a local disk is read directly)",
            ));
        }
        let path_str = location.strip_prefix("file://").unwrap_or(location);
        if path_str.contains("://") {
            return Err(invalid(format!(
                "unsupported storage scheme in {location:?}"
            )));
        }
        let mut dir = PathBuf::from(path_str);
        if dir.is_relative() {
            let cwd = std::env::current_dir().map_err(|e| invalid(e.to_string()))?;
            dir = cwd.join(dir);
        }
        let dir = normalize(&dir);
        // Nothing is created here: a statement that only reads must not leave a directory behind.
        // The store is rooted at the nearest existing ancestor and the missing part of the path is
        // the prefix; writes create directories as they need them.
        let mut base = dir.clone();
        let mut missing: Vec<String> = Vec::new();
        while !base.is_dir() {
            let Some(name) = base.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                return Err(invalid(format!("cannot open {}", dir.display())));
            };
            missing.push(name);
            if !base.pop() {
                return Err(invalid(format!("cannot open {}", dir.display())));
            }
        }
        missing.reverse();
        // Verbatim, as `object_path` keeps every segment: `PathPart::from` would percent-encode
        // `~`, `%` or non-ASCII names, and the store would then map the root to another directory
        // than the one commits are written to.
        let prefix = Path::parse(missing.join("/"))
            .map_err(|e| invalid(format!("cannot open {}: {e}", dir.display())))?;
        let store =
            Arc::new(LocalFileSystem::new_with_prefix(&base).map_err(|e| invalid(e.to_string()))?);
        let root_uri = format!("file://{}", dir.display());
        // The root as the store maps paths (its existing part resolved by the store).
        let local_root = store
            .path_to_filesystem(&prefix.clone().join("x"))
            .ok()
            .and_then(|x| x.parent().map(std::path::Path::to_path_buf));
        Ok(TableStore {
            store: store.clone(),
            prefix,
            root_uri,
            local_dir: Some(dir),
            local_fs: Some(store),
            local_root,
            commit_mode: CommitMode::PutIfAbsent,
            retry: RetryPolicy {
                attempts: 1,
                ..RetryPolicy::DEFAULT
            },
            meter: None,
            read_budget: None,
            commit_faults: None,
            cache: None,
            kept: None,
            warnings: Default::default(),
        })
    }

    /// Opens a location without creating anything (for readers of tables that must exist).
    pub fn open_existing(location: &str) -> Result<TableStore> {
        let path_str = location.strip_prefix("file://").unwrap_or(location);
        if !path_str.contains("://") && !std::path::Path::new(path_str).is_dir() {
            return Err(StorageError::new(
                StorageErrorKind::NotFound,
                format!("no table at {location}: directory does not exist"),
            ));
        }
        TableStore::open(location)
    }

    /// Wraps an arbitrary object store (fault injectors, tests).
    pub fn from_object_store(
        store: Arc<dyn ObjectStore>,
        root_uri: &str,
        prefix: &str,
    ) -> TableStore {
        TableStore {
            store,
            prefix: Path::from(prefix),
            root_uri: root_uri.trim_end_matches('/').to_string(),
            local_dir: None,
            local_fs: None,
            local_root: None,
            commit_mode: CommitMode::PutIfAbsent,
            retry: RetryPolicy::DEFAULT,
            meter: None,
            read_budget: None,
            commit_faults: None,
            cache: None,
            kept: None,
            warnings: Default::default(),
        }
    }

    /// Same root, different object store (used to wrap the store with a fault injector).
    pub fn with_object_store(&self, store: Arc<dyn ObjectStore>) -> TableStore {
        TableStore {
            store,
            prefix: self.prefix.clone(),
            root_uri: self.root_uri.clone(),
            local_dir: None,
            local_fs: None,
            local_root: None,
            commit_mode: self.commit_mode,
            retry: self.retry,
            meter: self.meter.clone(),
            cache: self.cache.clone(),
            kept: self.kept.clone(),
            warnings: self.warnings.clone(),
            read_budget: self.read_budget.clone(),
            commit_faults: self.commit_faults.clone(),
        }
    }

    /// The same store with another retry policy for idempotent operations.
    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> TableStore {
        self.retry = retry;
        self
    }

    /// How commits are made atomic on this store.
    pub fn commit_mode(&self) -> CommitMode {
        self.commit_mode
    }

    /// Whether a listing from a name on still reads every name of the directory (a local disk's
    /// readdir), so its cost grows with the directory rather than with what follows the name.
    pub fn listing_reads_whole_dir(&self) -> bool {
        self.local_fs.is_some()
    }

    pub fn root_uri(&self) -> &str {
        &self.root_uri
    }

    /// What tells two handles on one table apart from handles on two: the root as the local
    /// file system resolves it (symbolic links, `.`, a trailing slash), else the root URI. Two
    /// spellings of one table (`'/data/t'` and `'/data/t/'`) have one identity.
    pub fn identity(&self) -> String {
        match &self.local_root {
            Some(root) => format!("file://{}", root.display()),
            None => self.root_uri.trim_end_matches('/').to_string(),
        }
    }

    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    pub fn local_dir(&self) -> Option<&std::path::Path> {
        self.local_dir.as_deref()
    }

    /// Object path of a decoded relative path. Segments are used verbatim (a directory named
    /// `p=a%3Ab` is stored under exactly that name, as Spark does); unsafe segments are rejected
    /// (defence in depth: the engine has already resolved the path under the root).
    pub fn object_path(&self, rel: &str) -> Result<Path> {
        for seg in rel.split('/') {
            if seg.is_empty()
                || seg == "."
                || seg == ".."
                || seg.chars().any(|c| c.is_ascii_control())
            {
                return Err(StorageError::new(
                    StorageErrorKind::InvalidPath,
                    format!("unsafe path {rel:?}"),
                ));
            }
        }
        let full = if self.prefix.as_ref().is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.prefix.as_ref())
        };
        Path::parse(&full).map_err(|e| {
            StorageError::new(
                StorageErrorKind::InvalidPath,
                format!("unsafe path {rel:?}: {e}"),
            )
        })
    }

    fn relative(&self, p: &Path) -> String {
        let parts: Vec<String> = match p.prefix_match(&self.prefix) {
            Some(it) => it.map(|part| part.as_ref().to_string()).collect(),
            None => p.parts().map(|part| part.as_ref().to_string()).collect(),
        };
        parts.join("/")
    }

    pub async fn get(&self, rel: &str) -> Result<Bytes> {
        let p = self.object_path(rel)?;
        self.check_read_budget(rel)?;
        if let Some(bytes) = self.cached(rel) {
            self.charge_read(rel, bytes.len())?;
            return Ok(bytes);
        }
        let _req = self.track(RequestKind::Get, 1, rel);
        let bytes = match self.read_local_whole(&p, rel)? {
            Some(bytes) => bytes,
            None => {
                let (store, p) = (&self.store, &p);
                retrying(self.retry, move || async move {
                    let r = store
                        .get(p)
                        .await
                        .map_err(|e| StorageError::from_os(e, rel))?;
                    r.bytes().await.map_err(|e| StorageError::from_os(e, rel))
                })
                .await?
            }
        };
        for c in [&self.cache, &self.kept].into_iter().flatten() {
            c.insert(rel, &bytes);
        }
        self.charge_read(rel, bytes.len())?;
        Ok(bytes)
    }

    /// Byte ranges of one object (fetched together where the store can). A range past the end of
    /// the object is an error.
    pub async fn get_ranges(
        &self,
        rel: &str,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<Bytes>> {
        let p = self.object_path(rel)?;
        self.check_read_budget(rel)?;
        let charged = |parts: Vec<Bytes>| {
            self.charge_read(rel, parts.iter().map(Bytes::len).sum())
                .map(|()| parts)
        };
        if let Some(parts) = [&self.cache, &self.kept]
            .into_iter()
            .flatten()
            .find_map(|c| c.get_ranges(rel, ranges))
        {
            return charged(parts);
        }
        let _req = self.track(RequestKind::Get, coalesced_requests(ranges), rel);
        if let Some(parts) = self.read_local_ranges(&p, rel, ranges)? {
            return charged(parts);
        }
        let (store, p) = (&self.store, &p);
        let parts = retrying(self.retry, move || async move {
            store
                .get_ranges(p, ranges)
                .await
                .map_err(|e| StorageError::from_os(e, rel))
        })
        .await?;
        charged(parts)
    }

    pub async fn head(&self, rel: &str) -> Result<ObjectInfo> {
        let p = self.object_path(rel)?;
        let m = self.head_meta(&p, rel).await?;
        Ok(ObjectInfo {
            path: rel.to_string(),
            size: m.size,
            last_modified_ms: m.last_modified.timestamp_millis(),
            e_tag: m.e_tag,
        })
    }

    /// The store's HEAD of `p` (one request, retried).
    pub(crate) async fn head_meta(&self, p: &Path, rel: &str) -> Result<object_store::ObjectMeta> {
        let _req = self.track(RequestKind::Head, 1, rel);
        retrying(self.retry, move || async move {
            self.store
                .head(p)
                .await
                .map_err(|e| StorageError::from_os(e, rel))
        })
        .await
    }

    /// A listed object as this store names it (a path relative to the root).
    pub(crate) fn listed(&self, m: object_store::ObjectMeta) -> ObjectInfo {
        ObjectInfo {
            path: self.relative(&m.location),
            size: m.size,
            last_modified_ms: m.last_modified.timestamp_millis(),
            e_tag: m.e_tag,
        }
    }

    pub async fn exists(&self, rel: &str) -> Result<bool> {
        match self.head(rel).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind == StorageErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Recursive listing under a relative directory ("" = the root). Paths are relative to the root.
    /// On a local root, entries reached through a symbolic link (a linked file, or anything under a
    /// linked directory) are left out: they are not the table's.
    pub async fn list(&self, rel_dir: &str) -> Result<Vec<ObjectInfo>> {
        let metas = self.list_metas(rel_dir).await?;
        let mut out: Vec<ObjectInfo> = metas.into_iter().map(|m| self.listed(m)).collect();
        if self.local_fs.is_some() {
            out.retain(|o| {
                self.object_path(&o.path)
                    .and_then(|p| self.check_local(&p, &o.path))
                    .is_ok()
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Every object under `rel_dir` ("" = the root), as the store lists it (one LIST).
    pub(crate) async fn list_metas(&self, rel_dir: &str) -> Result<Vec<object_store::ObjectMeta>> {
        let p = self.dir_path(rel_dir)?;
        let _req = self.track(RequestKind::List, 1, rel_dir);
        let (store, p) = (&self.store, &p);
        retrying(self.retry, move || async move {
            store
                .list(Some(p))
                .try_collect::<Vec<_>>()
                .await
                .map_err(|e| StorageError::from_os(e, rel_dir))
        })
        .await
    }

    /// The objects directly under `rel_dir` ("" = the root) and its sub-directories, as the
    /// store lists them (one LIST with a delimiter).
    pub(crate) async fn list_delimited(&self, rel_dir: &str) -> Result<object_store::ListResult> {
        let p = self.dir_path(rel_dir)?;
        let _req = self.track(RequestKind::List, 1, rel_dir);
        let (store, p) = (&self.store, &p);
        retrying(self.retry, move || async move {
            store
                .list_with_delimiter(Some(p))
                .await
                .map_err(|e| StorageError::from_os(e, rel_dir))
        })
        .await
    }

    fn dir_path(&self, rel_dir: &str) -> Result<Path> {
        match rel_dir.is_empty() {
            true => Ok(self.prefix.clone()),
            false => self.object_path(rel_dir),
        }
    }

    /// Files directly in a relative directory (not recursive), sorted by name.
    pub async fn list_dir(&self, rel_dir: &str) -> Result<Vec<ObjectInfo>> {
        let res = self.list_delimited(rel_dir).await?;
        let mut out: Vec<ObjectInfo> = res.objects.into_iter().map(|m| self.listed(m)).collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    pub async fn delete(&self, rel: &str) -> Result<()> {
        let p = self.object_path(rel)?;
        self.check_local(&p, rel)?;
        let _req = self.track(RequestKind::Delete, 1, rel);
        let (store, p) = (&self.store, &p);
        retrying(self.retry, move || async move {
            match store.delete(p).await {
                Ok(()) => Ok(()),
                Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(StorageError::from_os(e, rel)),
            }
        })
        .await
    }
}

fn normalize(p: &std::path::Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_credentials_are_not_retryable_but_service_errors_are() {
        let denied = object_store::Error::PermissionDenied {
            path: "t/_delta_log".into(),
            source: "403 Forbidden".into(),
        };
        let e = StorageError::from_os(denied, "_delta_log");
        assert_eq!(e.kind, StorageErrorKind::InvalidLocation);
        assert!(!crate::retry::is_transient(&e));
        let slow = object_store::Error::Generic {
            store: "S3",
            source: "503 SlowDown".into(),
        };
        assert!(crate::retry::is_transient(&StorageError::from_os(
            slow, "x"
        )));
    }

    #[tokio::test]
    async fn local_put_if_absent_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let store = TableStore::open(dir.path().to_str().unwrap()).unwrap();
        let a = store
            .put_if_absent(
                "_delta_log/00000000000000000000.json",
                Bytes::from_static(b"a"),
            )
            .await;
        let b = store
            .put_if_absent(
                "_delta_log/00000000000000000000.json",
                Bytes::from_static(b"b"),
            )
            .await;
        assert!(matches!(a, PutOutcome::Created));
        assert!(matches!(b, PutOutcome::AlreadyExists));
        assert_eq!(
            store
                .get("_delta_log/00000000000000000000.json")
                .await
                .unwrap(),
            Bytes::from_static(b"a")
        );
        let listed = store.list_dir("_delta_log").await.unwrap();
        assert_eq!(listed.len(), 1, "no temporary files left: {listed:?}");
    }

    #[tokio::test]
    async fn local_paths_keep_percent_signs_verbatim() {
        let dir = tempfile::tempdir().unwrap();
        let store = TableStore::open(dir.path().to_str().unwrap()).unwrap();
        store
            .put("p=a%3Ab/c d/f.parquet", Bytes::from_static(b"x"))
            .await
            .unwrap();
        assert!(dir.path().join("p=a%3Ab/c d/f.parquet").exists());
        let listed = store.list("").await.unwrap();
        assert_eq!(listed[0].path, "p=a%3Ab/c d/f.parquet");
        assert_eq!(
            store.get("p=a%3Ab/c d/f.parquet").await.unwrap(),
            Bytes::from_static(b"x")
        );
    }

    #[tokio::test]
    async fn memory_stores_are_shared_by_name_and_paths_round_trip() {
        let a = TableStore::open("memory://shared-test/t").unwrap();
        let b = TableStore::open("memory://shared-test/t").unwrap();
        a.put("p=a%3Ab/f.parquet", Bytes::from_static(b"x"))
            .await
            .unwrap();
        assert_eq!(
            b.get("p=a%3Ab/f.parquet").await.unwrap(),
            Bytes::from_static(b"x")
        );
        let listed = b.list("").await.unwrap();
        assert_eq!(listed[0].path, "p=a%3Ab/f.parquet");
        assert!(matches!(
            b.put_if_absent("p=a%3Ab/f.parquet", Bytes::new()).await,
            PutOutcome::AlreadyExists
        ));
        assert_eq!(
            a.object_path("../x").unwrap_err().kind,
            StorageErrorKind::InvalidPath
        );
    }
}
