//! `delta_files('t' | 'path')`: a table function listing the live files of a table — path, partition
//! values, size, numRecords, DV cardinality and
//! file (`dv_file`: the DV's `storageType` and `pathOrInlineDv`, equal for the DVs that share one
//! DV file; NULL for no DV or an inline one), row-tracking fields. Scenarios and tests use it to check
//! DV cardinalities and layouts in SQL. Arguments are found in the statement's AST and their snapshots
//! loaded before planning (table functions are synchronous in DataFusion).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use datafusion::common::ScalarValue;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::logical_expr::Expr;
use datafusion::sql::sqlparser::ast::{FunctionArg, Value};
use delta_rlc_protocol::stats::FileStats;

use crate::error::Result;
use crate::snapshot::Snapshot;

pub const NAME: &str = "delta_files";

/// The string argument of every `name('…')` call among a statement's table-function calls
/// ([`super::bind::table_calls`]).
pub fn calls(table_calls: &[(String, Vec<FunctionArg>)], name: &str) -> Vec<String> {
    table_calls
        .iter()
        .filter(|(n, _)| n == name)
        .filter_map(|(_, args)| match args.as_slice() {
            [a] => match super::bind::literal_arg(a) {
                Some(Value::SingleQuotedString(s)) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

pub fn files_batch(snapshot: &Snapshot) -> Result<RecordBatch> {
    let mut path = Vec::new();
    let mut pv = Vec::new();
    let mut size = Vec::new();
    let mut n = Vec::new();
    let mut card = Vec::new();
    let mut dv_file: Vec<Option<String>> = Vec::new();
    let mut base = Vec::new();
    let mut ver = Vec::new();
    for f in &snapshot.files {
        path.push(f.path.clone());
        pv.push(serde_json::to_string(&f.partition_values).unwrap_or_default());
        size.push(f.size);
        n.push(
            f.stats
                .as_deref()
                .and_then(|s| FileStats::parse(s).ok())
                .and_then(|s| s.num_records),
        );
        card.push(
            f.deletion_vector
                .as_ref()
                .map(|d| d.cardinality)
                .unwrap_or(0),
        );
        dv_file.push(
            f.deletion_vector
                .as_ref()
                .filter(|d| d.storage_type != "i")
                .map(|d| format!("{}{}", d.storage_type, d.path_or_inline_dv)),
        );
        base.push(f.base_row_id);
        ver.push(f.default_row_commit_version);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("partition_values", DataType::Utf8, false),
        Field::new("size", DataType::Int64, false),
        Field::new("num_records", DataType::Int64, true),
        Field::new("dv_cardinality", DataType::Int64, false),
        Field::new("dv_file", DataType::Utf8, true),
        Field::new("base_row_id", DataType::Int64, true),
        Field::new("default_row_commit_version", DataType::Int64, true),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(path)),
        Arc::new(StringArray::from(pv)),
        Arc::new(Int64Array::from(size)),
        Arc::new(Int64Array::from(n)),
        Arc::new(Int64Array::from(card)),
        Arc::new(StringArray::from(dv_file)),
        Arc::new(Int64Array::from(base)),
        Arc::new(Int64Array::from(ver)),
    ];
    Ok(RecordBatch::try_new(schema, cols)?)
}

/// A table function whose results were computed before planning, one batch per argument.
#[derive(Debug)]
pub struct Preloaded {
    pub name: &'static str,
    pub tables: HashMap<String, RecordBatch>,
}

impl TableFunctionImpl for Preloaded {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let arg = match args.exprs() {
            [Expr::Literal(ScalarValue::Utf8(Some(s)), _)] => s.clone(),
            _ => {
                return datafusion::common::plan_err!(
                    "{} takes one string: a table name or path",
                    self.name
                )
            }
        };
        let batch = self.tables.get(&arg).cloned().ok_or_else(|| {
            datafusion::error::DataFusionError::Plan(format!("{}: no table {arg}", self.name))
        })?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}
