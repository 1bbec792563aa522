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
    /// Parquet settings for the data files this handle's operations write (None: defaults).
    pub parquet: Option<Arc<crate::parquet_settings::ParquetSettings>>,
}

/// A shared slot for a table's latest loaded snapshot.
pub type SnapshotCache = Arc<std::sync::Mutex<Option<HeldSnapshot>>>;

/// A snapshot known to have been the latest version at `latest_at_ms` (the clock before the
/// listing or probe that found no later commit): every later commit was written after that time,
/// which is what lets the next update read commits in turn instead of listing
/// (`snapshot::probe`).
#[derive(Debug, Clone)]
pub struct HeldSnapshot {
    pub snapshot: Arc<Snapshot>,
    pub latest_at_ms: i64,
}

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
        // Options the store accepted but ignores (deltalake's that mean nothing here): once each.
        for w in store.ignored_option_warnings() {
            crate::warnings::warn_once(&format!("option {} {w}", store.root_uri()), w);
        }
        DeltaTable {
            store,
            env: Env::default(),
            conflict: ConflictConfig::default(),
            latest: SnapshotCache::default(),
            parquet: None,
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
    /// loaded when that is at or before it: the latest by reading the commits after it in turn
    /// where a listing would read the whole log directory (`snapshot::probe`), else from a
    /// listing of the log after its checkpoint.
    pub async fn snapshot(&self, version: Option<u64>) -> Result<Arc<Snapshot>> {
        let held = self.held();
        let started = self.env.clock.now_ms();
        if version.is_none() {
            if let Some(snap) = self.probe(held.as_ref(), started).await? {
                return Ok(snap);
            }
        }
        let (snap, replayed) = match &held {
            Some(p) if version.is_none_or(|v| v >= p.snapshot.version) => {
                Snapshot::load_after_replayed(&self.store, &p.snapshot, version).await?
            }
            _ => (Snapshot::load(&self.store, version).await?, false),
        };
        crate::warnings::check_commit_interlock(self.store.root_uri(), &snap);
        match (version, &held) {
            (None, _) => self.hold(&snap, started),
            // A pinned version newer than the held one, built on it (the same table: its commits
            // replayed onto the held snapshot), is held too, with the held one's time: every
            // commit after it is one after the held version, all written after that time, so the
            // probe's premise (`HeldSnapshot::latest_at_ms`) still holds. The next pinned load
            // (a Python table after its own commit) then reads only the commits after it, not
            // every commit since the table was opened. Never replaces a newer held snapshot.
            (Some(v), Some(p)) if replayed && v > p.snapshot.version => {
                self.hold_if_newer(&snap, p.latest_at_ms)
            }
            _ => {}
        }
        Ok(snap)
    }

    /// The latest snapshot, or None when the location has no table: [`DeltaTable::exists`] and
    /// [`DeltaTable::snapshot`]`(None)` with one log listing instead of two (none when the held
    /// snapshot can be brought up to date by reading the commits after it).
    pub async fn latest_if_exists(&self) -> Result<Option<Arc<Snapshot>>> {
        let held = self.held();
        let started = self.env.clock.now_ms();
        if let Some(snap) = self.probe(held.as_ref(), started).await? {
            return Ok(Some(snap));
        }
        let previous = held.map(|h| h.snapshot);
        let Some(snap) = Snapshot::load_latest_if_exists(&self.store, previous.as_ref()).await?
        else {
            return Ok(None);
        };
        crate::warnings::check_commit_interlock(self.store.root_uri(), &snap);
        self.hold(&snap, started);
        Ok(Some(snap))
    }

    fn held(&self) -> Option<HeldSnapshot> {
        self.latest.lock().ok().and_then(|g| g.clone())
    }

    /// [`DeltaTable::hold`], unless a newer snapshot is held already.
    pub(crate) fn hold_if_newer(&self, snap: &Arc<Snapshot>, latest_at_ms: i64) {
        if let Ok(mut g) = self.latest.lock() {
            if g.as_ref().is_none_or(|h| h.snapshot.version < snap.version) {
                *g = Some(HeldSnapshot {
                    snapshot: Arc::clone(snap),
                    latest_at_ms,
                });
            }
        }
    }

    fn hold(&self, snap: &Arc<Snapshot>, latest_at_ms: i64) {
        if let Ok(mut g) = self.latest.lock() {
            *g = Some(HeldSnapshot {
                snapshot: Arc::clone(snap),
                latest_at_ms,
            });
        }
    }

    /// The held snapshot brought up to date by reading the commits after it, where that is both
    /// cheaper than a listing (a local disk reads every name of the log directory to list it)
    /// and proven sound (`snapshot::probe`); else None.
    async fn probe(
        &self,
        held: Option<&HeldSnapshot>,
        now_ms: i64,
    ) -> Result<Option<Arc<Snapshot>>> {
        let Some(held) = held else {
            return Ok(None);
        };
        if !self.store.listing_reads_whole_dir() {
            return Ok(None);
        }
        let age = now_ms.saturating_sub(held.latest_at_ms);
        let Some(snap) =
            crate::snapshot::probe::probe_latest(&self.store, &held.snapshot, age).await?
        else {
            return Ok(None);
        };
        crate::warnings::check_commit_interlock(self.store.root_uri(), &snap);
        self.hold(&snap, now_ms);
        Ok(Some(snap))
    }

    /// True if the location has at least one commit. On a local disk, first one stat of the
    /// commit file of the last snapshot this handle loaded (still there: a commit); then from a
    /// listing of only the log after that snapshot's checkpoint (any commit or checkpoint listed
    /// there exists now); when that shows none, from the whole log.
    pub async fn exists(&self) -> Result<bool> {
        let is_log_file = |o: &delta_rlc_storage::ObjectInfo| {
            o.path.ends_with(".json") || o.path.contains(".checkpoint")
        };
        let held = self.held().map(|h| h.snapshot);
        // A commit file of a version this handle loaded still there is a commit.
        if let Some(held) = held
            .as_ref()
            .filter(|_| self.store.listing_reads_whole_dir())
        {
            let name = delta_rlc_protocol::log_path::commit_file_name(held.version);
            let path = format!("{}/{name}", delta_rlc_protocol::log_path::LOG_DIR);
            if self.store.exists(&path).await? {
                return Ok(true);
            }
        }
        if let Some(start) = held.and_then(|s| s.checkpoint_version) {
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
