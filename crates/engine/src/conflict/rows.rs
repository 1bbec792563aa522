//! Row-level evaluation for the value-exact tiers: read a winner's file as the read snapshot's
//! schema sees it, pick the rows of interest, and ask whether any of them satisfies a read predicate
//! (including a MERGE source-key marker). Every failure is returned as an error so the caller can
//! decline (keep the conflict). Predicates are planned with `expr_plan::plan_physical`, the planning
//! DML uses for its own matching: a different plan of the same predicate can answer differently
//! (found by the value-class simulator: `k IN (NULL, 0.0)` is an IN list, which misses -0.0, when
//! planned as written, and `k = 0.0`, which matches it, once simplified).

use arrow::array::{Array, BooleanArray, RecordBatch, UInt64Array};
use datafusion::common::DFSchema;
use delta_rlc_protocol::actions::Add;
use delta_rlc_storage::TableStore;
use roaring::RoaringTreemap;

use crate::arrow_conv::table_arrow_schema;
use crate::dv_io::load_file_dv;
use crate::error::{EngineError, Result};
use crate::read_set::ReadPredicate;
use crate::scan::{read_file, read_file_rows, FileReadOptions, ROW_INDEX_COLUMN};
use crate::snapshot::Snapshot;

/// Does any row of `batch` selected by `selected` (None = all) satisfy `pred`?
pub fn any_row_matches(
    snapshot: &Snapshot,
    pred: &ReadPredicate,
    batch: &RecordBatch,
    selected: Option<&BooleanArray>,
) -> Result<bool> {
    let n = batch.num_rows();
    let schema = table_arrow_schema(&snapshot.schema);
    let table_part = batch.project(&(0..schema.fields().len()).collect::<Vec<_>>())?;
    let mut mask: Vec<bool> = match selected {
        Some(s) => (0..n).map(|i| s.is_valid(i) && s.value(i)).collect(),
        None => vec![true; n],
    };
    if let Some(expr) = pred.full() {
        let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
        // Planned exactly as the statement planned its own predicate (coercion, then the
        // simplifier: it rewrites small IN lists into `=` chains, and DataFusion's `=` and IN
        // disagree on -0.0), so the tier's answer is the statement's.
        let phys = crate::expr_plan::plan_physical(&crate::spark::context(), &expr, &df_schema)?;
        let v = phys.evaluate(&table_part)?.into_array(n)?;
        let v = v
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| EngineError::Internal("predicate is not boolean".into()))?;
        for (i, m) in mask.iter_mut().enumerate() {
            *m = *m && v.is_valid(i) && v.value(i);
        }
    }
    if let Some(keys) = &pred.exact_keys {
        // The shared key equality (-0.0 = 0.0, decimals by value, NULL = nothing); a column whose
        // type is outside its key's class is an error, and the tier declines.
        let cols = keys
            .columns
            .iter()
            .map(|c| {
                table_part
                    .column_by_name(c)
                    .cloned()
                    .ok_or_else(|| EngineError::Internal(format!("key column {c} missing")))
            })
            .collect::<Result<Vec<_>>>()?;
        let found = keys.tuples.contains_rows(&keys.equality, &cols)?;
        if found.len() != mask.len() {
            return Err(EngineError::Internal(
                "key lookup of a different row count".into(),
            ));
        }
        for (m, f) in mask.iter_mut().zip(found) {
            *m = *m && f;
        }
    }
    Ok(mask.into_iter().any(|m| m))
}

/// Live rows of a winner's added file (its DV applied).
pub async fn live_rows(
    store: &TableStore,
    snapshot: &Snapshot,
    add: &Add,
) -> Result<Vec<RecordBatch>> {
    read_file(store, snapshot, add, &FileReadOptions::default()).await
}

/// Rows that a winner removed from a file: the pre-image's live rows minus the post-image's live
/// rows (`post_dv` None = the whole file was removed). Returned with a selection mask per batch.
/// When the post-image is a DV update, only the removed rows (`post_dv \ pre_dv`, usually a few
/// among many) are decoded, through a row selection: one batch of just those rows, all selected,
/// or none when the winner removed nothing. The caller evaluates its predicates row by row, so the
/// answer is the same as over the whole file with the mask; it is only cheaper.
pub async fn removed_rows(
    store: &TableStore,
    snapshot: &Snapshot,
    pre_image: &Add,
    post_dv: Option<&RoaringTreemap>,
) -> Result<Vec<(RecordBatch, BooleanArray)>> {
    let pre_dv = load_file_dv(store, &snapshot.root, pre_image).await?;
    if let Some(post) = post_dv {
        if !pre_dv.is_subset(post) {
            return Err(EngineError::corrupt(format!(
                "the post-image DV of {} does not contain its pre-image DV",
                pre_image.path
            )));
        }
        let removed = post - &pre_dv;
        if removed.is_empty() {
            return Ok(Vec::new());
        }
        // Every removed row, decoded and nothing else (a row past the file's end is an error).
        let opts = FileReadOptions {
            apply_dv: false,
            with_row_index: false,
            extra_columns: Vec::new(),
        };
        let batches = read_file_rows(store, snapshot, pre_image, &opts, &removed, None).await?;
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let Some(first) = batches.first() else {
            return Err(EngineError::corrupt(format!(
                "rows the winner removed from {} are not in the file",
                pre_image.path
            )));
        };
        if rows as u64 != removed.len() {
            return Err(EngineError::Internal(format!(
                "read {rows} of the {} rows removed from {}",
                removed.len(),
                pre_image.path
            )));
        }
        let batch = arrow::compute::concat_batches(&first.schema(), &batches)?;
        let all = BooleanArray::from(vec![true; batch.num_rows()]);
        return Ok(vec![(batch, all)]);
    }
    let opts = FileReadOptions {
        apply_dv: false,
        with_row_index: true,
        extra_columns: Vec::new(),
    };
    let batches = read_file(store, snapshot, pre_image, &opts).await?;
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let idx = b
            .column_by_name(ROW_INDEX_COLUMN)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| EngineError::Internal("row index missing".into()))?;
        let sel: BooleanArray = (0..idx.len())
            .map(|i| Some(!pre_dv.contains(idx.value(i))))
            .collect();
        out.push((b, sel));
    }
    Ok(out)
}
