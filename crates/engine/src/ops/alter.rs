//! ALTER TABLE: schema and property changes as one metadata action (and a protocol action when a
//! change needs a table feature). Nothing is rewritten: what the files hold stays valid —
//! - a new column or nested field is nullable (files written before it read NULL; with column
//!   mapping it gets a fresh id and physical name, so no old file's column can be mistaken for it;
//!   ADD and DROP COLUMNS are in `alter_columns.rs`);
//! - RENAME and DROP COLUMN need column mapping: the physical name stays with the column (renamed)
//!   or with the files (dropped, never read again), so no file is touched;
//! - `SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')` upgrades a table: every existing
//!   column's physical name is its current name — exactly what its files already hold.
//!
//! - ADD CONSTRAINT and SET NOT NULL first check every row already in the table.
//!
//! Other ALTERs read no rows, so they register no read: concurrent appends and DML do not conflict
//! with them (as in Delta), while a concurrent metadata change does (both change metadata). ADD
//! CONSTRAINT and SET NOT NULL read the whole table, so a concurrent write makes them retry.

use std::collections::BTreeMap;

use delta_rlc_protocol::actions::Action;
use delta_rlc_protocol::column_mapping::{self, ColumnMappingMode};
use delta_rlc_protocol::schema::{DataType, StructField, StructType};
use serde_json::json;

use super::create::{validate_properties, ENGINE_PROPERTIES as FIXED_PROPERTIES};
use crate::constraints::{TableConstraints, CONSTRAINT_PREFIX};
use crate::error::{EngineError, Result};
use crate::ops::alter_columns::{
    add_columns, drop_columns, name_new_columns, set_column_metadata, NewColumn,
};
use crate::ops::dml::{register_candidates, scan_files};
use crate::ops::schema_path;
use crate::txn::{Operation, Transaction};
use delta_rlc_protocol::table_properties::TableProperty;

/// One ALTER TABLE operation.
#[derive(Debug, Clone)]
pub enum AlterOp {
    /// Top-level columns.
    AddColumns(Vec<StructField>),
    /// Columns or nested fields: each with the path of the struct that receives it (empty: the
    /// table; `alter_columns.rs`).
    AddNestedColumns(Vec<NewColumn>),
    /// `from` is a column path (`s.a` renames field `a` of struct `s`; `schema_path.rs`).
    RenameColumn {
        from: Vec<String>,
        to: String,
    },
    /// Column paths (nested fields too).
    DropColumns {
        paths: Vec<Vec<String>>,
        if_exists: bool,
    },
    SetProperties(BTreeMap<String, String>),
    /// A write's schema replaces the table's (`schema_mode = overwrite`, with an overwrite of
    /// every row): with column mapping every column takes a fresh id and physical name (no file
    /// survives the overwrite). `partition_by` replaces the partition columns too (no file
    /// survives to be laid out the old way); without it they must remain.
    ReplaceSchema {
        schema: StructType,
        partition_by: Option<Vec<String>>,
    },
    UnsetProperties {
        keys: Vec<String>,
        if_exists: bool,
    },
    /// A column path (nested fields too).
    DropNotNull(Vec<String>),
    /// Every existing row is checked first.
    SetNotNull(String),
    /// `delta.constraints.<name>` (lowercase); every existing row is checked first.
    AddConstraint {
        name: String,
        expr: String,
    },
    DropConstraint {
        name: String,
        if_exists: bool,
    },
    /// `CLUSTER BY (…)` / `CLUSTER BY NONE` (empty): the clustering columns (`cluster_by.rs`).
    ClusterBy(Vec<String>),
    /// Table features added to the protocol without enabling anything (deltalake's
    /// `alter.add_feature`): only features whose writer obligations hold while they are merely
    /// supported (`ADDABLE_FEATURES`). Moving a legacy protocol to table features needs
    /// `allow_protocol_versions_increase`.
    AddFeatures {
        features: Vec<String>,
        allow_protocol_versions_increase: bool,
    },
    /// The table's name (None clears it).
    SetName(Option<String>),
    /// The table's description (None clears it).
    SetDescription(Option<String>),
    /// Entries set on a column's (or nested field's) metadata: a comment, user keys; not the
    /// protocol's `delta.*` keys (`alter_columns.rs`).
    SetColumnMetadata {
        column: Vec<String>,
        metadata: BTreeMap<String, String>,
    },
    /// `ALTER COLUMN c TYPE t`: a widening (`type_widening::is_widening`) of a column or a struct's
    /// nested field (a column path) on a table with `delta.enableTypeWidening`; files keep the
    /// narrower type and are cast on read.
    ChangeType {
        column: Vec<String>,
        to: DataType,
    },
}

