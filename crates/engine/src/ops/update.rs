//! UPDATE t SET c = expr, … [WHERE p]: matched rows are removed from their files (DV, removal or
//! rewrite) and written, with the new values, to new files. With row tracking, updated rows keep
//! their stable row id and get a NULL materialized commit version (a fresh one).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::filter_record_batch;
use datafusion::logical_expr::Expr;
use serde_json::json;

use super::conform::CastFailure;
use super::dml::{
    dml_read_options, eval_mask, register_candidates, scan_file, stage_dv_removals,
    stage_row_update, without_row_index, DmlMetrics, ExprContext, NewRows,
};
use crate::error::{EngineError, Result};
use crate::row_tracking::stabilize_row_tracking;
use crate::scan::{match_files, read_matched_rows, FileMatch, RowMatcher};
use crate::snapshot::Snapshot;
use crate::txn::change_data::{self, ChangeType};
use crate::txn::Transaction;
use delta_rlc_protocol::actions::Add;

/// Applies assignments to `rows` (a FileScan batch: table columns first). Unassigned columns keep
/// their values; extra columns (row tracking, row index) are kept.
pub fn apply_assignments(
    ectx: &ExprContext,
    rows: &RecordBatch,
    assignments: &[(usize, Arc<dyn datafusion::physical_expr::PhysicalExpr>)],
    cast_failure: CastFailure,
) -> Result<RecordBatch> {
    let table_part = rows.project(&(0..ectx.n_cols()).collect::<Vec<_>>())?;
    let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
    for (idx, expr) in assignments {
        let v = expr
            .evaluate(&table_part)?
            .into_array(table_part.num_rows())?;
        let target = ectx.arrow_schema.field(*idx);
        let v = super::conform::conform_column_with(v, target, cast_failure)?;
        if let Some(c) = cols.get_mut(*idx) {
            *c = v;
        }
    }
    // A generated column the statement does not assign is recomputed from the new values by the
    // writer (`TableConstraints::fill_generated`): reset it.
    for (i, f) in ectx.schema.fields.iter().enumerate() {
        if crate::constraints::generation_of(f).is_some()
            && !assignments.iter().any(|(idx, _)| *idx == i)
        {
            if let Some(c) = cols.get_mut(i) {
                *c = arrow::array::new_null_array(c.data_type(), c.len());
            }
        }
    }
    Ok(RecordBatch::try_new(rows.schema(), cols)?)
}

/// Matched rows an UPDATE (with deletion vectors) rewrites per round; see `update_txn`.
pub const UPDATE_CHUNK_ROWS: u64 = 1 << 20;

/// Updated rows an UPDATE over full rows buffers before writing them as files.
pub const UPDATE_CHUNK_BYTES: usize = 128 << 20;

/// UPDATE's rules on its assignments, the one place they live: SQL, the Rust builder and Python
/// all reach them through [`update_txn`], so each refuses the same input with the same message.
/// At least one column is set, each names a table column (case-insensitively, as Spark resolves
/// them), and none is set twice (a second assignment would silently win).
pub fn check_assignments<'a>(
    schema: &delta_rlc_protocol::schema::StructType,
    columns: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for col in columns {
        if !schema
            .fields
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(col))
        {
            return Err(EngineError::invalid(format!(
                "UPDATE: unknown column {col}"
            )));
        }
        if !seen.insert(col.to_ascii_lowercase()) {
            return Err(EngineError::invalid(format!(
                "UPDATE: column {col} is assigned more than once"
            )));
        }
    }
    match seen.is_empty() {
        true => Err(EngineError::invalid("UPDATE: no column is set")),
        false => Ok(()),
    }
}

