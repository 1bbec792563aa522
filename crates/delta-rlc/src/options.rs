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
    /// Fields added to the commit's `commitInfo` (e.g. a job or run id), any JSON value. A name
    /// `commitInfo` uses itself (`operation`, `timestamp`, …) is refused; `operationParameters`
    /// (an object) adds to the operation's own; `userName` and the other fields Spark reads as
    /// text must be strings.
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// This commit's bound on attempts (lost races), instead of the table's setting.
    pub max_commit_attempts: Option<u32>,
    /// Application transaction versions recorded with the commit (`txn` actions: idempotent
    /// writes, deltalake's `app_transactions`); read back with
    /// [`crate::TableSnapshot::app_transaction_version`].
    pub app_transactions: Vec<AppTransaction>,
    /// This statement's re-runs after a true conflict, instead of the table's
    /// [`ConflictSettings::retry_on_conflict`] (see there; at most 100).
    pub retry_on_conflict: Option<u32>,
    /// No checkpoint after this commit, even at a `delta.checkpointInterval` version (deltalake's
    /// `PostCommitHookProperties(create_checkpoint=False)`); the next commit at an interval
    /// writes one.
    pub skip_checkpoint: bool,
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
    /// Adds one `commitInfo` field (a string, a number, or any `serde_json::Value`).
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
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
    /// Re-execution on a true conflict, opt in (0, the default, = off; at most 100): a
    /// statement whose commit aborted is planned again at the latest version and run again, up
    /// to this many more times, with exponential backoff and jitter; its outcome's
    /// [`CommitOutcome::earlier_runs`](crate::CommitOutcome::earlier_runs) says why. Only
    /// statements whose input can be read again re-run (SQL, whose sources are re-evaluated;
    /// builders given record batches); an unknown commit outcome never re-runs.
    ///
    /// The contract: turn it on only for statements whose input does not come from reading this
    /// table outside the statement. A job that reads a value and then writes an UPDATE computed
    /// from it must not re-run the UPDATE at a newer version; the same job as one statement may.
    pub retry_on_conflict: u32,
    /// What the checks of one commit attempt (every winner found after one lost race) may spend
    /// in wall time; past it the commit aborts with reason
    /// [`AbortReason::BudgetExceeded`](crate::AbortReason::BudgetExceeded), never skipping a
    /// check. Default 30 s.
    pub reconcile_time_budget: std::time::Duration,
    /// The same, in bytes read from winners' files and deletion vectors. Default 2 GiB.
    pub reconcile_byte_budget: u64,
}

impl Default for ConflictSettings {
    fn default() -> Self {
        let engine = ConflictConfig::default();
        ConflictSettings {
            legacy: engine.legacy,
            isolation: None,
            max_commit_attempts: engine.max_attempts,
            retention_duration_check: engine.retention_duration_check,
            retry_on_conflict: engine.reexecution.reruns,
            reconcile_time_budget: engine.budget.time,
            reconcile_byte_budget: engine.budget.bytes,
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
        c.reexecution.reruns = self.retry_on_conflict;
        c.budget.time = self.reconcile_time_budget;
        c.budget.bytes = self.reconcile_byte_budget;
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
            retry_on_conflict: 3,
            reconcile_time_budget: std::time::Duration::from_millis(250),
            reconcile_byte_budget: 4096,
        }
        .to_engine();
        assert_eq!(c.budget.time, std::time::Duration::from_millis(250));
        assert_eq!(c.budget.bytes, 4096);
        assert!(c.legacy && !c.retention_duration_check);
        assert_eq!(c.max_attempts, 7);
        assert_eq!(c.reexecution.reruns, 3);
        assert_eq!(c.isolation, Some(IsolationLevel::Serializable));
        let d = ConflictSettings::default().to_engine();
        assert!(!d.legacy && d.isolation.is_none() && d.retention_duration_check);
    }
}

/// Parquet settings for the data files an operation writes (deltalake's `WriterProperties`).
/// Values are checked when applied ([`crate::Table::with_writer_settings`]): an unknown codec,
/// encoding or statistics level is refused, never ignored. Column names are the table's.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct WriterSettings {
    /// `snappy`, `zstd(3)`, `gzip(6)`, `brotli(1)`, `lz4`, `lz4_raw`, `uncompressed`.
    pub compression: Option<String>,
    /// Rows per row group at most.
    pub max_row_group_size: Option<usize>,
    /// Bytes per data page (best effort, as Parquet writers do).
    pub data_page_size_limit: Option<usize>,
    /// Bytes per dictionary page.
    pub dictionary_page_size_limit: Option<usize>,
    /// Rows per data page.
    pub data_page_row_count_limit: Option<usize>,
    /// Rows the writer encodes at once.
    pub write_batch_size: Option<usize>,
    /// Longest min/max statistic kept in the file's metadata.
    pub statistics_truncate_length: Option<usize>,
    /// Settings of every column.
    pub default_column: ColumnWriterSettings,
    /// Settings of named columns (they win over `default_column`).
    pub columns: BTreeMap<String, ColumnWriterSettings>,
}