/// `columns` as the partition columns of a table of `schema` (their names as the schema spells
/// them): each a top-level column of a primitive type, named once, and at least one column left
/// to hold data (Delta Spark's rules for PARTITIONED BY).
fn new_partitioning(schema: &StructType, columns: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(columns.len());
    for c in columns {
        let f = find(schema, c).ok_or_else(|| {
            EngineError::invalid(format!("partition column {c} is not in the schema"))
        })?;
        if !matches!(f.data_type, DataType::Primitive(_)) {
            return Err(EngineError::invalid(format!(
                "partition column {c} must be of a primitive type"
            )));
        }
        if out.iter().any(|o| o.eq_ignore_ascii_case(&f.name)) {
            return Err(EngineError::invalid(format!(
                "partition column {c} named twice"
            )));
        }
        out.push(f.name.clone());
    }
    if !schema.fields.is_empty() && out.len() >= schema.fields.len() {
        return Err(EngineError::invalid(
            "a table cannot be partitioned by all of its columns",
        ));
    }
    Ok(out)
}

fn find<'a>(schema: &'a StructType, name: &str) -> Option<&'a StructField> {
    schema
        .fields
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name))
}

pub(super) fn needs_mapping(what: &str, mode: ColumnMappingMode) -> Result<()> {
    if mode == ColumnMappingMode::None {
        return Err(EngineError::invalid(format!(
            "{what} needs column mapping: ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name') first"
        )));
    }
    Ok(())
}

/// Features `AlterOp::AddFeatures` may add: each is safe to list as supported with nothing
/// enabled (this engine meets their writer rules whenever they are listed). Row tracking is among
/// them: once it is supported, every commit gives its new files base row ids above the table's
/// high-water mark (`txn/commit.rs`, `row_tracking_on`), and a concurrent rewrite aborts
/// (`conflict/row_tracking_change.rs`); it brings `domainMetadata`, which it depends on.
/// Clustering and the vacuum protocol check (a reader feature) are not among them.
pub const ADDABLE_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "columnMapping",
    "deletionVectors",
    "timestampNtz",
    "typeWidening",
    "domainMetadata",
    "v2Checkpoint",
    "inCommitTimestamp",
    "identityColumns",
    "rowTracking",
    // Supported, never active: turning it on (`delta.enableIcebergCompatV1`) is refused, and a
    // table another engine turned it on for is not written (`txn/commit.rs`). It brings
    // `columnMapping`, which it requires.
    "icebergCompatV1",
];

