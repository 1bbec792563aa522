//! Row tracking for rows a DML rewrites: the materialized row-id and row-commit-version columns
//! keep each row's identity across rewrites (`baseRowId + row index` until materialized).
//! Used by the DML operations and by the row-id remap reconciler, so it sits below both.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use delta_rlc_protocol::actions::Add;

use crate::error::{EngineError, Result};
use crate::scan::ROW_INDEX_COLUMN;
use crate::snapshot::Snapshot;

/// Names of the materialized row-tracking columns, when row tracking is enabled.
pub fn row_tracking_columns(snapshot: &Snapshot) -> Option<(String, String)> {
    if !snapshot.row_tracking_supported()
        || !snapshot
            .property_true(delta_rlc_protocol::table_properties::TableProperty::EnableRowTracking)
    {
        return None;
    }
    Some((
        snapshot
            .property(delta_rlc_protocol::table_properties::TableProperty::MaterializedRowIdColumnName)?
            .to_string(),
        snapshot
            .property(delta_rlc_protocol::table_properties::TableProperty::MaterializedRowCommitVersionColumnName)?
            .to_string(),
    ))
}

/// Fills the materialized row-id / row-commit-version columns of `rows` (a FileScan batch) with the
/// stable values: materialized if present, else `baseRowId + rowIndex` / `defaultRowCommitVersion`.
/// `new_version` true sets the commit version to NULL (rows being updated get a fresh version).
pub fn stabilize_row_tracking(
    snapshot: &Snapshot,
    add: &Add,
    rows: &RecordBatch,
    new_version: bool,
) -> Result<RecordBatch> {
    let Some((id_col, ver_col)) = row_tracking_columns(snapshot) else {
        return Ok(rows.clone());
    };
    let idx = rows
        .column_by_name(ROW_INDEX_COLUMN)
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .ok_or_else(|| EngineError::Internal("row index column missing".into()))?;
    let base = add.base_row_id;
    let dflt = add.default_row_commit_version;
    let mat_id = rows
        .column_by_name(&id_col)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>().cloned());
    let mat_ver = rows
        .column_by_name(&ver_col)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>().cloned());
    let n = rows.num_rows();
    let mut ids = Vec::with_capacity(n);
    let mut vers = Vec::with_capacity(n);
    for i in 0..n {
        let m = mat_id
            .as_ref()
            .filter(|a| a.is_valid(i))
            .map(|a| a.value(i));
        // baseRowId comes from the log: checked, never wrapped.
        let id = match m {
            Some(id) => Some(id),
            None => match base {
                Some(b) => Some(
                    i64::try_from(idx.value(i))
                        .ok()
                        .and_then(|r| b.checked_add(r))
                        .ok_or_else(|| {
                            EngineError::corrupt(format!(
                                "file {}: baseRowId {b} + row {} overflows",
                                add.path,
                                idx.value(i)
                            ))
                        })?,
                ),
                None => None,
            },
        };
        if id.is_none() {
            return Err(EngineError::corrupt(format!(
                "file {} has row tracking enabled but no baseRowId",
                add.path
            )));
        }
        ids.push(id);
        if new_version {
            vers.push(None);
        } else {
            vers.push(
                mat_ver
                    .as_ref()
                    .filter(|a| a.is_valid(i))
                    .map(|a| a.value(i))
                    .or(dflt),
            );
        }
    }
    let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
    let schema = rows.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (name, arr) in [
        (&id_col, Int64Array::from(ids)),
        (&ver_col, Int64Array::from(vers)),
    ] {
        if let Some(pos) = schema.fields().iter().position(|f| f.name() == name) {
            if let Some(c) = cols.get_mut(pos) {
                *c = Arc::new(arr);
            }
        } else {
            cols.push(Arc::new(arr));
            fields.push(Field::new(name, DataType::Int64, true));
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}
