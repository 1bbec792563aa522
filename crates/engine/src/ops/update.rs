//! UPDATE t SET c = expr, … [WHERE p]: matched rows are removed from their files (DV, removal or
//! rewrite) and written, with the new values, to new files. With row tracking, updated rows keep
//! their stable row id and get a NULL materialized commit version (a fresh one).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::filter_record_batch;
use datafusion::logical_expr::Expr;
use serde_json::json;

use super::dml::{
    dml_read_options, eval_mask, match_candidates, scan_candidates, stage_dv_removals,
    stage_row_removal, without_row_index, write_new_rows, DmlMetrics, ExprContext,
};
use crate::error::{EngineError, Result};
use crate::row_tracking::stabilize_row_tracking;
use crate::scan::read_matched_rows;
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

/// Applies assignments to `rows` (a FileScan batch: table columns first). Unassigned columns keep
/// their values; extra columns (row tracking, row index) are kept.
pub fn apply_assignments(
    ectx: &ExprContext,
    rows: &RecordBatch,
    assignments: &[(usize, Arc<dyn datafusion::physical_expr::PhysicalExpr>)],
) -> Result<RecordBatch> {
    let table_part = rows.project(&(0..ectx.n_cols()).collect::<Vec<_>>())?;
    let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
    for (idx, expr) in assignments {
        let v = expr
            .evaluate(&table_part)?
            .into_array(table_part.num_rows())?;
        let target = ectx.arrow_schema.field(*idx);
        let v = super::conform::conform_column(v, target)?;
        if let Some(c) = cols.get_mut(*idx) {
            *c = v;
        }
    }
    Ok(RecordBatch::try_new(rows.schema(), cols)?)
}

/// Matched rows an UPDATE (with deletion vectors) rewrites per round; see `update_txn`.
pub const UPDATE_CHUNK_ROWS: u64 = 1 << 20;

pub async fn update_txn(
    mut txn: Transaction,
    assignments: Vec<(String, Expr)>,
    predicate: Option<Expr>,
) -> Result<Transaction> {
    let snapshot: Arc<Snapshot> = Arc::clone(txn.snapshot()?);
    let start = txn.table.env.clock.now_ms();
    txn.operation = "UPDATE".into();
    txn.operation_parameters.insert(
        "predicate".into(),
        json!(serde_json::to_string(&vec![predicate
            .as_ref()
            .map(|p| p.to_string())
            .unwrap_or_else(|| "true".into())])
        .unwrap_or_default()),
    );
    let ectx = ExprContext::new(&snapshot, None)?;
    let mut phys_assign = Vec::new();
    for (col, e) in &assignments {
        let idx = ectx
            .arrow_schema
            .fields()
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(col))
            .ok_or_else(|| EngineError::invalid(format!("UPDATE: unknown column {col}")))?;
        if snapshot
            .metadata
            .partition_columns
            .iter()
            .any(|p| p.eq_ignore_ascii_case(col))
        {
            // Allowed: the new image file lands in the new partition.
        }
        phys_assign.push((idx, ectx.physical(e)?));
    }
    let phys_pred = predicate.as_ref().map(|p| ectx.physical(p)).transpose()?;
    let mut metrics = DmlMetrics::default();
    let matched = match &predicate {
        Some(p) if snapshot.deletion_vectors_enabled() => {
            match_candidates(&mut txn, &snapshot, p, true).await?
        }
        _ => None,
    };
    if let Some(matches) = matched {
        // Merge-on-read: pass one found the rows; pass two decodes all columns of only those, in
        // rounds of files holding up to UPDATE_CHUNK_ROWS matched rows: each round's images are
        // read, assigned and written before the next is read, so memory follows the round, not
        // the statement. Files and ids come in file order, as in one round.
        let opts = dml_read_options(&snapshot);
        let parallelism = txn.table.env.parallelism;
        let mut from = 0;
        while from < matches.len() {
            let mut to = from;
            let mut rows = 0u64;
            while let Some(m) = matches.get(to) {
                if to > from && rows + m.matched.len() > UPDATE_CHUNK_ROWS {
                    break;
                }
                rows += m.matched.len();
                to += 1;
            }
            let round = matches.get(from..to).unwrap_or_default();
            let images =
                read_matched_rows(&txn.table.store, &snapshot, &opts, round, parallelism).await?;
            let mut new_rows = Vec::new();
            for (m, batches) in round.iter().zip(images) {
                metrics.scanned_files += 1;
                if m.matched.is_empty() {
                    continue;
                }
                metrics.updated_rows += m.matched.len();
                for batch in &batches {
                    let batch = stabilize_row_tracking(&snapshot, &m.add, batch, true)?;
                    let updated = apply_assignments(&ectx, &batch, &phys_assign)?;
                    new_rows.push(without_row_index(&updated)?);
                }
            }
            write_new_rows(&mut txn, &snapshot, &new_rows, &mut metrics).await?;
            from = to;
        }
        stage_dv_removals(&mut txn, &snapshot, &matches, &mut metrics).await?;
        return finish(txn, &snapshot, Vec::new(), metrics, start).await;
    }
    let scans = scan_candidates(&mut txn, &snapshot, predicate.as_ref()).await?;
    metrics.scanned_files = scans.len() as u64;
    let mut new_rows = Vec::new();
    for scan in &scans {
        let mask = match &phys_pred {
            Some(p) => eval_mask(p, &scan.table_rows(ectx.n_cols())?)?,
            None => arrow::array::BooleanArray::from(vec![true; scan.rows.num_rows()]),
        };
        let n = mask.true_count();
        if n == 0 {
            continue;
        }
        metrics.updated_rows += n as u64;
        let matched = filter_record_batch(&scan.rows, &mask)?;
        let matched = stabilize_row_tracking(&snapshot, &scan.add, &matched, true)?;
        let updated = apply_assignments(&ectx, &matched, &phys_assign)?;
        new_rows.push(without_row_index(&updated)?);
        stage_row_removal(&mut txn, &snapshot, scan, &mask, &mut metrics).await?;
    }
    finish(txn, &snapshot, new_rows, metrics, start).await
}

/// Writes the updated rows and records the metrics.
async fn finish(
    mut txn: Transaction,
    snapshot: &Snapshot,
    new_rows: Vec<RecordBatch>,
    mut metrics: DmlMetrics,
    start: i64,
) -> Result<Transaction> {
    write_new_rows(&mut txn, snapshot, &new_rows, &mut metrics).await?;
    txn.affected_rows = Some(metrics.updated_rows);
    let elapsed = txn.table.env.clock.now_ms() - start;
    txn.operation_metrics = metrics.into_map(elapsed);
    Ok(txn)
}
