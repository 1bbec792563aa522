//! The rows a MERGE writes (UPDATE images and INSERTs, evaluated only over the rows their clause
//! decides) and the staged actions: matched target rows removed from their files (deletion
//! vectors, removal or rewrite), new rows written.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::logical_expr::Expr;

use super::join::Joined;
use super::{ClauseAction, MergeSpec};
use crate::error::{EngineError, Result};
use crate::ops::conform::conform_column;
use crate::ops::dml::{stage_row_removal, write_new_rows, DmlMetrics, FileScan};
use crate::row_tracking::row_tracking_columns;
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

/// `source_alias.name` (UPDATE SET * / INSERT *).
fn source_column(source_alias: &str, name: &str) -> Expr {
    Expr::Column(datafusion::common::Column::new(
        Some(datafusion::common::TableReference::bare(
            source_alias.to_string(),
        )),
        name,
    ))
}

/// Every table column from the source column of the same name.
fn star(spec: &MergeSpec, table_schema: &Schema) -> HashMap<String, Expr> {
    table_schema
        .fields()
        .iter()
        .map(|f| {
            (
                f.name().to_ascii_lowercase(),
                source_column(&spec.source_alias, f.name()),
            )
        })
        .collect()
}

/// The new rows of each UPDATE and INSERT clause, typed as the table (plus materialized
/// row-tracking columns: kept by updates, NULL for inserts). Counts inserted rows.
pub(super) fn new_rows(
    spec: &MergeSpec,
    snapshot: &Snapshot,
    joined: &Joined,
    assigned: &[Option<usize>],
    metrics: &mut DmlMetrics,
) -> Result<Vec<RecordBatch>> {
    let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
    let extra_cols: Vec<(usize, Field)> = row_tracking_columns(snapshot)
        .map(|(id, ver)| {
            [id, ver]
                .into_iter()
                .filter_map(|name| {
                    joined
                        .column_index(&spec.target_alias, &name)
                        .map(|i| (i, Field::new(name, DataType::Int64, true)))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out: Vec<RecordBatch> = Vec::new();
    for (ci, clause) in spec.clauses.iter().enumerate() {
        let sel: BooleanArray = assigned.iter().map(|a| Some(*a == Some(ci))).collect();
        if sel.true_count() == 0 {
            continue;
        }
        // Only the rows this clause decides: its expressions never see (or fail on) others.
        let rows = filter_record_batch(&joined.batch, &sel)?;
        let n = rows.num_rows();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(table_schema.fields().len());
        match &clause.action {
            ClauseAction::Delete => continue,
            ClauseAction::Update(assign) => {
                let map: HashMap<String, Expr> = match assign {
                    Some(a) => a
                        .iter()
                        .map(|(c, e)| (c.to_ascii_lowercase(), e.clone()))
                        .collect(),
                    None => star(spec, &table_schema),
                };
                for f in table_schema.fields() {
                    let v = match map.get(&f.name().to_ascii_lowercase()) {
                        Some(e) => joined.eval(e, &rows)?,
                        None => rows
                            .column(
                                joined
                                    .column_index(&spec.target_alias, f.name())
                                    .ok_or_else(|| {
                                        EngineError::Internal(format!("column {}", f.name()))
                                    })?,
                            )
                            .clone(),
                    };
                    cols.push(conform_column(v, f)?);
                }
                for (i, _) in &extra_cols {
                    cols.push(rows.column(*i).clone());
                }
            }
            ClauseAction::Insert(values) => {
                let map: HashMap<String, Expr> = match values {
                    Some((c, v)) if c.is_empty() => table_schema
                        .fields()
                        .iter()
                        .map(|f| f.name().to_ascii_lowercase())
                        .zip(v.iter().cloned())
                        .collect(),
                    Some((c, v)) => c
                        .iter()
                        .map(|x| x.to_ascii_lowercase())
                        .zip(v.iter().cloned())
                        .collect(),
                    None => star(spec, &table_schema),
                };
                if let Some(k) = map.keys().find(|k| {
                    table_schema
                        .fields()
                        .iter()
                        .all(|f| f.name().to_ascii_lowercase() != **k)
                }) {
                    return Err(EngineError::invalid(format!(
                        "MERGE INSERT: unknown column {k}"
                    )));
                }
                for f in table_schema.fields() {
                    let v = match map.get(&f.name().to_ascii_lowercase()) {
                        Some(e) => joined.eval(e, &rows)?,
                        None => new_null_array(f.data_type(), n),
                    };
                    cols.push(conform_column(v, f)?);
                }
                for (_, f) in &extra_cols {
                    cols.push(new_null_array(f.data_type(), n));
                }
                metrics.inserted_rows += n as u64;
            }
        }
        let fields: Vec<Field> = table_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .chain(extra_cols.iter().map(|(_, f)| f.clone()))
            .map(|f| f.with_nullable(true))
            .collect();
        out.push(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?);
    }
    Ok(out)
}

/// Stages the MERGE's actions: each file's removed rows, then the new rows.
pub(super) async fn stage(
    txn: &mut Transaction,
    snapshot: &Arc<Snapshot>,
    scans: &[FileScan],
    removed: &BTreeMap<u64, HashSet<u64>>,
    new_rows: &[RecordBatch],
    metrics: &mut DmlMetrics,
) -> Result<()> {
    for (fi, rows) in removed {
        let Some(scan) = usize::try_from(*fi).ok().and_then(|i| scans.get(i)) else {
            continue;
        };
        let idx = scan.row_indexes()?;
        let mask: BooleanArray = (0..idx.len())
            .map(|i| Some(rows.contains(&idx.value(i))))
            .collect();
        stage_row_removal(txn, snapshot, scan, &mask, metrics).await?;
    }
    write_new_rows(txn, snapshot, new_rows, metrics).await
}
