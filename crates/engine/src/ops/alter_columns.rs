//! ALTER TABLE ADD COLUMNS and DROP COLUMNS, of top-level columns and of nested fields (column
//! paths: `s.c`, `arr.element.c`, `m.value.c`; `schema_path.rs`). Nothing is rewritten:
//! - A new column or field is nullable and not generated: rows already written have no value for
//!   it and read NULL (a file's struct is conformed to the table's by field name, missing fields
//!   NULL: `scan/read.rs` without column mapping, `column_mapping.rs` with it). Under column
//!   mapping it gets a fresh id and physical name, so no old file's data can surface under it.
//! - DROP needs column mapping: the data stays in old files under a physical name no table field
//!   names any more, so it is never read again. A partition or clustering column (or a struct that
//!   holds one), a column a CHECK constraint or generated column reads, and a struct's last field
//!   cannot be dropped.

use std::collections::BTreeMap;

use delta_rlc_protocol::actions::{Metadata, Protocol};
use delta_rlc_protocol::column_mapping::{self, ColumnMappingMode};
use delta_rlc_protocol::schema::{StructField, StructType};
use serde_json::json;

use super::alter::{needs_mapping, refuse_if_referenced};
use crate::error::{EngineError, Result};
use crate::ops::schema_path;
use crate::txn::Transaction;

/// A column to add: the path of the struct that receives it (empty: the table) and the field.
pub type NewColumn = (Vec<String>, StructField);

/// Adds `columns` to `schema` (and the features their types need to `protocol`); returns the
/// operation parameters.
pub(super) fn add_columns(
    schema: &mut StructType,
    configuration: &mut BTreeMap<String, String>,
    protocol: &mut Protocol,
    mode: ColumnMappingMode,
    txn: &Transaction,
    columns: &[NewColumn],
) -> Result<serde_json::Value> {
    let mut names = Vec::with_capacity(columns.len());
    for (parent, c) in columns {
        let mut path = parent.clone();
        path.push(c.name.clone());
        let shown = schema_path::display(&path);
        if !c.nullable {
            return Err(EngineError::invalid(format!(
                "ADD COLUMNS: {shown} must be nullable (rows already written have no value for it)"
            )));
        }
        if crate::constraints::generation_of(c).is_some()
            || c.metadata
                .contains_key(delta_rlc_protocol::schema::GENERATION_EXPRESSION_KEY)
        {
            return Err(EngineError::invalid(format!(
                "ADD COLUMNS: {shown}: New columns cannot be a generated column (rows already written have no value for it; as in Delta)"
            )));
        }
        // Rows already written would hold NULL ids, and other writers would generate ids that
        // collide with none of them only by luck: Delta refuses adding an identity column.
        if crate::txn::identity::is_identity(c)
            || c.metadata
                .keys()
                .any(|k| k.starts_with(delta_rlc_protocol::schema::IDENTITY_KEY_PREFIX))
        {
            return Err(EngineError::invalid(format!(
                "ADD COLUMNS: {shown} cannot be an identity column (rows already written have no id; as in Delta, create the table with it)"
            )));
        }
        // Other keys the protocol gives meaning to say what the files hold (column mapping,
        // invariants, type changes): a new column's are the engine's to set, not the caller's.
        if let Some(k) = c.metadata.keys().find(|k| {
            k.to_ascii_lowercase().starts_with("delta.") || k.as_str() == "parquet.field.id"
        }) {
            return Err(EngineError::invalid(format!(
                "ADD COLUMNS: {shown}: column metadata key {k} is the protocol's (set through the operation that owns it)"
            )));
        }
        let target = match parent.is_empty() {
            true => &mut *schema,
            false => schema_path::parent_struct_mut(schema, &path)?,
        };
        if target
            .fields
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(&c.name))
        {
            return Err(EngineError::invalid(format!(
                "column {shown} already exists"
            )));
        }
        let mut added = StructType {
            fields: vec![c.clone()],
        };
        if mode != ColumnMappingMode::None {
            name_new_columns(&mut added, configuration, txn);
        }
        for f in added.type_features() {
            *protocol = protocol.with_feature(f);
        }
        target.fields.extend(added.fields);
        names.push(shown);
    }
    Ok(json!({ "columns": names }))
}

