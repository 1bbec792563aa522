//! # delta-rlc
//!
//! Delta Lake tables with **row-level concurrency**: many writers — appends, DELETE, UPDATE,
//! MERGE, OPTIMIZE — commit to one table at once, and a commit aborts only when a concurrent
//! commit truly touched the rows it read or changed. Tables stay readable by Spark, delta-rs,
//! polars and DuckDB.
//!
//! Every operation starts from a [`Table`] and is a builder you `.await`; writes return a
//! [`CommitOutcome`] (the version, the attempts, what was reconciled, the metrics). Errors are
//! one [`Error`] whose [`ErrorKind`] says whether a retry can help.
//!
//! ```
//! # async fn demo(dir: &str) -> delta_rlc::Result<()> {
//! use std::sync::Arc;
//! use delta_rlc::arrow::array::{Int64Array, RecordBatch, StringArray};
//! use delta_rlc::arrow::datatypes::{DataType, Field, Schema};
//! use delta_rlc::{col, lit, Table};
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("id", DataType::Int64, false),
//!     Field::new("v", DataType::Utf8, true),
//! ]));
//! let table = Table::create(dir).columns_from(&schema).await?;
//! let batch = RecordBatch::try_new(
//!     schema,
//!     vec![
//!         Arc::new(Int64Array::from(vec![1, 2, 3])),
//!         Arc::new(StringArray::from(vec!["a", "b", "c"])),
//!     ],
//! )?;
//! let appended = table.write([batch]).await?;
//! assert_eq!(appended.version, Some(1));
//!
//! let deleted = table.delete().filter(col("id").eq(lit(2i64))).await?;
//! assert_eq!(deleted.metrics.rows_affected, Some(1));
//!
//! let rows = table.scan().filter("v <> 'a'").collect().await?;
//! assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
//! # Ok(()) }
//! # let dir = tempfile::tempdir().unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(demo(dir.path().to_str().unwrap())).unwrap();
//! ```
//!
//! Expressions are DataFusion [`Expr`]s ([`col`], [`lit`]) or SQL text; the Arrow and DataFusion
//! versions the API takes are re-exported ([`arrow`], [`datafusion`]), so no version pin is
//! needed.

#![warn(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// `builder.await` runs the builder (every builder is awaited the same way).
macro_rules! awaitable {
    ($builder:ty => $output:ty) => {
        impl std::future::IntoFuture for $builder {
            type Output = $crate::Result<$output>;
            type IntoFuture =
                std::pin::Pin<Box<dyn std::future::Future<Output = Self::Output> + Send>>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(self.run())
            }
        }
    };
}

/// `async fn run(self)` of a `Clone` builder with a `table`, a `commit` and a `run_once`: one run,
/// and more after a true conflict when re-execution is on ([`run_statement`]; a re-run reads the
/// latest version). `|b| rereadable` says whether the builder's source can be read again.
macro_rules! run_reexecuting {
    (|$b:ident| $rereadable:expr) => {
        async fn run(self) -> $crate::Result<$crate::CommitOutcome> {
            let (table, commit) = (self.table.clone(), self.commit.clone());
            let rereadable = {
                let $b = &self;
                $rereadable
            };
            $crate::run_statement(&table, &commit, rereadable, |table| {
                Self {
                    table,
                    ..self.clone()
                }
                .run_once()
            })
            .await
        }
    };
}

mod admin;
mod changes;
mod convert;
mod create;
mod dml;
mod error;
mod expression;
mod files;
mod maintenance;
mod merge;
mod options;
mod outcome;
mod scan;
mod table;
mod write;

pub use arrow;
pub use datafusion;
pub use datafusion::prelude::{col, lit, Expr};

