//! A handle on one table location: storage, environment (clock, ids) and conflict configuration.

use std::sync::Arc;

use delta_rlc_storage::TableStore;

use crate::conflict::ConflictConfig;
use crate::env::Env;
use crate::error::Result;
use crate::snapshot::Snapshot;

#[derive(Debug, Clone)]
pub struct DeltaTable {
    pub store: TableStore,
    pub env: Env,
    pub conflict: ConflictConfig,
}

impl DeltaTable {
    /// Opens (without requiring that a table exists yet) a location.
    pub fn open(location: &str) -> Result<DeltaTable> {
        Ok(DeltaTable {
            store: TableStore::open(location)?,
            env: Env::default(),
            conflict: ConflictConfig::from_env()?,
        })
    }

    /// Opens a location that must hold a table.
    pub fn open_existing(location: &str) -> Result<DeltaTable> {
        Ok(DeltaTable {
            store: TableStore::open_existing(location)?,
            env: Env::default(),
            conflict: ConflictConfig::from_env()?,
        })
    }

    pub fn with_env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }

    pub fn with_conflict_config(mut self, c: ConflictConfig) -> Self {
        self.conflict = c;
        self
    }

    pub async fn snapshot(&self, version: Option<u64>) -> Result<Arc<Snapshot>> {
        Snapshot::load(&self.store, version).await
    }

    /// True if the location has at least one commit.
    pub async fn exists(&self) -> Result<bool> {
        let listing = crate::snapshot::list_log(&self.store).await?;
        Ok(listing
            .iter()
            .any(|o| o.path.ends_with(".json") || o.path.contains(".checkpoint")))
    }
}
