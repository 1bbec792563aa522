//! [`DeleteBuilder`] and [`UpdateBuilder`]: row-level changes, written as deletion vectors when
//! the table has them enabled (else by rewriting the files that hold matching rows).

use delta_rlc_engine::ops::dml::ExprContext;
use delta_rlc_engine::ops::{delete_txn, update_txn};
use delta_rlc_engine::Transaction;

use crate::error::Result;
use crate::options::CommitOptions;
use crate::outcome::CommitOutcome;
use crate::table::Table;
use crate::CastFailure;
use crate::Expression;

/// Deletes rows. Without a filter, every row.
///
/// ```
/// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
/// use delta_rlc::{col, lit, ErrorKind};
///
/// match table.delete().filter(col("id").lt(lit(100i64))).await {
///     Ok(done) => println!("deleted {:?} rows in version {:?}", done.metrics.rows_affected, done.version),
///     // Only a true conflict aborts: a concurrent writer changed rows this DELETE read.
///     Err(e) if matches!(e.kind(), ErrorKind::Conflict(_)) => println!("retry: {e}"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct DeleteBuilder {
    table: Table,
    filter: Option<Expression>,
    commit: CommitOptions,
}

impl DeleteBuilder {
    pub(crate) fn new(table: Table) -> Self {
        DeleteBuilder {
            table,
            filter: None,
            commit: CommitOptions::default(),
        }
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// Deletes only rows for which `predicate` is true (with earlier `.filter` calls: all of them).
    pub fn filter(mut self, predicate: impl Into<Expression>) -> Self {
        self.filter = Expression::and_then(self.filter.take(), predicate.into());
        self
    }

    run_reexecuting!(|_builder| true);

    async fn run_once(self) -> Result<CommitOutcome> {
        let inner = &self.table.statement_table();
        let snapshot = inner.snapshot(self.table.read_version).await?;
        let ectx = ExprContext::new(&snapshot, None)?;
        let predicate = self.filter.map(|f| f.over_table(&ectx)).transpose()?;
        let txn = Transaction::new(
            inner,
            Some(snapshot),
            delta_rlc_engine::txn::Operation::Delete,
        );
        crate::commit(delete_txn(txn, predicate).await?, &self.commit).await
    }
}

awaitable!(DeleteBuilder => CommitOutcome);

/// Updates rows: each `.set(column, value)` is evaluated on the row's old values.
///
/// ```
/// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
/// use delta_rlc::{col, lit};
///
/// let done = table
///     .update()
///     .set("v", "upper(v)")
///     .set("id", col("id") + lit(1000i64))
///     .filter("id BETWEEN 10 AND 20")
///     .await?;
/// println!("updated {:?} rows", done.metrics.rows_affected);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct UpdateBuilder {
    table: Table,
    assignments: Vec<(String, Expression)>,
    filter: Option<Expression>,
    commit: CommitOptions,
    cast_failure: CastFailure,
}

impl UpdateBuilder {
    pub(crate) fn new(table: Table) -> Self {
        UpdateBuilder {
            table,
            assignments: Vec::new(),
            filter: None,
            commit: CommitOptions::default(),
            cast_failure: CastFailure::Error,
        }
    }

    /// What a value that does not cast to its column's type does: fail the statement (the
    /// default) or, with [`CastFailure::Null`], store NULL in a nullable column (deltalake's
    /// `error_on_type_mismatch=False`).
    pub fn on_cast_failure(mut self, on_failure: CastFailure) -> Self {
        self.cast_failure = on_failure;
        self
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// Sets `column` to `value`.
    pub fn set(mut self, column: impl Into<String>, value: impl Into<Expression>) -> Self {
        self.assignments.push((column.into(), value.into()));
        self
    }

    /// Updates only rows for which `predicate` is true (with earlier `.filter` calls: all of them).
    pub fn filter(mut self, predicate: impl Into<Expression>) -> Self {
        self.filter = Expression::and_then(self.filter.take(), predicate.into());
        self
    }

    run_reexecuting!(|_builder| true);

    async fn run_once(self) -> Result<CommitOutcome> {
        let inner = &self.table.statement_table();
        let snapshot = inner.snapshot(self.table.read_version).await?;
        let ectx = ExprContext::new(&snapshot, None)?;
        // No column set, an unknown or a twice-assigned column: the operation refuses them
        // (`update_txn`), after the values are planned, as for SQL and Python.
        let assignments = self
            .assignments
            .iter()
            .map(|(c, v)| Ok((c.clone(), v.over_table(&ectx)?)))
            .collect::<Result<Vec<_>>>()?;
        let predicate = self.filter.map(|f| f.over_table(&ectx)).transpose()?;
        let txn = Transaction::new(
            inner,
            Some(snapshot),
            delta_rlc_engine::txn::Operation::Update,
        );
        crate::commit(
            update_txn(txn, assignments, predicate, self.cast_failure).await?,
            &self.commit,
        )
        .await
    }
}

awaitable!(UpdateBuilder => CommitOutcome);