/// Stages the ALTER on `txn`'s snapshot: a new metadata action, and a protocol action when needed.
pub async fn alter_txn(mut txn: Transaction, op: AlterOp) -> Result<Transaction> {
    if let AlterOp::ClusterBy(columns) = &op {
        return super::cluster_by::cluster_by_txn(txn, columns);
    }
    let snapshot = std::sync::Arc::clone(txn.snapshot()?);
    snapshot.protocol.check_writable()?;
    let mut metadata = snapshot.metadata.clone();
    let mut schema = snapshot.schema.clone();
    let mut protocol = snapshot.protocol.clone();
    let mode = snapshot.column_mapping_mode();
    let clustering = crate::ops::optimize::clustering_columns(&snapshot);
    // Several ALTERs in one transaction (the library's alter builders) name the union of what
    // each names; one that names nothing (a rename, a drop, …) makes the whole unnamed.
    let staged_before = txn
        .actions
        .iter()
        .any(|a| matches!(a, Action::Metadata(_) | Action::Protocol(_)));
    txn.metadata_intent = match (staged_before, txn.metadata_intent.take(), intent_of(&op)) {
        (false, _, this) => this,
        (true, Some(before), Some(this)) => Some(before.union(this)),
        (true, _, _) => None,
    };
    let (operation, parameters) = match &op {
        AlterOp::AddColumns(_) | AlterOp::AddNestedColumns(_) => {
            let cols: Vec<NewColumn> = match &op {
                AlterOp::AddColumns(c) => c.iter().map(|f| (Vec::new(), f.clone())).collect(),
                AlterOp::AddNestedColumns(c) => c.clone(),
                _ => Vec::new(),
            };
            let params = add_columns(
                &mut schema,
                &mut metadata.configuration,
                &mut protocol,
                mode,
                &txn,
                &cols,
            )?;
            (Operation::AddColumns, params)
        }
        AlterOp::RenameColumn { from, to } if from.len() > 1 => {
            needs_mapping("RENAME COLUMN", mode)?;
            refuse_if_referenced(&schema, &metadata, from, "renamed")?;
            let parent = schema_path::parent_struct_mut(&mut schema, from)?;
            let last = from.last().map_or("", String::as_str);
            let Some(old) = find(parent, last).map(|f| f.name.clone()) else {
                return Err(EngineError::invalid(format!(
                    "no column {}",
                    schema_path::display(from)
                )));
            };
            if !old.eq_ignore_ascii_case(to) && find(parent, to).is_some() {
                return Err(EngineError::invalid(format!(
                    "{} already has a field {to}",
                    schema_path::display(&from[..from.len() - 1])
                )));
            }
            for f in &mut parent.fields {
                if f.name == old {
                    f.name = to.clone();
                }
            }
            (
                Operation::RenameColumn,
                json!({"oldColumnPath": schema_path::display(from), "newColumnPath": to}),
            )
        }
        AlterOp::RenameColumn { from, to } => {
            needs_mapping("RENAME COLUMN", mode)?;
            let from = from.first().map_or("", String::as_str);
            refuse_if_referenced(&schema, &metadata, &[from.to_string()], "renamed")?;
            let Some(old) = find(&schema, from).map(|f| f.name.clone()) else {
                return Err(EngineError::invalid(format!("no column {from}")));
            };
            if !old.eq_ignore_ascii_case(to) && find(&schema, to).is_some() {
                return Err(EngineError::invalid(format!("column {to} already exists")));
            }
            if clustering.iter().any(|c| c.eq_ignore_ascii_case(&old)) {
                return Err(EngineError::Unsupported(format!(
                    "{old} is a clustering column: renaming it is not supported yet"
                )));
            }
            for f in &mut schema.fields {
                if f.name == old {
                    f.name = to.clone();
                }
            }
            for p in &mut metadata.partition_columns {
                if *p == old {
                    *p = to.clone();
                }
            }
            (
                Operation::RenameColumn,
                json!({"oldColumnPath": old, "newColumnPath": to}),
            )
        }
        AlterOp::DropColumns { paths, if_exists } => {
            let params =
                drop_columns(&mut schema, &metadata, mode, &clustering, paths, *if_exists)?;
            (Operation::DropColumns, params)
        }
        AlterOp::SetProperties(props) => {
            let mut props = props.clone();
            let (want_reader, want_writer) = super::create::take_protocol_requests(&mut props)?;
            let features = super::create::take_feature_requests(&mut props)?;
            protocol = super::create::raise_protocol(protocol, want_reader, want_writer)?;
            protocol = super::create::with_requested_features(protocol, &features);
            let props = &props;
            for k in props.keys() {
                if TableProperty::parse(k).is_some_and(|p| FIXED_PROPERTIES.contains(&p)) {
                    return Err(EngineError::invalid(format!("{k} is set by the engine")));
                }
                refuse_constraint_property(k)?;
            }
            let mut config = metadata.configuration.clone();
            config.extend(props.clone());
            // The new keys and values; keys the table already has were accepted by whoever set
            // them (another engine may know properties this one does not).
            validate_properties(props)?;
            let new_mode = ColumnMappingMode::from_configuration(&config)
                .map_err(|e| EngineError::invalid(e.to_string()))?;
            match (mode, new_mode) {
                (a, b) if a == b => {}
                (ColumnMappingMode::None, ColumnMappingMode::Name) => {
                    // Upgrade: each column's physical name is its current name (what its files
                    // hold); nested fields too.
                    let max = name_columns_as_they_are(&mut schema);
                    config.insert(column_mapping::MAX_ID_KEY.into(), max.to_string());
                    protocol = protocol.with_feature("columnMapping");
                }
                (from, to) => {
                    return Err(EngineError::Unsupported(format!(
                        "changing column mapping from {from:?} to {to:?} (only none to name is supported, as in Delta)"
                    )))
                }
            }
            let turned_on =
                |p: TableProperty| p.is_true(&config) && !p.is_true(&metadata.configuration);
            if turned_on(TableProperty::EnableDeletionVectors) {
                protocol = protocol.with_feature("deletionVectors");
            }
            if turned_on(TableProperty::EnableChangeDataFeed) {
                protocol = protocol.with_feature("changeDataFeed");
            }
            if turned_on(TableProperty::EnableTypeWidening) {
                protocol = protocol.with_feature("typeWidening");
            }
            if turned_on(TableProperty::AppendOnly) {
                protocol = protocol
                    .with_feature("appendOnly")
                    .with_feature("invariants");
            }
            for k in [
                TableProperty::EnableRowTracking,
                TableProperty::EnableInCommitTimestamps,
            ] {
                if turned_on(k) {
                    return Err(EngineError::Unsupported(format!(
                        "turning on {k} on an existing table is not supported yet"
                    )));
                }
            }
            metadata.configuration = config;
            (Operation::SetTableProperties, json!({"properties": props}))
        }
        AlterOp::UnsetProperties { keys, if_exists } => {
            for k in keys {
                refuse_constraint_property(k)?;
                let fixed = TableProperty::parse(k).is_some_and(|p| {
                    FIXED_PROPERTIES.contains(&p)
                        || p == TableProperty::ColumnMappingMode
                        || p == TableProperty::EnableRowTracking
                });
                if fixed {
                    return Err(EngineError::invalid(format!("{k} cannot be unset")));
                }
                if metadata.configuration.remove(k).is_none() && !if_exists {
                    return Err(EngineError::invalid(format!(
                        "the table has no property {k}"
                    )));
                }
            }
            (Operation::UnsetTableProperties, json!({"properties": keys}))
        }
        AlterOp::ReplaceSchema {
            schema: new,
            partition_by,
        } => {
            if let Some(columns) = partition_by {
                metadata.partition_columns = new_partitioning(new, columns)?;
            }
            for p in &metadata.partition_columns {
                if find(new, p).is_none() {
                    return Err(EngineError::invalid(format!(
                        "the new schema lacks partition column {p}"
                    )));
                }
            }
            let mut replaced = new.clone();
            if mode != ColumnMappingMode::None {
                // Every file is removed by the overwrite, so every column may take a fresh name.
                for f in &mut replaced.fields {
                    f.metadata.remove(column_mapping::PHYSICAL_NAME_KEY);
                    f.metadata.remove(column_mapping::ID_KEY);
                }
                name_new_columns(&mut replaced, &mut metadata.configuration, &txn);
            }
            for f in replaced.type_features() {
                protocol = protocol.with_feature(f);
            }
            for p in &mut metadata.partition_columns {
                if let Some(f) = find(&replaced, p) {
                    *p = f.name.clone();
                }
            }
            schema = replaced;
            (Operation::Write, json!({}))
        }
        AlterOp::DropNotNull(c) => {
            let name = set_nullable(&mut schema, c, true)?;
            (
                Operation::ChangeColumn,
                json!({"column": name, "nullable": true}),
            )
        }
        AlterOp::SetNotNull(c) => {
            let name = set_nullable(&mut schema, std::slice::from_ref(c), false)?;
            protocol = protocol.with_feature("invariants");
            (
                Operation::ChangeColumn,
                json!({"column": name, "nullable": false}),
            )
        }
        AlterOp::AddConstraint { name, expr } => {
            let key = format!("{CONSTRAINT_PREFIX}{}", name.to_lowercase());
            if metadata.configuration.contains_key(&key) {
                return Err(EngineError::invalid(format!(
                    "constraint {name} already exists"
                )));
            }
            metadata.configuration.insert(key, expr.clone());
            protocol = protocol.with_feature("checkConstraints");
            (
                Operation::AddConstraint,
                json!({"name": name, "expr": expr}),
            )
        }
        AlterOp::ChangeType { column, to } => change_type(&mut schema, &metadata, column, to)?,
        AlterOp::SetColumnMetadata { column, metadata } => (
            Operation::ChangeColumn,
            set_column_metadata(&mut schema, column, metadata)?,
        ),
        AlterOp::AddFeatures {
            features,
            allow_protocol_versions_increase,
        } => {
            for f in features {
                if !ADDABLE_FEATURES.contains(&f.as_str()) {
                    return Err(EngineError::Unsupported(format!(
                        "adding table feature {f} is not supported (addable: {})",
                        ADDABLE_FEATURES.join(", ")
                    )));
                }
            }
            protocol = super::create::with_requested_features(protocol, features);
            // deltalake and Delta Spark record the request even when the table already supports
            // every feature named: a commit of its commitInfo alone, which no writer conflicts
            // with.
            txn.record_when_empty = true;
            let raised = protocol.min_reader_version > snapshot.protocol.min_reader_version
                || protocol.min_writer_version > snapshot.protocol.min_writer_version;
            if raised && !allow_protocol_versions_increase {
                return Err(EngineError::invalid(format!(
                    "adding {} raises the protocol from ({}, {}) to ({}, {}); allow the protocol versions to increase",
                    features.join(", "),
                    snapshot.protocol.min_reader_version,
                    snapshot.protocol.min_writer_version,
                    protocol.min_reader_version,
                    protocol.min_writer_version
                )));
            }
            (Operation::AddFeature, json!({"features": features}))
        }
        AlterOp::SetName(name) => {
            super::create::check_name_and_description(name.as_deref(), None)?;
            metadata.name = name.clone();
            (Operation::UpdateTableMetadata, json!({"name": name}))
        }
        AlterOp::SetDescription(description) => {
            super::create::check_name_and_description(None, description.as_deref())?;
            metadata.description = description.clone();
            (
                Operation::UpdateTableMetadata,
                json!({"description": description}),
            )
        }
        AlterOp::DropConstraint { name, if_exists } => {
            let key = format!("{CONSTRAINT_PREFIX}{}", name.to_lowercase());
            if metadata.configuration.remove(&key).is_none() && !if_exists {
                return Err(EngineError::invalid(format!("no constraint {name}")));
            }
            (Operation::DropConstraint, json!({"name": name}))
        }
        AlterOp::ClusterBy(_) => {
            return Err(EngineError::Internal(
                "CLUSTER BY is staged by cluster_by_txn".into(),
            ))
        }
    };
    if let AlterOp::ChangeType { .. } = op {
        protocol = protocol.with_feature("typeWidening");
    }
    if matches!(op, AlterOp::AddConstraint { .. } | AlterOp::SetNotNull(_)) {
        // The new rule must hold for every row already in the table: read them all (a whole-table
        // read, so a concurrent writer's new rows make this ALTER retry and check them too).
        let rules = TableConstraints::new(&schema, &metadata.configuration)?;
        check_existing_rows(&mut txn, &snapshot, &rules).await?;
    }
    super::create::check_reserved_columns(&schema, &metadata.configuration)?;
    metadata.schema_string = schema.to_schema_string();
    txn.operation = operation;
    if let serde_json::Value::Object(m) = parameters {
        for (k, v) in m {
            txn.operation_parameters.insert(k, json!(v.to_string()));
        }
    }
    // A change that changes nothing (DROP CONSTRAINT IF EXISTS of a missing one, a property set
    // to the value it has) commits nothing: an unchanged metadata action would only make
    // concurrent writers retry.
    if protocol == snapshot.protocol && metadata == snapshot.metadata {
        return Ok(txn);
    }
    if protocol != snapshot.protocol {
        txn.actions.push(Action::Protocol(protocol));
    }
    txn.actions.push(Action::Metadata(metadata));
    Ok(txn)
}

