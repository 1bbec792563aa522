//! Reading column-mapped tables: data files name columns (nested ones too) by their physical
//! names; this turns decoded batches into the table's logical names and shapes, and logical
//! projections into physical ones. Without column mapping both are the identity.
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
use delta_rlc_protocol::column_mapping::{physical_name, ColumnMappingMode};
use delta_rlc_protocol::schema::{DataType as DeltaType, StructType};

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
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
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
            logical_list(array.as_list::<i32>(), element, mode)?
        }
        (DeltaType::Array { element, .. }, DataType::LargeList(_)) => {
            logical_list(array.as_list::<i64>(), element, mode)?
        }
        (DeltaType::Map { key, value, .. }, DataType::Map(_, sorted)) => {
            let map = array.as_map();
            let keys = logical_array(map.keys(), key, mode)?;
            let values = logical_array(map.values(), value, mode)?;
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
            Arc::new(MapArray::try_new(
                field,
                map.offsets().clone(),
                entries,
                map.nulls().cloned(),
                *sorted,
            )?)
        }
        (_, other) => {
            return Err(EngineError::corrupt(format!(
                "a data file column of type {other} where the schema has {}",
                delta_to_arrow_type(t)
            )))
        }
    })
}

fn logical_list<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    element: &DeltaType,
    mode: ColumnMappingMode,
) -> Result<ArrayRef> {
    let values = logical_array(list.values(), element, mode)?;
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