/// Drops the columns at `paths` from `schema` (column mapping required); returns the operation
/// parameters.
pub(super) fn drop_columns(
    schema: &mut StructType,
    metadata: &Metadata,
    mode: ColumnMappingMode,
    clustering: &[String],
    paths: &[Vec<String>],
    if_exists: bool,
) -> Result<serde_json::Value> {
    needs_mapping("DROP COLUMN", mode)?;
    let mut dropped = Vec::new();
    for p in paths {
        // The path as the schema spells it.
        let mut spelled = Vec::with_capacity(p.len());
        for i in 0..p.len() {
            match schema_path::field_mut(schema, &p[..=i]) {
                Ok(f) => spelled.push(f.name.clone()),
                // `element`, `key` and `value` name no field: kept as given.
                Err(_) if i + 1 < p.len() => spelled.push(p[i].clone()),
                Err(_) if if_exists => break,
                Err(e) => return Err(e),
            }
        }
        if spelled.len() < p.len() {
            continue;
        }
        let shown = schema_path::display(&spelled);
        if spelled.len() == 1 && metadata.partition_columns.contains(&shown) {
            return Err(EngineError::invalid(format!(
                "{shown} is a partition column: it cannot be dropped"
            )));
        }
        let lower = shown.to_ascii_lowercase();
        if clustering.iter().any(|c| {
            let c = c.to_ascii_lowercase();
            c == lower || c.starts_with(&format!("{lower}.")) || lower.starts_with(&format!("{c}."))
        }) {
            return Err(EngineError::invalid(format!(
                "{shown} is or holds a clustering column: it cannot be dropped"
            )));
        }
        refuse_if_referenced(schema, metadata, &spelled, "dropped")?;
        let parent = schema_path::parent_struct_mut(schema, &spelled)?;
        let last = spelled.last().map_or("", String::as_str);
        parent.fields.retain(|f| f.name != last);
        if parent.fields.is_empty() {
            return Err(match spelled.len() {
                1 => EngineError::invalid("a table needs at least one column"),
                n => EngineError::invalid(format!(
                    "{} would have no field left: drop it instead",
                    schema_path::display(&spelled[..n - 1])
                )),
            });
        }
        // The data files must keep a column to count their rows by.
        if spelled.len() == 1
            && !metadata.partition_columns.is_empty()
            && schema.fields.len() <= metadata.partition_columns.len()
        {
            return Err(EngineError::invalid(format!(
                "{shown} is the last column that is not a partition column: a table cannot be partitioned by all of its columns"
            )));
        }
        dropped.push(shown);
    }
    Ok(json!({ "columns": dropped }))
}

/// Gives the columns of `fields` that have none an id above the table's
/// `delta.columnMapping.maxColumnId` and a fresh physical name, and raises that maximum.
pub(super) fn name_new_columns(
    fields: &mut StructType,
    configuration: &mut BTreeMap<String, String>,
    txn: &Transaction,
) {
    let max = configuration
        .get(column_mapping::MAX_ID_KEY)
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0);
    let ids = &txn.table.env.ids;
    let max = column_mapping::assign_physical_names(fields, max, &mut || ids.uuid().to_string());
    configuration.insert(column_mapping::MAX_ID_KEY.into(), max.to_string());
}

/// `ALTER COLUMN c COMMENT '…'` and deltalake's `set_column_metadata`: `entries` are set on the
/// field's metadata (other keys stay). Keys the protocol and this engine give meaning to
/// (`delta.*`: column mapping, generation and identity, invariants, type changes; Parquet's
/// field id) are refused: a column's metadata must keep saying what its files hold.
pub(super) fn set_column_metadata(
    schema: &mut StructType,
    path: &[String],
    entries: &std::collections::BTreeMap<String, String>,
) -> Result<serde_json::Value> {
    if entries.is_empty() {
        return Err(EngineError::invalid("column metadata: no entry given"));
    }
    if let Some(k) = entries
        .keys()
        .find(|k| k.to_ascii_lowercase().starts_with("delta.") || *k == "parquet.field.id")
    {
        return Err(EngineError::invalid(format!(
            "column metadata key {k} is the protocol's (set through the operation that owns it)"
        )));
    }
    let f = schema_path::field_mut(schema, path)?;
    for (k, v) in entries {
        f.metadata
            .insert(k.clone(), serde_json::Value::String(v.clone()));
    }
    Ok(json!({ "column": f.name.clone(), "metadata": entries }))
}
