//! [`WriteBuilder`]: Arrow batches into the table — append, overwrite, or replace the rows a
//! predicate selects.

use arrow::datatypes::Schema;
use arrow::record_batch::RecordBatch;
use delta_rlc_engine::arrow_conv::table_arrow_schema;
use delta_rlc_engine::ops::dml::ExprContext;
use delta_rlc_engine::ops::{insert_txn, InsertMode};
use delta_rlc_engine::Transaction;

use crate::error::{Error, ErrorKind, Result};
use crate::options::CommitOptions;
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

/// Writes batches; their columns are matched to the table's by name (any order; a missing or
/// extra column is [`ErrorKind::SchemaMismatch`]) and cast to its types (a value that does not
/// fit, or a NULL in a NOT NULL column, is an error and nothing commits).
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
    commit: CommitOptions,
}

impl WriteBuilder {
    pub(crate) fn new(table: Table, batches: Vec<RecordBatch>) -> Self {
        WriteBuilder {
            table,
            batches,
            mode: WriteMode::Append,
            commit: CommitOptions::default(),
        }
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// Append (default), overwrite, or replace where.
    pub fn mode(mut self, mode: WriteMode) -> Self {
        self.mode = mode;
        self
    }

    async fn run(self) -> Result<CommitOutcome> {
        let inner = &self.table.inner;
        let snapshot = inner.snapshot(self.table.read_version).await?;
        let table_schema = table_arrow_schema(&snapshot.schema);
        let batches = self
            .batches
            .iter()
            .map(|b| by_name(b, &table_schema))
            .collect::<Result<Vec<_>>>()?;
        let mode = match &self.mode {
            WriteMode::Append => InsertMode::Append,
            WriteMode::Overwrite => InsertMode::Overwrite,
            WriteMode::ReplaceWhere(p) => {
                InsertMode::ReplaceWhere(p.over_table(&ExprContext::new(&snapshot, None)?)?)
            }
        };
        let txn = Transaction::new(inner, Some(snapshot), "WRITE");
        crate::commit(insert_txn(txn, &batches, mode).await?, &self.commit).await
    }
}

/// `batch`'s columns in the table's order, matched by name (case-insensitively); types are cast
/// when the rows are written. A missing or an extra column is a schema mismatch.
pub(crate) fn by_name(batch: &RecordBatch, table: &Schema) -> Result<RecordBatch> {
    let names = |s: &Schema| -> Vec<String> {
        s.fields()
            .iter()
            .map(|f| f.name().to_ascii_lowercase())
            .collect()
    };
    let (ours, theirs) = (names(table), names(batch.schema().as_ref()));
    let missing: Vec<&String> = ours.iter().filter(|n| !theirs.contains(n)).collect();
    let extra: Vec<&String> = theirs.iter().filter(|n| !ours.contains(n)).collect();
    if !missing.is_empty() || !extra.is_empty() || ours.len() != theirs.len() {
        return Err(Error::new(
            ErrorKind::SchemaMismatch,
            format!(
                "schema mismatch: the data lacks columns {missing:?} and has columns {extra:?} the table does not (table: {ours:?})"
            ),
        ));
    }
    let order: Vec<usize> = ours
        .iter()
        .filter_map(|n| theirs.iter().position(|t| t == n))
        .collect();
    Ok(batch.project(&order)?)
}

awaitable!(WriteBuilder => CommitOutcome);
