//! Reading a snapshot into Arrow: file pruning by partition values and stats, per-file reads with
//! deletion vectors applied and partition columns filled in.

mod matcher;
mod prune;
mod read;
pub(crate) mod vanished;

pub use matcher::{
    match_files, read_file_rows, read_matched_rows, FileMatch, RowMatcher, RowVerdict,
};
pub use prune::{prune_files, prune_with_stats, FileStatsPruning, StatsSubset};
pub use read::{read_file, read_file_projected, FileReadOptions, ROW_INDEX_COLUMN};

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::logical_expr::Expr;
use delta_rlc_protocol::actions::Add;
use delta_rlc_storage::TableStore;

use crate::arrow_conv::table_arrow_schema;
use crate::error::Result;
use crate::snapshot::Snapshot;

/// Files that may hold rows matching `filter` (all files without a filter).
pub fn candidate_files<'a>(snapshot: &'a Snapshot, filter: Option<&Expr>) -> Result<Vec<&'a Add>> {
    match filter {
        None => Ok(snapshot.files.iter().collect()),
        Some(f) => {
            let keep = prune_files(snapshot, &snapshot.files, f)?;
            Ok(snapshot
                .files
                .iter()
                .zip(keep)
                .filter(|(_, k)| *k)
                .map(|(a, _)| a)
                .collect())
        }
    }
}

/// The files whose every row satisfies `predicate`, a predicate over partition columns only:
/// evaluated exactly on each file's partition values (a file is chosen only when the predicate is
/// true for them; false, NULL and any evaluation failure keep it out). Pruning
/// ([`candidate_files`]) only says which files *may* match — a predicate it cannot reason about
/// (`g / 2 = 0`) keeps every file — so a statement that removes whole files must use this.
pub fn files_matching_partition_predicate<'a>(
    snapshot: &'a Snapshot,
    predicate: &Expr,
) -> Result<Vec<&'a Add>> {
    use arrow::array::{Array, BooleanArray, RecordBatchOptions};
    use arrow::datatypes::Schema;
    use datafusion::common::DFSchema;
    let candidates = candidate_files(snapshot, Some(predicate))?;
    if candidates.is_empty() {
        return Ok(candidates);
    }
    let table = table_arrow_schema(&snapshot.schema);
    let fields: Vec<arrow::datatypes::FieldRef> = table
        .fields()
        .iter()
        .filter(|f| snapshot.metadata.partition_columns.contains(f.name()))
        .cloned()
        .collect();
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let mut columns = Vec::with_capacity(fields.len());
    for f in &fields {
        let per_file = candidates
            .iter()
            .map(|add| read::table_column(snapshot, add, f, &one_row))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&dyn Array> = per_file.iter().map(|a| a.as_ref()).collect();
        columns.push(arrow::compute::concat(&refs)?);
    }
    // Partition values may be NULL whatever the column's nullability.
    let schema = Arc::new(Schema::new(
        fields
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let phys = crate::expr_plan::plan_physical(&crate::spark::context(), predicate, &df_schema)?;
    let v = phys.evaluate(&batch)?.into_array(batch.num_rows())?;
    let v = v
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| crate::error::EngineError::invalid("the predicate is not boolean"))?;
    Ok(candidates
        .into_iter()
        .enumerate()
        .filter(|(i, _)| v.is_valid(*i) && v.value(*i))
        .map(|(_, a)| a)
        .collect())
}

/// Reads every live row of the snapshot whose file may match `filter` (rows are not filtered; the
/// caller applies the predicate). Output has the table schema.
pub async fn scan(
    store: &TableStore,
    snapshot: &Arc<Snapshot>,
    filter: Option<&Expr>,
) -> Result<Vec<RecordBatch>> {
    let files = candidate_files(snapshot, filter)?;
    let mut out = Vec::new();
    let opts = FileReadOptions::default();
    for f in files {
        out.extend(read_file(store, snapshot, f, &opts).await?);
    }
    Ok(out)
}

pub fn table_schema(snapshot: &Snapshot) -> SchemaRef {
    table_arrow_schema(&snapshot.schema)
}
