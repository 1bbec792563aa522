//! `table_changes('t' | 'path', start[, end])`: the change data feed of a table
//! ([`crate::changes`]). `start` and `end` are versions, or timestamps as strings
//! (`'2026-12-01 10:00:00'`, UTC). Like `delta_files`, calls are found in the statement's AST and
//! their rows loaded before planning.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use datafusion::common::ScalarValue;
use datafusion::datasource::TableProvider;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::sql::sqlparser::ast::{FunctionArg, Value};
use futures::TryStreamExt;

use crate::changes::{ChangeBound, ChangeRange};
use crate::error::{EngineError, Result};

pub const NAME: &str = "table_changes";

/// One `table_changes(…)` call: the table argument, the bounds, and the key its arguments make.
#[derive(Debug, Clone)]
pub struct ChangesCall {
    pub table: String,
    pub start: ChangeBound,
    pub end: Option<ChangeBound>,
    pub key: String,
}

/// A bound argument: a version number or a timestamp string.
fn bound(arg: &Value) -> Result<Option<(ChangeBound, String)>> {
    Ok(match arg {
        Value::Number(n, _) => {
            let v: u64 = n.parse().map_err(|_| {
                EngineError::invalid(format!("{NAME}: version {n} is not a version number"))
            })?;
            Some((ChangeBound::Version(v), format!("n:{v}")))
        }
        Value::SingleQuotedString(s) => {
            let b = match s.trim().parse::<u64>() {
                Ok(v) => ChangeBound::Version(v),
                Err(_) => ChangeBound::TimestampMs(crate::snapshot::as_of::parse_timestamp_ms(s)?),
            };
            Some((b, format!("s:{s}")))
        }
        _ => None,
    })
}

/// Every `table_changes('t', start[, end])` call among a statement's table-function calls
/// ([`super::bind::table_calls`]).
pub fn calls(table_calls: &[(String, Vec<FunctionArg>)]) -> Result<Vec<ChangesCall>> {
    let mut out = Vec::new();
    for (name, args) in table_calls {
        if name != NAME {
            continue;
        }
        let usage = || {
            EngineError::invalid(format!(
                "{NAME} takes a table name or path, a start version or timestamp, and optionally an end: {NAME}('t', 0[, 5])"
            ))
        };
        let values: Vec<&Value> = args
            .iter()
            .map(|a| super::bind::literal_arg(a).ok_or_else(usage))
            .collect::<Result<_>>()?;
        let Some((Value::SingleQuotedString(table), bounds)) = values.split_first() else {
            return Err(usage());
        };
        let bounds: Vec<(ChangeBound, String)> = bounds
            .iter()
            .map(|v| bound(v)?.ok_or_else(usage))
            .collect::<Result<_>>()?;
        let (start, end) = match bounds.as_slice() {
            [s] => (s.clone(), None),
            [s, e] => (s.clone(), Some(e.clone())),
            _ => return Err(usage()),
        };
        let key = format!(
            "{table}|{}|{}",
            start.1,
            end.as_ref().map(|e| e.1.as_str()).unwrap_or("")
        );
        out.push(ChangesCall {
            table: table.clone(),
            start: start.0,
            end: end.map(|e| e.0),
            key,
        });
    }
    Ok(out)
}

/// The key of a call's arguments as DataFusion hands them over (same shape as [`calls`] makes).
fn key_of(args: &[Expr]) -> Option<String> {
    let part = |e: &Expr| -> Option<String> {
        match e {
            Expr::Literal(ScalarValue::Utf8(Some(s)), _) => Some(format!("s:{s}")),
            Expr::Literal(ScalarValue::Int64(Some(n)), _) => Some(format!("n:{n}")),
            _ => None,
        }
    };
    match args {
        [Expr::Literal(ScalarValue::Utf8(Some(t)), _), s] => Some(format!("{t}|{}|", part(s)?)),
        [Expr::Literal(ScalarValue::Utf8(Some(t)), _), s, e] => {
            Some(format!("{t}|{}|{}", part(s)?, part(e)?))
        }
        _ => None,
    }
}

/// `table_changes` with each call's range checked before planning, by call key. Its rows are
/// read when the plan runs, commit by commit and file by file (a `count(*)` over a long feed holds
/// one file's rows at a time).
#[derive(Debug)]
pub struct ChangeFeeds {
    pub ranges: HashMap<String, ChangeRange>,
}

/// One range's rows as a partition of a streaming table.
#[derive(Debug)]
struct FeedPartition(ChangeRange);

impl PartitionStream for FeedPartition {
    fn schema(&self) -> &SchemaRef {
        self.0.schema_ref()
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let stream = self
            .0
            .clone()
            .stream()
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)));
        Box::pin(RecordBatchStreamAdapter::new(self.0.schema(), stream))
    }
}

impl TableFunctionImpl for ChangeFeeds {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let range = key_of(args.exprs())
            .and_then(|k| self.ranges.get(&k).cloned())
            .ok_or_else(|| {
                datafusion::error::DataFusionError::Plan(format!(
                    "{NAME} takes a table name or path and literal versions or timestamps"
                ))
            })?;
        let schema = range.schema();
        Ok(Arc::new(StreamingTable::try_new(
            schema,
            vec![Arc::new(FeedPartition(range))],
        )?))
    }
}

/// Checks the range of every `table_changes` call and registers the function on `ctx` with them
/// (tables by session name or path).
pub async fn register(
    session: &super::SqlSession,
    ctx: &datafusion::prelude::SessionContext,
    table_calls: &[(String, Vec<FunctionArg>)],
) -> Result<()> {
    let calls = calls(table_calls)?;
    if calls.is_empty() {
        return Ok(());
    }
    let mut ranges = HashMap::new();
    for call in calls {
        let location = session
            .named
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&call.table))
            .map(|(_, l)| l.clone())
            .unwrap_or_else(|| call.table.clone());
        let table = session.table(&location)?;
        if !table.exists().await? {
            return Err(EngineError::NotFound(format!(
                "no Delta table at {location}"
            )));
        }
        let range = crate::changes::change_range(&table, call.start, call.end).await?;
        ranges.insert(call.key, range);
    }
    ctx.register_udtf(NAME, Arc::new(ChangeFeeds { ranges }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_found_with_their_bounds() {
        let of = |sql: &str| match crate::sql::statement::parse(sql).unwrap().statement {
            crate::sql::statement::ParsedStatement::Sql(st) => crate::sql::bind::table_calls(&st),
            _ => panic!("not a query"),
        };
        let c = calls(&of(
            "SELECT * FROM table_changes('t', 1, '2026-12-01') JOIN table_changes('u', '3') x",
        ))
        .unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].start, ChangeBound::Version(1));
        assert!(matches!(c[0].end, Some(ChangeBound::TimestampMs(_))));
        assert_eq!(c[1].start, ChangeBound::Version(3));
        assert_eq!(c[1].end, None);
        assert_eq!(c[1].key, "u|s:3|");
        assert!(calls(&of("SELECT * FROM table_changes('t')")).is_err());
    }
}
