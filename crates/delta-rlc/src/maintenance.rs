//! [`OptimizeBuilder`] (compaction, Z-order) and [`VacuumBuilder`] (deleting unreferenced files).

use std::time::Duration;

use delta_rlc_engine::ops::dml::ExprContext;
use delta_rlc_engine::ops::optimize::{plan_optimize, OptimizeSpec};
use delta_rlc_engine::Transaction;

use crate::error::{Error, Result};
use crate::options::CommitOptions;
use crate::outcome::{CommitOutcome, VacuumOutcome};
use crate::table::Table;
use crate::Expression;

/// Compacts small files into files of the target size; with `.zorder(..)`, rewrites them in
/// Z-order of those columns. Concurrent writers keep committing: their deletes and updates of
/// compacted rows are carried over instead of aborting either side.
///
/// ```
/// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
/// let done = table.optimize().zorder(["id"]).await?;
/// println!("{:?} files added", done.metrics.get("numFilesAdded"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct OptimizeBuilder {
    table: Table,
    filter: Option<Expression>,
    zorder_by: Vec<String>,
    target_size: Option<u64>,
    min_commit_interval: Option<Duration>,
    commit: CommitOptions,
}

impl OptimizeBuilder {
    pub(crate) fn new(table: Table) -> Self {
        OptimizeBuilder {
            table,
            filter: None,
            zorder_by: Vec::new(),
            target_size: None,
            min_commit_interval: None,
            commit: CommitOptions::default(),
        }
    }

    /// Commit the files rewritten so far each time this much time has passed (deltalake's
    /// `min_commit_interval`): a long OPTIMIZE lands in several versions, so a failure or a
    /// conflict late in the run keeps the work before it. Zero: a commit for every bin (a
    /// partition, when ZORDER BY). The outcome reports the last version and the summed counters;
    /// application transactions are recorded with the last commit.
    pub fn min_commit_interval(mut self, interval: Duration) -> Self {
        self.min_commit_interval = Some(interval);
        self
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// Only the partitions this predicate (over partition columns) selects (with earlier
    /// `.filter` calls: all of them).
    pub fn filter(mut self, partition_predicate: impl Into<Expression>) -> Self {
        self.filter = Expression::and_then(self.filter.take(), partition_predicate.into());
        self
    }

    /// Z-orders the rewritten files by these columns.
    pub fn zorder<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.zorder_by = columns.into_iter().map(Into::into).collect();
        self
    }

    /// Target file size in bytes (default: the table's, else 128 MiB).
    pub fn target_size(mut self, bytes: u64) -> Self {
        self.target_size = Some(bytes);
        self
    }

    run_reexecuting!(|_builder| true);

    async fn run_once(self) -> Result<CommitOutcome> {
        let inner = &self.table.statement_table();
        let snapshot = inner.snapshot(self.table.read_version).await?;
        let ectx = ExprContext::new(&snapshot, None)?;
        let spec = OptimizeSpec {
            predicate: self.filter.map(|f| f.over_table(&ectx)).transpose()?,
            zorder_by: self.zorder_by,
            target_file_size: self.target_size,
            min_file_count: None,
            skip_capture: false,
            min_commit_interval_ms: self
                .min_commit_interval
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        };
        let mut plan = plan_optimize(std::sync::Arc::clone(&snapshot), spec)?;
        // Every commit but the last leaves the application transactions out: the operation is
        // done (and its app version true) only when the last bin has landed.
        let partial = CommitOptions {
            app_transactions: Vec::new(),
            ..self.commit.clone()
        };
        let mut outcome: Option<CommitOutcome> = None;
        loop {
            let txn = Transaction::new(
                inner,
                Some(std::sync::Arc::clone(&snapshot)),
                delta_rlc_engine::txn::Operation::Optimize,
            );
            let Some(txn) = plan.next_transaction(txn).await? else {
                break;
            };
            let options = if plan.is_done() {
                &self.commit
            } else {
                &partial
            };
            let done = crate::commit(txn, options).await?;
            outcome = Some(match outcome {
                None => done,
                Some(before) => before.followed_by(done),
            });
        }
        outcome.ok_or_else(|| {
            Error::new(
                crate::ErrorKind::Internal,
                "OPTIMIZE planned no transaction",
            )
        })
    }
}

