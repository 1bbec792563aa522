//! A handle on one table location: storage, environment (clock, ids) and conflict configuration.

use std::sync::Arc;

use delta_rlc_storage::TableStore;

use crate::conflict_config::ConflictConfig;
use crate::env::Env;
use crate::error::Result;
use crate::snapshot::Snapshot;

#[derive(Debug, Clone)]
pub struct DeltaTable {
    pub store: TableStore,
    pub env: Env,
    pub conflict: ConflictConfig,
    /// The latest snapshot this handle (and its clones) loaded: the next latest-version load
    /// replays only the commits after it (`Snapshot::load_after`).
    pub latest: SnapshotCache,
}

/// A shared slot for a table's latest loaded snapshot.
pub type SnapshotCache = Arc<std::sync::Mutex<Option<Arc<Snapshot>>>>;

impl DeltaTable {
    /// Opens (without requiring that a table exists yet) a location, with the default conflict
    /// settings. Nothing is read from the process environment except the object store's standard
    /// credential variables; callers that honour `DELTA_RLC_CONF` (the CLI) apply
    /// [`ConflictConfig::from_env`] themselves.
    pub fn open(location: &str) -> Result<DeltaTable> {
        Ok(DeltaTable::on_store(TableStore::open(location)?))
    }

    /// Opens a location that must hold a table.
    pub fn open_existing(location: &str) -> Result<DeltaTable> {
        Ok(DeltaTable::on_store(TableStore::open_existing(location)?))
    }

    /// A table on an already opened store (e.g. one opened with storage options).
    pub fn on_store(store: TableStore) -> DeltaTable {
        DeltaTable {
            store,
            env: Env::default(),
            conflict: ConflictConfig::default(),
            latest: SnapshotCache::default(),
        }
    }

    pub fn with_env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }

    pub fn with_conflict_config(mut self, c: ConflictConfig) -> Self {
        self.conflict = c;
        self
    }

    /// Loads `version` (None = latest), incrementally from the last latest snapshot this handle
    /// loaded when that is at or before it.
    pub async fn snapshot(&self, version: Option<u64>) -> Result<Arc<Snapshot>> {
        let previous = self.latest.lock().ok().and_then(|g| g.clone());
        let snap = match previous {
            Some(p) if version.is_none_or(|v| v >= p.version) => {
                Snapshot::load_after(&self.store, &p, version).await?
            }
            _ => Snapshot::load(&self.store, version).await?,
        };
        crate::warnings::check_commit_interlock(self.store.root_uri(), &snap);
        if version.is_none() {
            if let Ok(mut g) = self.latest.lock() {
                *g = Some(Arc::clone(&snap));
            }
        }
        Ok(snap)
    }

    /// The latest snapshot, or None when the location has no table: [`DeltaTable::exists`] and
    /// [`DeltaTable::snapshot`]`(None)` with one log listing instead of two.
    pub async fn latest_if_exists(&self) -> Result<Option<Arc<Snapshot>>> {
        let previous = self.latest.lock().ok().and_then(|g| g.clone());
        let Some(snap) = Snapshot::load_latest_if_exists(&self.store, previous.as_ref()).await?
        else {
            return Ok(None);
        };
        crate::warnings::check_commit_interlock(self.store.root_uri(), &snap);
        if let Ok(mut g) = self.latest.lock() {
            *g = Some(Arc::clone(&snap));
        }
        Ok(Some(snap))
    }

    /// True if the location has at least one commit. First from a listing of only the log after
    /// the checkpoint of the last snapshot this handle loaded (any commit or checkpoint listed
    /// there exists now); when that shows none, from the whole log.
    pub async fn exists(&self) -> Result<bool> {
        let is_log_file = |o: &delta_rlc_storage::ObjectInfo| {
            o.path.ends_with(".json") || o.path.contains(".checkpoint")
        };
        let start = self
            .latest
            .lock()
            .ok()
            .and_then(|g| g.as_ref().and_then(|s| s.checkpoint_version));
        if let Some(start) = start {
            let tail = self
                .store
                .list_dir_after(
                    delta_rlc_protocol::log_path::LOG_DIR,
                    &format!("{start:020}"),
                )
                .await?;
            if tail.iter().any(is_log_file) {
                return Ok(true);
            }
        }
        let listing = crate::snapshot::list_log(&self.store).await?;
        Ok(listing.iter().any(is_log_file))
    }
}