/// `cast_failure`: what an assigned value that does not cast to its column does (see `conform`).
pub async fn update_txn(
    mut txn: Transaction,
    assignments: Vec<(String, Expr)>,
    predicate: Option<Expr>,
    cast_failure: CastFailure,
) -> Result<Transaction> {
    let snapshot: Arc<Snapshot> = Arc::clone(txn.snapshot()?);
    check_assignments(
        &snapshot.schema,
        assignments.iter().map(|(c, _)| c.as_str()),
    )?;
    let start = txn.table.env.clock.now_ms();
    txn.operation = crate::txn::Operation::Update;
    txn.operation_parameters.insert(
        "predicate".into(),
        json!(serde_json::to_string(&vec![predicate
            .as_ref()
            .map(|p| p.to_string())
            .unwrap_or_else(|| "true".into())])
        .unwrap_or_default()),
    );
    let ectx = ExprContext::new(&snapshot, None)?;
    // Its names reach the target's existing columns only (one table, no `*`).
    txn.read_set.names_columns([]);
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
        if snapshot.schema.field(col).is_some_and(|f| {
            crate::txn::identity::is_identity(f)
                && !crate::txn::identity::identity_columns(&snapshot.schema)
                    .is_ok_and(|cs| cs.iter().any(|c| c.name == f.name && c.allow_explicit))
        }) {
            return Err(EngineError::invalid(format!(
                "UPDATE: {col} is an identity column GENERATED ALWAYS; its values cannot be set"
            )));
        }
        phys_assign.push((idx, ectx.physical(e)?));
        // The assigned column and every column its value reads depend on their types: a winner
        // widening one of them changes what re-running this UPDATE would write.
        let target = ectx.arrow_schema.field(idx).name().clone();
        let reads = e.column_refs().into_iter().map(|c| c.name.clone());
        txn.read_set
            .used_columns(std::iter::once(target).chain(reads).collect::<Vec<_>>());
    }
    let phys_pred = predicate.as_ref().map(|p| ectx.physical(p)).transpose()?;
    let mut metrics = DmlMetrics::default();
    // Merge-on-read (DVs on, a predicate evaluable over its own columns): in rounds of files
    // holding up to UPDATE_CHUNK_ROWS rows, pass one finds the matched rows (keeping their
    // predicate columns) and pass two decodes the rest of only those rows, in sub-rounds of up to
    // UPDATE_CHUNK_ROWS matched rows; images are written once UPDATE_CHUNK_BYTES of them are
    // buffered, and only the matched row sets (bitmaps) outlive a round. Memory follows the round
    // and one chunk of images, not the statement. Files and ids come in file order, as in one round.
    let matcher = match &predicate {
        Some(p) if snapshot.deletion_vectors_enabled() => {
            RowMatcher::new(Arc::clone(&snapshot), p)?
        }
        _ => None,
    };
    if let (Some(matcher), Some(p)) = (matcher, &predicate) {
        let matcher = Arc::new(matcher.keeping_values());
        let files = register_candidates(&mut txn, &snapshot, Some(p))?;
        let opts = dml_read_options(&snapshot);
        let parallelism = txn.table.env.parallelism;
        let mut all: Vec<FileMatch> = Vec::with_capacity(files.len());
        // Images are carried across rounds until UPDATE_CHUNK_BYTES, so a statement writes files
        // of that size, not one small file per round.
        let mut new_rows = NewRows::default();
        for round in rounds_by_rows(&files, |a| {
            a.num_records()
                .map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX))
        }) {
            let round_files: Vec<Add> = files.get(round).unwrap_or_default().to_vec();
            let mut matches = match_files(
                &txn.table.store,
                Arc::clone(&matcher),
                round_files,
                parallelism,
            )
            .await?;
            for sub in rounds_by_rows(&matches, |m| m.matched.len()) {
                let part = matches.get(sub).unwrap_or_default();
                let images =
                    read_matched_rows(&txn.table.store, &snapshot, &opts, part, parallelism)
                        .await?;
                for (m, batches) in part.iter().zip(images) {
                    metrics.scanned_files += 1;
                    if m.matched.is_empty() {
                        continue;
                    }
                    metrics.updated_rows += m.matched.len();
                    for batch in &batches {
                        let batch = stabilize_row_tracking(&snapshot, &m.add, batch, true)?;
                        let updated = apply_assignments(&ectx, &batch, &phys_assign, cast_failure)?;
                        record_update(&mut txn, &batch, &updated).await?;
                        new_rows.push(without_row_index(&updated)?);
                    }
                }
                if new_rows.bytes() >= UPDATE_CHUNK_BYTES {
                    new_rows.write(&mut txn, &snapshot, &mut metrics).await?;
                }
            }
            for m in &mut matches {
                m.values = None;
            }
            all.append(&mut matches);
        }
        stage_dv_removals(&mut txn, &snapshot, &all, &mut metrics).await?;
        return finish(txn, &snapshot, new_rows, metrics, start).await;
    }
    // Full rows, file by file: each file's matched rows are removed and their images buffered
    // (DVs off: the file's whole image, rows in place), written once the buffer reaches
    // UPDATE_CHUNK_BYTES — memory follows one file and one chunk.
    let files = register_candidates(&mut txn, &snapshot, predicate.as_ref())?;
    let opts = dml_read_options(&snapshot);
    let mut new_rows = NewRows::default();
    for add in files {
        let Some(scan) = scan_file(&txn.table.store, &snapshot, &add, &opts, None).await? else {
            continue;
        };
        metrics.scanned_files += 1;
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
        let updated = without_row_index(&apply_assignments(
            &ectx,
            &matched,
            &phys_assign,
            cast_failure,
        )?)?;
        record_update(&mut txn, &matched, &updated).await?;
        stage_row_update(
            &mut txn,
            &snapshot,
            &scan,
            &mask,
            updated,
            &mut new_rows,
            &mut metrics,
        )
        .await?;
        if new_rows.bytes() >= UPDATE_CHUNK_BYTES {
            new_rows.write(&mut txn, &snapshot, &mut metrics).await?;
        }
    }
    finish(txn, &snapshot, new_rows, metrics, start).await
}

/// Records an update's pre- and post-images (change data feed; a no-op when it is off).
async fn record_update(
    txn: &mut Transaction,
    before: &RecordBatch,
    after: &RecordBatch,
) -> Result<()> {
    change_data::record(txn, ChangeType::UpdatePreimage, before).await?;
    change_data::record(txn, ChangeType::UpdatePostimage, after).await
}

/// Consecutive ranges of `items` whose `rows` sum to at most UPDATE_CHUNK_ROWS (an item larger
/// than that is a range of its own).
fn rounds_by_rows<T>(items: &[T], rows: impl Fn(&T) -> u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut from, mut sum) = (0usize, 0u64);
    for (i, item) in items.iter().enumerate() {
        let n = rows(item);
        if i > from && sum.saturating_add(n) > UPDATE_CHUNK_ROWS {
            out.push(from..i);
            from = i;
            sum = 0;
        }
        sum = sum.saturating_add(n);
    }
    if from < items.len() {
        out.push(from..items.len());
    }
    out
}

/// Writes the updated rows and records the metrics.
async fn finish(
    mut txn: Transaction,
    snapshot: &Snapshot,
    mut new_rows: NewRows,
    mut metrics: DmlMetrics,
    start: i64,
) -> Result<Transaction> {
    new_rows.write(&mut txn, snapshot, &mut metrics).await?;
    txn.affected_rows = Some(metrics.updated_rows);
    let elapsed = txn.table.env.clock.now_ms() - start;
    metrics.execution_time_ms = elapsed;
    txn.metrics = crate::operation_metrics::OperationMetrics::Dml(metrics);
    Ok(txn)
}