awaitable!(OptimizeBuilder => CommitOutcome);

/// Deletes data files and deletion vectors that no version within the retention period
/// references. A retention below the table's `delta.deletedFileRetentionDuration` (7 days by
/// default) is refused unless `.enforce_retention_duration(false)`; even then files younger than
/// the longest a transaction may stay open are kept, so concurrent writers never lose files.
///
/// ```
/// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
/// let would = table.vacuum().dry_run(true).await?;
/// println!("{} files would be deleted", would.files.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct VacuumBuilder {
    table: Table,
    retention: Option<Duration>,
    dry_run: bool,
    enforce_retention_duration: bool,
    lite: bool,
    keep_versions: Vec<u64>,
    commit: CommitOptions,
}

impl VacuumBuilder {
    pub(crate) fn new(table: Table) -> Self {
        VacuumBuilder {
            table,
            retention: None,
            dry_run: false,
            enforce_retention_duration: true,
            lite: false,
            keep_versions: Vec::new(),
            commit: CommitOptions::default(),
        }
    }

    /// Only the files the log's tombstones name, without listing the table (Delta Spark's
    /// `VACUUM … LITE`, deltalake's default); files the log never named stay. Default: false,
    /// a full VACUUM that lists every file.
    pub fn lite(mut self, lite: bool) -> Self {
        self.lite = lite;
        self
    }

    /// Versions whose files stay whatever their age (deltalake's `keep_versions`).
    pub fn keep_versions(mut self, versions: impl IntoIterator<Item = u64>) -> Self {
        self.keep_versions = versions.into_iter().collect();
        self
    }

    /// Fields for the VACUUM START and VACUUM END commits' `commitInfo`, and their bound on
    /// attempts. They record no application transaction and never re-run (they cannot
    /// conflict), so `app_transactions` and `retry_on_conflict` are refused.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// Keep files removed less than this long ago (default: the table's retention).
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// List what would be deleted without deleting it.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Refuse a retention below the table's (default true).
    pub fn enforce_retention_duration(mut self, enforce: bool) -> Self {
        self.enforce_retention_duration = enforce;
        self
    }

    async fn run(self) -> Result<VacuumOutcome> {
        let mut inner = self.table.inner.clone();
        inner.conflict.retention_duration_check = self.enforce_retention_duration;
        let retention_ms = self
            .retention
            .map(|d| {
                i64::try_from(d.as_millis())
                    .map_err(|_| Error::invalid("VACUUM: retention too large"))
            })
            .transpose()?;
        if self.commit.skip_checkpoint {
            return Err(Error::new(
                crate::ErrorKind::Unsupported,
                "VACUUM always follows delta.checkpointInterval (skip_checkpoint)",
            ));
        }
        if !self.commit.app_transactions.is_empty() {
            return Err(Error::invalid(
                "VACUUM records no application transaction (app_transactions)",
            ));
        }
        if self.commit.retry_on_conflict.is_some() {
            return Err(Error::invalid(
                "VACUUM never conflicts, so it has nothing to re-run (retry_on_conflict)",
            ));
        }
        if let Some(n) = self.commit.max_commit_attempts {
            if n == 0 {
                return Err(Error::invalid("max_commit_attempts must be at least 1"));
            }
            inner.conflict.max_attempts = n;
        }
        let spec = delta_rlc_engine::vacuum::VacuumSpec {
            retention_ms,
            dry_run: self.dry_run,
            mode: match self.lite {
                true => delta_rlc_engine::vacuum::VacuumMode::Lite,
                false => delta_rlc_engine::vacuum::VacuumMode::Full,
            },
            keep_versions: self.keep_versions,
            app_metadata: self.commit.metadata.into_iter().collect(),
        };
        let r = delta_rlc_engine::vacuum::vacuum_with(&inner, &spec).await?;
        Ok(VacuumOutcome {
            files: r.files,
            dry_run: r.dry_run,
        })
    }
}

awaitable!(VacuumBuilder => VacuumOutcome);
