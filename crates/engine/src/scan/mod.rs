//! Reading a snapshot into Arrow: file pruning by partition values and stats, per-file reads with
//! deletion vectors applied and partition columns filled in.

mod matcher;
mod prune;
mod read;

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
