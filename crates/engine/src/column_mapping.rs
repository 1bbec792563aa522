//! Column-mapped tables: data files name columns (nested ones too) by their physical names. Reads
//! turn decoded batches into the table's logical names and shapes (and logical projections into
//! physical ones); writes turn logical batches into physical ones, with Parquet field ids. Without
//! column mapping all of these are the identity.
//!
//! Columns are matched by physical name only (never by logical name: a renamed column keeps its
//! physical name, which may be another column's logical name). A nested field the file lacks (added
//! later) comes back NULL, as a top-level column the file predates does.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, GenericListArray, MapArray, OffsetSizeTrait,
    RecordBatch, StructArray,
};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use std::collections::HashMap;

use delta_rlc_protocol::column_mapping::{physical_name, ColumnMappingMode, ID_KEY};
use delta_rlc_protocol::schema::{DataType as DeltaType, StructField, StructType};
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;

use crate::arrow_conv::delta_to_arrow_type;
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;

/// The physical names of the logical top-level columns `cols`.
pub fn physical_projection(snapshot: &Snapshot, cols: &[String]) -> Vec<String> {
    cols.iter()
        .map(|c| {
            let logical = snapshot
                .schema
                .fields
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(c))
                .map_or(c.as_str(), |f| f.name.as_str());
            snapshot.physical_name(logical).to_string()
        })
        .collect()
}

/// `batch` as decoded from a data file (physical names) with its table columns renamed to their
/// logical names, nested fields included. Of the other columns only `extra` ones (materialized row
/// tracking, named by the table's configuration) are kept: a dropped column's data stays in old
/// files under a physical name that may now be a logical name.
pub fn to_logical(snapshot: &Snapshot, batch: RecordBatch, extra: &[Field]) -> Result<RecordBatch> {
    let mode = snapshot.column_mapping_mode();
    if mode == ColumnMappingMode::None {
        return Ok(batch);
    }
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        let table_field = snapshot
            .schema
            .fields
            .iter()
            .find(|tf| physical_name(tf, mode).is_ok_and(|p| p == f.name()));
        match table_field {
            Some(tf) => {
                let c = logical_array(c, &tf.data_type, mode)?;
                fields.push(Field::new(&tf.name, c.data_type().clone(), true));
                columns.push(c);
            }
            None if extra.iter().any(|e| e.name() == f.name()) => {
                fields.push(f.as_ref().clone());
                columns.push(Arc::clone(c));
            }
            None => {}
        }
    }
    // The row count survives even when no decoded column is a table column (a projection of only
    // columns added after the file was written).
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// `array` (a file's column of nested Delta type `t`, on a table without column mapping) with its
/// structs' fields matched to `t`'s by name, in `t`'s order; missing fields NULL, others dropped.
pub(crate) fn conform_nested(array: &ArrayRef, t: &DeltaType) -> Result<ArrayRef> {
    logical_array(array, t, ColumnMappingMode::None)
}

/// `array` (a file's column of Delta type `t`, nested fields by physical name) with nested fields
/// renamed to logical names, in the schema's order; missing nested fields NULL.
fn logical_array(array: &ArrayRef, t: &DeltaType, mode: ColumnMappingMode) -> Result<ArrayRef> {
    Ok(match (t, array.data_type()) {
        (DeltaType::Primitive(_), _) => Arc::clone(array),
        (DeltaType::Struct(st), DataType::Struct(_)) => {
            Arc::new(logical_struct(array.as_struct(), st, mode)?)
        }
        (DeltaType::Array { element, .. }, DataType::List(_)) => {
            map_list(array.as_list::<i32>(), element, mode, logical_array)?
        }
        (DeltaType::Array { element, .. }, DataType::LargeList(_)) => {
            map_list(array.as_list::<i64>(), element, mode, logical_array)?
        }
        (DeltaType::Map { key, value, .. }, DataType::Map(_, sorted)) => {
            let map = array.as_map();
            let keys = logical_array(map.keys(), key, mode)?;
            let values = logical_array(map.values(), value, mode)?;
            rebuild_map(map, keys, values, *sorted)?
        }
        (_, other) => {
            return Err(EngineError::corrupt(format!(
                "a data file column of type {other} where the schema has {}",
                delta_to_arrow_type(t)
            )))
        }
    })
}

