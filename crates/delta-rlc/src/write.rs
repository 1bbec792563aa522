//! [`WriteBuilder`]: Arrow batches into the table — append, overwrite, or replace the rows a
//! predicate selects.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use arrow::record_batch::RecordBatch;
use delta_rlc_engine::ops::dml::ExprContext;
use delta_rlc_engine::ops::{insert_txn, InsertMode};
use delta_rlc_engine::Transaction;

use crate::error::Result;
use crate::outcome::CommitOutcome;
use crate::table::Table;
use crate::Expression;

/// How a write treats the rows already in the table.
#[derive(Debug, Clone, Default)]
pub enum WriteMode {
    /// Add the rows (a blind append: it never conflicts with other appends).
    #[default]
    Append,
    /// Replace every row.
    Overwrite,
    /// Replace the rows matching the predicate; every new row must match it (`replaceWhere`).
    ReplaceWhere(Expression),
}

/// Writes batches; their columns are matched to the table's by position and cast to its types
/// (a value that does not fit, or a NULL in a NOT NULL column, is an error and nothing commits).
///
/// ```
/// # async fn demo(table: delta_rlc::Table, batch: delta_rlc::arrow::array::RecordBatch) -> delta_rlc::Result<()> {
/// use delta_rlc::WriteMode;
///
/// table.write([batch.clone()]).await?; // append
/// let replaced = table
///     .write([batch])
///     .mode(WriteMode::ReplaceWhere("id < 100".into()))
///     .await?;
/// println!("committed version {:?}", replaced.version);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct WriteBuilder {
    table: Table,
    batches: Vec<RecordBatch>,
    mode: WriteMode,
}

impl WriteBuilder {
    pub(crate) fn new(table: Table, batches: Vec<RecordBatch>) -> Self {
        WriteBuilder {
            table,
            batches,
            mode: WriteMode::Append,
        }
    }

    /// Append (default), overwrite, or replace where.
    pub fn mode(mut self, mode: WriteMode) -> Self {
        self.mode = mode;
        self
    }

    async fn run(self) -> Result<CommitOutcome> {
        let inner = &self.table.inner;
        let snapshot = inner.snapshot(None).await?;
        let mode = match &self.mode {
            WriteMode::Append => InsertMode::Append,
            WriteMode::Overwrite => InsertMode::Overwrite,
            WriteMode::ReplaceWhere(p) => {
                InsertMode::ReplaceWhere(p.over_table(&ExprContext::new(&snapshot, None)?)?)
            }
        };
        let txn = Transaction::new(inner, Some(snapshot), "WRITE");
        crate::commit(insert_txn(txn, &self.batches, mode).await?).await
    }
}

impl IntoFuture for WriteBuilder {
    type Output = Result<CommitOutcome>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