/// Sets column `c`'s nullability (a column path); returns its name as the schema spells it.
fn set_nullable(schema: &mut StructType, c: &[String], nullable: bool) -> Result<String> {
    let f = schema_path::field_mut(schema, c)?;
    f.nullable = nullable;
    Ok(f.name.clone())
}

/// Refuses renaming or dropping column `path` while a CHECK constraint or a generated column's
/// expression reads its top-level column (the expression would name a column that no longer
/// exists; Delta refuses the same). A nested path is judged by its top-level column: coarser than
/// the field itself, never missing a reference.
pub(super) fn refuse_if_referenced(
    schema: &StructType,
    metadata: &delta_rlc_protocol::actions::Metadata,
    path: &[String],
    what: &str,
) -> Result<()> {
    let Some(top) = path.first() else {
        return Ok(());
    };
    let rules = TableConstraints::new(schema, &metadata.configuration)?;
    if let Some(label) = rules.reading(top) {
        return Err(EngineError::invalid(format!(
            "{} cannot be {what}: {label} reads it (drop or change that first)",
            schema_path::display(path)
        )));
    }
    Ok(())
}

/// Applies `ALTER COLUMN column TYPE to` to `schema`, recording the change in the field's
/// `delta.typeChanges`.
fn change_type(
    schema: &mut StructType,
    metadata: &delta_rlc_protocol::actions::Metadata,
    column: &[String],
    to: &DataType,
) -> Result<(Operation, serde_json::Value)> {
    use delta_rlc_protocol::type_widening::{is_widening, TYPE_CHANGES_KEY};
    if !TableProperty::EnableTypeWidening.is_true(&metadata.configuration) {
        return Err(EngineError::invalid(
            "changing a column's type needs type widening: ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true') first",
        ));
    }
    // A rule that reads the column would mean something else under the new type
    // (`CAST(v AS STRING)` is '45' or '45.0'; `v * 2` overflows at another bound), and rows
    // already written were checked or generated under the old one: Delta refuses, so do we.
    refuse_if_referenced(schema, metadata, column, "retyped")?;
    if let Some(f) = column.first().and_then(|c| schema.field(c)) {
        if column.len() == 1 && crate::constraints::generation_of(f).is_some() {
            return Err(EngineError::invalid(format!(
                "{} cannot be retyped: it is a generated column (its values were computed and checked under its type)",
                f.name
            )));
        }
    }
    if !schema_path::through_structs_only(schema, column) {
        // Delta records an element's or a map entry's change on the enclosing field with a
        // `fieldPath`; this engine neither writes nor reads those.
        schema_path::field_mut(schema, column)?;
        return Err(EngineError::Unsupported(format!(
            "changing the type of {} (inside an array or a map) is not supported yet",
            schema_path::display(column)
        )));
    }
    let f = schema_path::field_mut(schema, column)?;
    if column.len() == 1 && metadata.partition_columns.contains(&f.name) {
        return Err(EngineError::Unsupported(format!(
            "{} is a partition column: changing its type is not supported",
            f.name
        )));
    }
    let (DataType::Primitive(from), DataType::Primitive(to_p)) = (&f.data_type, to) else {
        return Err(EngineError::invalid(format!(
            "{}: only primitive types can be widened",
            f.name
        )));
    };
    if from == to_p {
        return Err(EngineError::invalid(format!(
            "{} already has type {}",
            f.name,
            to_p.name()
        )));
    }
    if !is_widening(from, to_p) {
        return Err(EngineError::invalid(format!(
            "{}: {} to {} is not a widening (values already written might not fit)",
            f.name,
            from.name(),
            to_p.name()
        )));
    }
    let change = json!({"fromType": from.name(), "toType": to_p.name()});
    let entry = f
        .metadata
        .entry(TYPE_CHANGES_KEY.to_string())
        .or_insert_with(|| json!([]));
    match entry.as_array_mut() {
        Some(list) => list.push(change),
        None => *entry = json!([change]),
    }
    f.data_type = to.clone();
    Ok((
        Operation::ChangeColumn,
        json!({"column": schema_path::display(column), "type": to_p.name()}),
    ))
}