/// `batch` (logical names, table columns and `extra` columns) as a data file stores it: table
/// columns under their physical names, nested fields too, each with its column id as the Parquet
/// field id; other columns unchanged.
pub fn to_physical(
    schema: &StructType,
    mode: ColumnMappingMode,
    batch: &RecordBatch,
) -> Result<RecordBatch> {
    if mode == ColumnMappingMode::None {
        return Ok(batch.clone());
    }
    let in_schema = batch.schema();
    let mut fields = Vec::with_capacity(in_schema.fields().len());
    let mut columns = Vec::with_capacity(in_schema.fields().len());
    for (f, c) in in_schema.fields().iter().zip(batch.columns()) {
        match schema.fields.iter().find(|tf| tf.name == *f.name()) {
            Some(tf) => {
                let (field, c) = physical_column(tf, c, mode)?;
                fields.push(field);
                columns.push(c);
            }
            None => {
                fields.push(f.as_ref().clone());
                columns.push(Arc::clone(c));
            }
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// Table field `tf`'s column as stored: physical name, field id, nested fields renamed.
fn physical_column(
    tf: &StructField,
    array: &ArrayRef,
    mode: ColumnMappingMode,
) -> Result<(Field, ArrayRef)> {
    let c = physical_array(array, &tf.data_type, mode)?;
    let mut field = Field::new(physical_name(tf, mode)?, c.data_type().clone(), true);
    if let Some(id) = tf.metadata.get(ID_KEY).and_then(|v| v.as_i64()) {
        field = field.with_metadata(HashMap::from([(
            PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]));
    }
    Ok((field, c))
}

/// The inverse of `logical_array`: nested fields under their physical names (with field ids).
fn physical_array(array: &ArrayRef, t: &DeltaType, mode: ColumnMappingMode) -> Result<ArrayRef> {
    Ok(match (t, array.data_type()) {
        (DeltaType::Primitive(_), _) => Arc::clone(array),
        (DeltaType::Struct(st), DataType::Struct(_)) => {
            let s = array.as_struct();
            let mut fields = Vec::with_capacity(st.fields.len());
            let mut columns = Vec::with_capacity(st.fields.len());
            for f in &st.fields {
                let child = s.column_by_name(&f.name).ok_or_else(|| {
                    EngineError::Internal(format!("nested field {} missing from a write", f.name))
                })?;
                let (field, c) = physical_column(f, child, mode)?;
                fields.push(field);
                columns.push(c);
            }
            Arc::new(StructArray::try_new(
                Fields::from(fields),
                columns,
                s.nulls().cloned(),
            )?)
        }
        (DeltaType::Array { element, .. }, DataType::List(_)) => {
            map_list(array.as_list::<i32>(), element, mode, physical_array)?
        }
        (DeltaType::Array { element, .. }, DataType::LargeList(_)) => {
            map_list(array.as_list::<i64>(), element, mode, physical_array)?
        }
        (DeltaType::Map { key, value, .. }, DataType::Map(_, sorted)) => {
            let map = array.as_map();
            let keys = physical_array(map.keys(), key, mode)?;
            let values = physical_array(map.values(), value, mode)?;
            rebuild_map(map, keys, values, *sorted)?
        }
        (_, other) => {
            return Err(EngineError::Internal(format!(
                "a column of type {other} written where the schema has {}",
                delta_to_arrow_type(t)
            )))
        }
    })
}

/// `map` with its keys and values replaced (same offsets and nulls).
fn rebuild_map(map: &MapArray, keys: ArrayRef, values: ArrayRef, sorted: bool) -> Result<ArrayRef> {
    let entry_fields = Fields::from(vec![
        Field::new("key", keys.data_type().clone(), false),
        Field::new("value", values.data_type().clone(), true),
    ]);
    let entries = StructArray::try_new(entry_fields.clone(), vec![keys, values], None)?;
    let field = Arc::new(Field::new(
        "key_value",
        DataType::Struct(entry_fields),
        false,
    ));
    Ok(Arc::new(MapArray::try_new(
        field,
        map.offsets().clone(),
        entries,
        map.nulls().cloned(),
        sorted,
    )?))
}

/// The physical path of a (dotted) logical column path, e.g. a stats column `s.x`; `None` when
/// it names no column.
pub fn physical_path(schema: &StructType, mode: ColumnMappingMode, path: &str) -> Option<String> {
    let mut st = schema;
    let mut out = Vec::new();
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let f = st
            .fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(part))?;
        out.push(physical_name(f, mode).ok()?.to_string());
        if parts.peek().is_some() {
            match &f.data_type {
                DeltaType::Struct(inner) => st = inner,
                _ => return None,
            }
        }
    }
    Some(out.join("."))
}

/// `list` with its values renamed by `f` (either direction).
fn map_list<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    element: &DeltaType,
    mode: ColumnMappingMode,
    f: fn(&ArrayRef, &DeltaType, ColumnMappingMode) -> Result<ArrayRef>,
) -> Result<ArrayRef> {
    let values = f(list.values(), element, mode)?;
    let field = Arc::new(Field::new("element", values.data_type().clone(), true));
    Ok(Arc::new(GenericListArray::<O>::try_new(
        field,
        list.offsets().clone(),
        values,
        list.nulls().cloned(),
    )?))
}

fn logical_struct(
    array: &StructArray,
    st: &StructType,
    mode: ColumnMappingMode,
) -> Result<StructArray> {
    let mut fields = Vec::with_capacity(st.fields.len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(st.fields.len());
    for f in &st.fields {
        let physical = physical_name(f, mode)?;
        let child = match array.column_by_name(physical) {
            Some(c) => logical_array(c, &f.data_type, mode)?,
            None => new_null_array(&delta_to_arrow_type(&f.data_type), array.len()),
        };
        fields.push(Field::new(&f.name, child.data_type().clone(), true));
        columns.push(child);
    }
    Ok(StructArray::try_new(
        Fields::from(fields),
        columns,
        array.nulls().cloned(),
    )?)
}
