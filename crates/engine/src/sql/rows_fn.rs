//! `delta_rows('t' | 'path')`: the live rows of a row-tracking table with their row-tracking
//! identity — every table column plus `_row_id` and `_row_commit_version`, the values Spark shows as
//! `_metadata.row_id` / `_metadata.row_commit_version` (materialized value if present, else
//! `baseRowId` + physical row index / `defaultRowCommitVersion`). Tables without row tracking are an
//! error, as in Spark. Like `delta_files`, arguments are loaded before planning.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema};

use crate::arrow_conv::table_arrow_schema;
use crate::error::{EngineError, Result};
use crate::ops::dml::dml_read_options;
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::read_file;
use crate::snapshot::Snapshot;
use crate::table::DeltaTable;

pub const NAME: &str = "delta_rows";
pub const ROW_ID: &str = "_row_id";
pub const ROW_COMMIT_VERSION: &str = "_row_commit_version";

pub async fn rows_batch(table: &DeltaTable, snapshot: &Snapshot) -> Result<RecordBatch> {
    let Some((id_col, ver_col)) = row_tracking_columns(snapshot) else {
        return Err(EngineError::invalid(
            "delta_rows: row tracking is not enabled on this table",
        ));
    };
    let table_schema = table_arrow_schema(&snapshot.schema);
    let mut fields: Vec<Field> = table_schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(ROW_ID, DataType::Int64, false));
    fields.push(Field::new(ROW_COMMIT_VERSION, DataType::Int64, false));
    let schema = Arc::new(Schema::new(fields));
    let opts = dml_read_options(snapshot);
    let mut out = Vec::new();
    for add in &snapshot.files {
        for batch in read_file(&table.store, snapshot, add, &opts).await? {
            let batch = stabilize_row_tracking(snapshot, add, &batch, false)?;
            let mut cols: Vec<ArrayRef> = batch
                .columns()
                .iter()
                .take(table_schema.fields().len())
                .cloned()
                .collect();
            for name in [&id_col, &ver_col] {
                let c = batch.column_by_name(name).ok_or_else(|| {
                    EngineError::Internal(format!("row tracking column {name} missing"))
                })?;
                cols.push(Arc::clone(c));
            }
            // try_new rejects NULLs in the non-nullable identity columns: a file with row tracking
            // but no baseRowId or commit version is reported, not shown as NULL.
            out.push(
                RecordBatch::try_new(Arc::clone(&schema), cols).map_err(|e| {
                    EngineError::corrupt(format!("delta_rows: file {}: {e}", add.path))
                })?,
            );
        }
    }
    Ok(concat_batches(&schema, &out)?)
}