pub use admin::{AlterBuilder, HistoryEntry, RestoreBuilder, TableChange};
pub use changes::ChangesBuilder;
pub use convert::ConvertBuilder;
pub use create::{CreateBuilder, SaveMode};
/// What an assigned value that does not cast to its column does (UPDATE and MERGE).
pub use delta_rlc_engine::ops::conform::CastFailure;
/// What a statement sent to the store: requests by kind and its critical-path depth.
pub use delta_rlc_storage::RequestCounts;
pub use dml::{DeleteBuilder, UpdateBuilder};
pub use error::{AbortReason, ConflictInfo, ConflictKind, Error, ErrorKind, Result};
pub use expression::Expression;
pub use files::{DirListing, FileEntry, ObjectFiles};
pub use maintenance::{OptimizeBuilder, VacuumBuilder};
pub use merge::{DeleteClause, InsertClause, MergeBuilder, MergeSource, UpdateClause};
pub use options::{
    AppTransaction, ColumnWriterSettings, CommitOptions, ConflictSettings, Isolation, TableOptions,
    WriterSettings,
};
pub use outcome::{CommitOutcome, Metrics, ReconcileEvent, SqlOutcome, VacuumOutcome};
pub use scan::{RecordBatchStream, ScanBuilder};
pub use table::{
    query, query_after, split_statements, sql, At, DeletionVectorInfo, FileAction, ProtocolInfo,
    Table, TableMetadata, TableSnapshot,
};
pub use write::{BatchStream, SchemaMode, WriteBuilder, WriteMode};

/// Runs one statement — `run_once(handle)` plans and commits it from `handle` — and, with
/// re-execution on conflict on ([`ConflictSettings::retry_on_conflict`], or
/// [`CommitOptions::retry_on_conflict`] for this statement), runs it again after an abort the
/// engine proves left nothing committed: planned anew from the latest version (the first run reads
/// the handle's own version), its inputs re-read. `rereadable` is false for a source read once
/// (a stream, a DataFrame): such a statement runs once, and asking this statement to re-execute
/// is refused.
async fn run_statement<F, Fut>(
    table: &Table,
    options: &CommitOptions,
    rereadable: bool,
    mut run_once: F,
) -> Result<CommitOutcome>
where
    F: FnMut(Table) -> Fut,
    Fut: std::future::Future<Output = Result<CommitOutcome>>,
{
    use delta_rlc_engine::txn::reexecute;
    let mut policy = table.engine_table().conflict.reexecution;
    if let Some(n) = options.retry_on_conflict {
        if n > 0 && !rereadable {
            return Err(Error::invalid(
                "retry_on_conflict needs a source that can be read again (record batches in memory); a stream or DataFrame is read once",
            ));
        }
        policy.reruns = reexecute::Reexecution::reruns(n)?.reruns;
    }
    if !rereadable {
        policy.reruns = 0;
    }
    let env = table.engine_table().env.clone();
    let (mut outcome, earlier) = reexecute::run_statement(&policy, &env, |run| {
        let handle = match run {
            1 => table.clone(),
            _ => Table {
                read_version: None,
                ..table.clone()
            },
        };
        run_once(handle)
    })
    .await?;
    outcome.earlier_runs = earlier;
    Ok(outcome)
}

/// Commits a planned engine transaction with `options` and reports it.
async fn commit(
    mut txn: delta_rlc_engine::Transaction,
    options: &CommitOptions,
) -> Result<CommitOutcome> {
    for (k, v) in &options.metadata {
        txn.set_app_metadata(k, v.clone())?;
    }
    txn.checkpoint_after = !options.skip_checkpoint;
    let mut app_ids = std::collections::BTreeSet::new();
    for t in &options.app_transactions {
        if t.app_id.is_empty() {
            return Err(Error::invalid("an app transaction needs an app id"));
        }
        if !app_ids.insert(t.app_id.clone()) {
            return Err(Error::invalid(format!(
                "app transaction {} is given twice in one commit",
                t.app_id
            )));
        }
        // Read as well as written: a concurrent commit of the same app id is a
        // ConcurrentTransaction conflict, so two writers never both record one id's version.
        txn.read_set.app_ids.insert(t.app_id.clone());
        txn.actions.push(delta_rlc_protocol::actions::Action::Txn(
            delta_rlc_protocol::actions::Txn {
                app_id: t.app_id.clone(),
                version: t.version,
                last_updated: Some(
                    t.last_updated
                        .unwrap_or_else(|| txn.table.env.clock.now_ms()),
                ),
            },
        ));
    }
    if let Some(n) = options.max_commit_attempts {
        if n == 0 {
            return Err(Error::invalid("max_commit_attempts must be at least 1"));
        }
        txn.table.conflict.max_attempts = n;
    }
    let metrics = txn.metrics().to_map();
    let meter = txn.table.store.meter().cloned();
    let result = txn.commit().await?;
    let mut outcome = CommitOutcome::new(result, &metrics);
    outcome.requests = meter.map(|m| m.counts());
    Ok(outcome)
}