/// One column's Parquet settings.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ColumnWriterSettings {
    /// Dictionary encoding first (the default) or not.
    pub dictionary_enabled: Option<bool>,
    /// The encoding without (or after) a dictionary: `PLAIN`, `DELTA_BINARY_PACKED`,
    /// `DELTA_LENGTH_BYTE_ARRAY`, `DELTA_BYTE_ARRAY`, `BYTE_STREAM_SPLIT`, `RLE`.
    pub encoding: Option<String>,
    /// `NONE`, `CHUNK` or `PAGE`.
    pub statistics_enabled: Option<String>,
    /// A bloom filter, with its false-positive probability and distinct-value count if given.
    pub bloom_filter: Option<(Option<f64>, Option<u64>)>,
}

impl WriterSettings {
    pub(crate) fn to_engine(
        &self,
    ) -> crate::Result<delta_rlc_engine::parquet_settings::ParquetSettings> {
        use delta_rlc_engine::parquet_settings::ParquetSettings;
        let compression = self
            .compression
            .as_deref()
            .map(|c| {
                c.to_ascii_lowercase()
                    .parse::<parquet::basic::Compression>()
                    .map_err(|e| crate::Error::invalid(format!("compression {c:?}: {e}")))
            })
            .transpose()?;
        // Every codec Parquet defines but LZO is built in (DataFusion turns on Parquet's default
        // codecs, which reads need anyway); LZO has no Rust implementation and would fail only
        // when a file is written, so it is refused here.
        if let Some(c) = compression {
            if matches!(c, parquet::basic::Compression::LZO) {
                return Err(crate::Error::new(
                    crate::ErrorKind::Unsupported,
                    "compression LZO is not built in (snappy, gzip, brotli, lz4, zstd, uncompressed are)",
                ));
            }
        }
        // Every column shares the default encoding, so only PLAIN fits them all (an encoding
        // for a type is set per column, where it is checked against the column's type).
        if let Some(e) = &self.default_column.encoding {
            if !e.eq_ignore_ascii_case("plain") {
                return Err(crate::Error::new(
                    crate::ErrorKind::Unsupported,
                    format!("encoding {e} for every column: set it per column (only PLAIN applies to every type)"),
                ));
            }
        }
        for (name, value) in [
            ("max_row_group_size", self.max_row_group_size),
            ("data_page_size_limit", self.data_page_size_limit),
            (
                "dictionary_page_size_limit",
                self.dictionary_page_size_limit,
            ),
            ("data_page_row_count_limit", self.data_page_row_count_limit),
            ("write_batch_size", self.write_batch_size),
            (
                "statistics_truncate_length",
                self.statistics_truncate_length,
            ),
        ] {
            if value == Some(0) {
                return Err(crate::Error::invalid(format!("{name} must be at least 1")));
            }
        }
        Ok(ParquetSettings {
            compression,
            max_row_group_size: self.max_row_group_size,
            data_page_size_limit: self.data_page_size_limit,
            dictionary_page_size_limit: self.dictionary_page_size_limit,
            data_page_row_count_limit: self.data_page_row_count_limit,
            write_batch_size: self.write_batch_size,
            statistics_truncate_length: self.statistics_truncate_length,
            default_column: self.default_column.to_engine()?,
            columns: self
                .columns
                .iter()
                .map(|(n, c)| Ok((n.clone(), c.to_engine()?)))
                .collect::<crate::Result<_>>()?,
        })
    }
}

impl ColumnWriterSettings {
    fn to_engine(&self) -> crate::Result<delta_rlc_engine::parquet_settings::ColumnSettings> {
        let encoding = self
            .encoding
            .as_deref()
            .map(|e| {
                e.to_ascii_uppercase()
                    .parse::<parquet::basic::Encoding>()
                    .map_err(|x| crate::Error::invalid(format!("encoding {e:?}: {x}")))
            })
            .transpose()?;
        if matches!(
            encoding,
            Some(
                parquet::basic::Encoding::PLAIN_DICTIONARY
                    | parquet::basic::Encoding::RLE_DICTIONARY
            )
        ) {
            return Err(crate::Error::invalid(
                "a dictionary is turned on with dictionary_enabled, not as an encoding",
            ));
        }
        if encoding.is_some() && self.dictionary_enabled == Some(true) {
            return Err(crate::Error::invalid(
                "a column's encoding applies without a dictionary: not with dictionary_enabled",
            ));
        }
        let statistics_enabled = self
            .statistics_enabled
            .as_deref()
            .map(|s| {
                s.to_ascii_lowercase()
                    .parse::<parquet::file::properties::EnabledStatistics>()
                    .map_err(|x| crate::Error::invalid(format!("statistics level {s:?}: {x}")))
            })
            .transpose()?;
        if let Some((Some(fpp), _)) = self.bloom_filter {
            if !(fpp > 0.0 && fpp < 1.0) {
                return Err(crate::Error::invalid(
                    "a bloom filter's false-positive probability is between 0 and 1",
                ));
            }
        }
        Ok(delta_rlc_engine::parquet_settings::ColumnSettings {
            dictionary_enabled: self.dictionary_enabled,
            encoding,
            statistics_enabled,
            bloom_filter: self.bloom_filter,
        })
    }
}