/// `delta.constraints.*` keys change only through ADD / DROP CONSTRAINT (which check the rows).
pub fn refuse_constraint_property(key: &str) -> Result<()> {
    if crate::constraints::is_constraint_key(key) {
        return Err(EngineError::invalid(format!(
            "{key}: use ALTER TABLE … ADD CONSTRAINT / DROP CONSTRAINT"
        )));
    }
    Ok(())
}

/// Fails naming the first existing row that violates `rules`, reading the table file by file.
async fn check_existing_rows(
    txn: &mut Transaction,
    snapshot: &std::sync::Arc<crate::Snapshot>,
    rules: &TableConstraints,
) -> Result<()> {
    let files = register_candidates(txn, snapshot, None)?;
    for add in files {
        for scan in scan_files(txn, snapshot, vec![add], None).await? {
            if let Some((_, detail)) = rules.first_violation(&scan.rows)? {
                return Err(EngineError::invalid(format!(
                    "the table already holds a violating row: {detail}"
                )));
            }
        }
    }
    Ok(())
}

/// Every column (nested too) gets its current name as its physical name and an id (1, 2, …);
/// returns the largest id.
fn name_columns_as_they_are(schema: &mut StructType) -> i64 {
    fn walk(st: &mut StructType, next: &mut i64) {
        for f in &mut st.fields {
            *next += 1;
            f.metadata
                .insert(column_mapping::ID_KEY.into(), json!(*next));
            f.metadata.insert(
                column_mapping::PHYSICAL_NAME_KEY.into(),
                json!(f.name.clone()),
            );
            walk_type(&mut f.data_type, next);
        }
    }
    fn walk_type(t: &mut DataType, next: &mut i64) {
        match t {
            DataType::Primitive(_) => {}
            DataType::Struct(st) => walk(st, next),
            DataType::Array { element, .. } => walk_type(element, next),
            DataType::Map { key, value, .. } => {
                walk_type(key, next);
                walk_type(value, next);
            }
        }
    }
    let mut next = 0;
    walk(schema, &mut next);
    next
}

