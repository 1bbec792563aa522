//! [`ChangesBuilder`]: the change data feed between two versions (`table_changes`), with the
//! rows and columns a caller asks for — typed, so no front end composes a query text for it.

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use delta_rlc_engine::changes::{read_changes, ChangeBound};
use delta_rlc_engine::EngineError;

use crate::error::Result;
use crate::table::{At, Table};
use crate::Expression;

/// The change rows of versions `start..=end`: every table column plus `_change_type`,
/// `_commit_version` and `_commit_timestamp`. `.filter(..)` keeps the rows a condition over
/// those columns holds for, `.columns(..)` picks columns; `.await` reads them.
///
/// ```
/// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
/// use delta_rlc::At;
/// let deletes = table
///     .changes(3, At::Latest)
///     .filter("_change_type = 'delete'")
///     .columns(["id", "_commit_version"])
///     .await?;
/// println!("{} rows deleted since version 3", deletes.num_rows());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct ChangesBuilder {
    table: Table,
    start: At,
    end: At,
    filter: Option<Expression>,
    columns: Option<Vec<String>>,
}

impl ChangesBuilder {
    pub(crate) fn new(table: Table, start: At, end: At) -> Self {
        ChangesBuilder {
            table,
            start,
            end,
            filter: None,
            columns: None,
        }
    }

    /// Keeps only change rows for which `predicate` is true (with earlier `.filter` calls: all
    /// of them).
    pub fn filter(mut self, predicate: impl Into<Expression>) -> Self {
        self.filter = Expression::and_then(self.filter.take(), predicate.into());
        self
    }

    /// Returns only these columns, in this order.
    pub fn columns<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    async fn run(self) -> Result<RecordBatch> {
        let bound = |at: At| match at {
            At::Latest => None,
            At::Version(v) => Some(ChangeBound::Version(v)),
            At::TimestampMs(ms) => Some(ChangeBound::TimestampMs(ms)),
        };
        let start = match bound(self.start) {
            Some(b) => b,
            None => ChangeBound::Version(self.table.version().await?),
        };
        let rows = read_changes(self.table.engine_table(), start, bound(self.end)).await?;
        if self.filter.is_none() && self.columns.is_none() {
            return Ok(rows);
        }
        let ctx = delta_rlc_engine::spark::context();
        let mut df = ctx.read_batch(rows)?;
        if let Some(f) = &self.filter {
            let schema = df.schema().clone();
            let e = f.with_parser(&|s: &str| {
                delta_rlc_engine::spark::ident_case::parse_sql_expr(&ctx, s, &schema)
                    .map_err(|e| EngineError::invalid(e.to_string()))
            })?;
            df = df.filter(e)?;
        }
        if let Some(cols) = &self.columns {
            let names: Vec<&str> = cols.iter().map(String::as_str).collect();
            df = df.select_columns(&names)?;
        }
        let schema = df.schema().as_arrow().clone();
        let batches = df.collect().await?;
        Ok(concat_batches(&std::sync::Arc::new(schema), &batches)?)
    }
}

awaitable!(ChangesBuilder => RecordBatch);
