//! How a table is opened: object-store options and conflict settings, given explicitly (nothing is
//! read from the process environment but the object store's standard credential chain).

use std::collections::BTreeMap;

use delta_rlc_engine::conflict::{ConflictConfig, IsolationLevel};

/// Options for [`crate::Table::open_with`] and [`crate::CreateBuilder::options`].
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Object-store options, e.g. `AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
    /// `AWS_ALLOW_HTTP` (any case). They override the standard environment variables. Unknown
    /// keys are an error when the table is opened.
    pub storage_options: BTreeMap<String, String>,
    /// How commits are checked against concurrent ones.
    pub conflict: ConflictSettings,
    /// Bytes a statement's joins may hold before they spill to disk (a MERGE's source and join);
    /// `None` = no limit. About half goes to the join's spilling sorts, a quarter to the source
    /// and key sets held in memory.
    pub memory_limit: Option<usize>,
}

impl TableOptions {
    /// Adds one object-store option.
    pub fn storage_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.storage_options.insert(key.into(), value.into());
        self
    }

    /// Sets the memory limit from a size like `1.5GB`, `512MB` or a byte count.
    pub fn memory_limit_str(self, size: &str) -> crate::Result<Self> {
        Ok(self.memory_limit(delta_rlc_engine::env::parse_byte_size(size)?))
    }

    /// Sets the memory limit (bytes) of each statement's joins.
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// The engine environment these options describe.
    pub(crate) fn env(&self) -> delta_rlc_engine::env::Env {
        delta_rlc_engine::env::Env {
            memory_limit: self.memory_limit,
            ..delta_rlc_engine::env::Env::default()
        }
    }

    /// Sets the conflict settings.
    pub fn conflict(mut self, conflict: ConflictSettings) -> Self {
        self.conflict = conflict;
        self
    }
}

/// Options of one commit (deltalake's `CommitProperties`).
#[derive(Debug, Clone, Default)]
pub struct CommitOptions {
    /// Fields added to the commit's `commitInfo` (e.g. a job or run id). A name `commitInfo`
    /// uses itself (`operation`, `timestamp`, …) is refused.
    pub metadata: BTreeMap<String, String>,
    /// This commit's bound on attempts (lost races), instead of the table's setting.
    pub max_commit_attempts: Option<u32>,
    /// Application transaction versions recorded with the commit (`txn` actions: idempotent
    /// writes, deltalake's `app_transactions`); read back with
    /// [`crate::TableSnapshot::app_transaction_version`].
    pub app_transactions: Vec<AppTransaction>,
}

/// One application's progress marker, committed atomically with the data (a `txn` action).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppTransaction {
    /// The application's id.
    pub app_id: String,
    /// Its version (e.g. the last batch id written).
    pub version: i64,
    /// When (milliseconds since the epoch; the commit's clock when None).
    pub last_updated: Option<i64>,
}

impl CommitOptions {
    /// Adds one `commitInfo` field.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Records `app_id`'s `version` with this commit.
    pub fn app_transaction(mut self, app_id: impl Into<String>, version: i64) -> Self {
        self.app_transactions.push(AppTransaction {
            app_id: app_id.into(),
            version,
            last_updated: None,
        });
        self
    }
}

/// The isolation level commits are checked under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Isolation {
    /// Every transaction, including blind appends, is serializable against every other.
    Serializable,
    /// Writes are serializable; a blind append may be ordered before a read it did not see
    /// (Delta's default).
    WriteSerializable,
    /// Snapshot isolation (reads are not checked against concurrent appends).
    SnapshotIsolation,
}

/// Conflict settings: row-level concurrency on by default; `legacy` reproduces open-source
/// Delta's checks exactly (every reconcile tier off).
#[derive(Debug, Clone)]
pub struct ConflictSettings {
    /// Reproduce OSS Delta exactly: abort whenever a concurrent commit might overlap.
    pub legacy: bool,
    /// The isolation level; `None` uses the table's `delta.isolationLevel` (default
    /// WriteSerializable).
    pub isolation: Option<Isolation>,
    /// How many times a commit may lose the race for a version before giving up.
    pub max_commit_attempts: u32,
    /// VACUUM refuses a retention below the table's `delta.deletedFileRetentionDuration`
    /// unless this is false (a fixed floor still protects in-flight writers).
    pub retention_duration_check: bool,
}

impl Default for ConflictSettings {
    fn default() -> Self {
        let engine = ConflictConfig::default();
        ConflictSettings {
            legacy: engine.legacy,
            isolation: None,
            max_commit_attempts: engine.max_attempts,
            retention_duration_check: engine.retention_duration_check,
        }
    }
}

impl ConflictSettings {
    pub(crate) fn to_engine(&self) -> ConflictConfig {
        let mut c = ConflictConfig {
            legacy: self.legacy,
            max_attempts: self.max_commit_attempts,
            retention_duration_check: self.retention_duration_check,
            ..ConflictConfig::default()
        };
        c.isolation = self.isolation.map(|i| match i {
            Isolation::Serializable => IsolationLevel::Serializable,
            Isolation::WriteSerializable => IsolationLevel::WriteSerializable,
            Isolation::SnapshotIsolation => IsolationLevel::SnapshotIsolation,
        });
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_map_to_the_engine() {
        let c = ConflictSettings {
            legacy: true,
            isolation: Some(Isolation::Serializable),
            max_commit_attempts: 7,
            retention_duration_check: false,
        }
        .to_engine();
        assert!(c.legacy && !c.retention_duration_check);
        assert_eq!(c.max_attempts, 7);
        assert_eq!(c.isolation, Some(IsolationLevel::Serializable));
        let d = ConflictSettings::default().to_engine();
        assert!(!d.legacy && d.isolation.is_none() && d.retention_duration_check);
    }
}