/// What `op` names, for the conflict checker's re-application on a concurrent metadata change
/// (`crate::metadata_intent`); None for a change it never re-applies.
fn intent_of(op: &AlterOp) -> Option<crate::metadata_intent::MetadataIntent> {
    let mut intent = crate::metadata_intent::MetadataIntent::default();
    let constraint = |name: &str| format!("{CONSTRAINT_PREFIX}{}", name.to_lowercase());
    match op {
        AlterOp::AddColumns(fields) => {
            intent.new_columns = fields.iter().map(|f| f.name.clone()).collect();
        }
        AlterOp::AddNestedColumns(cols) if cols.iter().all(|(path, _)| path.is_empty()) => {
            intent.new_columns = cols.iter().map(|(_, f)| f.name.clone()).collect();
        }
        AlterOp::SetProperties(props) => intent.keys = props.keys().cloned().collect(),
        AlterOp::UnsetProperties { keys, .. } => intent.keys = keys.iter().cloned().collect(),
        AlterOp::AddConstraint { name, .. } | AlterOp::DropConstraint { name, .. } => {
            intent.keys.insert(constraint(name));
        }
        AlterOp::SetNotNull(c) => {
            intent.columns.insert(c.clone());
        }
        AlterOp::DropNotNull(path) if path.len() == 1 => {
            intent.columns.extend(path.iter().cloned());
        }
        AlterOp::SetName(_) => intent.name = true,
        AlterOp::SetDescription(_) => intent.description = true,
        _ => return None,
    }
    Some(intent)
}
