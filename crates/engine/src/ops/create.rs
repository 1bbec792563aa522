//! CREATE TABLE: metadata, protocol with exactly the features used, clustering domain metadata.

use delta_rlc_protocol::column_mapping::{self, ColumnMappingMode};
use std::collections::BTreeMap;

use delta_rlc_protocol::actions::{Action, DomainMetadata, Format, Metadata, Protocol};
use delta_rlc_protocol::schema::{DataType, StructType};
use serde_json::json;

use crate::error::{EngineError, Result};
use crate::table::DeltaTable;
use crate::txn::{Operation, Transaction};
use delta_rlc_protocol::table_properties::{TableProperty, ValueKind};

#[derive(Debug, Clone, Default)]
pub struct CreateTableSpec {
    pub schema: StructType,
    pub partition_by: Vec<String>,
    pub cluster_by: Vec<String>,
    pub properties: BTreeMap<String, String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub defaults: CreateDefaults,
}

/// What a new table gets where its properties say nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CreateDefaults {
    /// This engine's: deletion vectors on (`delta.enableDeletionVectors = true`), so concurrent
    /// DML on one file merges its deletions instead of aborting (SQL, the CLI, the Rust library).
    #[default]
    Engine,
    /// deltalake's (its Python API): nothing beyond what the properties and the schema need, so a
    /// table created through the deltalake-compatible API has the protocol and configuration
    /// deltalake 1.6 gives it, and readers without deletion-vector support keep reading it.
    Deltalake,
}

/// Checks table properties as CREATE TABLE and ALTER TABLE … SET TBLPROPERTIES take them: known
/// `delta.*` keys only ([`TableProperty::settable`]), each value of its kind and in its range
/// (Delta Spark's), so a typo never silently does nothing.
pub fn validate_properties(config: &BTreeMap<String, String>) -> Result<()> {
    for (k, v) in config {
        // `delta.` in any case is Delta's (Spark matches these keys case-insensitively): only the
        // spellings this engine knows are accepted, so none is stored that a reader enforces and
        // this engine ignores.
        let property = TableProperty::parse(k);
        if k.to_ascii_lowercase().starts_with("delta.")
            && !crate::constraints::is_constraint_key(k)
            && !property.is_some_and(|p| p.settable() || ENGINE_PROPERTIES.contains(&p))
        {
            return Err(EngineError::invalid(format!("unknown table property {k}")));
        }
        let Some(property) = property else { continue };
        match property.kind() {
            ValueKind::Bool => {
                if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
                    return Err(EngineError::invalid(format!(
                        "{k} must be true or false, got {v:?}"
                    )));
                }
            }
            ValueKind::Integer { min } => {
                let n = v.trim().parse::<i64>().map_err(|_| {
                    EngineError::invalid(format!("{k} must be an integer, got {v:?}"))
                })?;
                if n < min {
                    return Err(EngineError::invalid(format!(
                        "{k} must be at least {min}, got {n}"
                    )));
                }
            }
            ValueKind::Interval => {
                if crate::retention::parse_interval_ms(v).is_none_or(|ms| ms < 0) {
                    return Err(EngineError::invalid(format!(
                        "{k} must be an interval such as 'interval 7 days', got {v:?}"
                    )));
                }
            }
            ValueKind::Text => {}
        }
    }
    if let Some(level) = TableProperty::IsolationLevel.get(config) {
        crate::conflict_config::IsolationLevel::parse(level)?;
    }
    ColumnMappingMode::from_configuration(config)
        .map_err(|e| EngineError::invalid(e.to_string()))?;
    Ok(())
}

/// `delta.minReaderVersion` / `delta.minWriterVersion` given with table properties: requests to
/// raise the protocol (as Delta Spark takes them), never stored as properties. Taken out of
/// `config`; (reader, writer) each within the protocol's range.
pub fn take_protocol_requests(
    config: &mut BTreeMap<String, String>,
) -> Result<(Option<i32>, Option<i32>)> {
    let mut take = |key: &str, lo: i32, hi: i32| -> Result<Option<i32>> {
        let Some(k) = config.keys().find(|k| k.eq_ignore_ascii_case(key)).cloned() else {
            return Ok(None);
        };
        let v = config.remove(&k).unwrap_or_default();
        match v.trim().parse::<i32>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(EngineError::invalid(format!(
                "{key} must be an integer from {lo} to {hi}, got {v:?}"
            ))),
        }
    };
    Ok((
        take("delta.minReaderVersion", 1, 3)?,
        take("delta.minWriterVersion", 2, 7)?,
    ))
}

/// `delta.feature.<name>` = `supported` (or `enabled`) given with table properties: Delta Spark's
/// request to list a table feature in the protocol, never stored as a property. Taken out of
/// `config`; each feature must be one `ALTER … ADD FEATURE` may add
/// ([`super::alter::ADDABLE_FEATURES`]).
pub fn take_feature_requests(config: &mut BTreeMap<String, String>) -> Result<Vec<String>> {
    const PREFIX: &str = "delta.feature.";
    let keys: Vec<String> = config
        .keys()
        .filter(|k| {
            k.get(..PREFIX.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
        })
        .cloned()
        .collect();
    let mut features = Vec::with_capacity(keys.len());
    for k in keys {
        let v = config.remove(&k).unwrap_or_default();
        if !v.eq_ignore_ascii_case("supported") && !v.eq_ignore_ascii_case("enabled") {
            return Err(EngineError::invalid(format!(
                "{k} must be 'supported', got {v:?}"
            )));
        }
        let name = k.get(PREFIX.len()..).unwrap_or_default();
        let Some(known) = super::alter::ADDABLE_FEATURES
            .iter()
            .find(|f| f.eq_ignore_ascii_case(name))
        else {
            return Err(EngineError::Unsupported(format!(
                "adding table feature {name} is not supported (addable: {})",
                super::alter::ADDABLE_FEATURES.join(", ")
            )));
        };
        features.push(known.to_string());
    }
    Ok(features)
}

/// `protocol` with each requested feature listed (and what it depends on: `rowTracking` needs
/// `domainMetadata`).
pub fn with_requested_features(mut protocol: Protocol, features: &[String]) -> Protocol {
    // A feature asked for by name is listed by name, as Delta Spark and deltalake list it: a
    // legacy protocol becomes a table-features one first (legacy versions are what a table gets
    // when nobody named a feature, `Protocol::minimal_for`).
    if !features.is_empty() && protocol.min_writer_version < 7 {
        protocol = to_table_features(&protocol);
    }
    for f in features {
        // Features a feature depends on come with it (the protocol's `requires`).
        match f.as_str() {
            "rowTracking" => protocol = protocol.with_feature("domainMetadata"),
            "icebergCompatV1" => protocol = protocol.with_feature("columnMapping"),
            _ => {}
        }
        protocol = protocol.with_feature(f);
    }
    protocol
}

/// A legacy protocol as table features: writer 7 listing what its versions implied, reader 2
/// kept for column mapping.
fn to_table_features(p: &Protocol) -> Protocol {
    let mut features = p.writer_feature_set();
    features.extend(p.reader_feature_set());
    let refs: Vec<&str> = features.iter().map(String::as_str).collect();
    let mut out = Protocol::with_features(&refs);
    out.min_reader_version = out.min_reader_version.max(p.min_reader_version.min(2));
    out
}

/// `protocol` raised to the requested versions (never lowered). Writer 7 or reader 3 turns a
/// legacy protocol into table features listing what its versions implied.
pub fn raise_protocol(
    protocol: Protocol,
    reader: Option<i32>,
    writer: Option<i32>,
) -> Result<Protocol> {
    let mut p = protocol;
    let to_features = to_table_features;
    if let Some(w) = writer {
        if w >= 7 && p.min_writer_version < 7 {
            p = to_features(&p);
        } else if w > p.min_writer_version {
            p.min_writer_version = w;
        }
    }
    if let Some(r) = reader {
        if r == 3 && p.min_reader_version < 3 {
            if p.min_writer_version < 7 {
                p = to_features(&p);
            }
            p.min_reader_version = 3;
            p.reader_features.get_or_insert_with(Vec::new);
        } else if r > p.min_reader_version {
            p.min_reader_version = r;
        }
    }
    p.validate()?;
    Ok(p)
}

/// Properties the engine sets (a table's configuration holds them; users may not set them).
pub const ENGINE_PROPERTIES: &[TableProperty] = &[
    TableProperty::ColumnMappingMaxColumnId,
    TableProperty::MaterializedRowIdColumnName,
    TableProperty::MaterializedRowCommitVersionColumnName,
];

/// Column names a table may not have: this engine's internal columns (`__delta_rlc_*`, which its
/// scans add), and with the change feed on, the feed's own columns (Delta Spark refuses them too).
pub fn check_reserved_columns(
    schema: &delta_rlc_protocol::schema::StructType,
    config: &BTreeMap<String, String>,
) -> Result<()> {
    let cdf = TableProperty::EnableChangeDataFeed.is_true(config);
    for f in &schema.fields {
        let lower = f.name.to_ascii_lowercase();
        if lower.starts_with("__delta_rlc_") {
            return Err(EngineError::invalid(format!(
                "column {} uses a name reserved for the engine's own columns (__delta_rlc_*)",
                f.name
            )));
        }
        let feed_columns = [
            crate::write::change_data::CHANGE_TYPE_COLUMN,
            crate::changes::COMMIT_VERSION_COLUMN,
            crate::changes::COMMIT_TIMESTAMP_COLUMN,
        ];
        if cdf && feed_columns.iter().any(|c| c.eq_ignore_ascii_case(&f.name)) {
            return Err(EngineError::invalid(format!(
                "column {} is reserved for the change data feed, which this table records",
                f.name
            )));
        }
    }
    Ok(())
}

/// Validates the spec and builds the metadata/protocol/domain actions for version 0.
/// A table's name and description as the metadata action keeps them: a name is 1 to 255
/// characters, a description at most 4,000 (catalogs that sync the log hold no more; deltalake
/// refuses the same, with these words).
pub fn check_name_and_description(name: Option<&str>, description: Option<&str>) -> Result<()> {
    if let Some(n) = name {
        if n.is_empty() || n.chars().count() > 255 {
            return Err(EngineError::invalid(
                "Table metadata is invalid: name: Table name cannot be empty and cannot exceed 255 characters",
            ));
        }
    }
    if description.is_some_and(|d| d.chars().count() > 4000) {
        return Err(EngineError::invalid(
            "Table metadata is invalid: description: Table description cannot exceed 4000 characters",
        ));
    }
    Ok(())
}

pub fn create_table_actions(table: &DeltaTable, spec: &CreateTableSpec) -> Result<Vec<Action>> {
    check_name_and_description(spec.name.as_deref(), spec.description.as_deref())?;
    if spec.schema.fields.is_empty() {
        return Err(EngineError::invalid("a table needs at least one column"));
    }
    let mut seen = std::collections::HashSet::new();
    for f in &spec.schema.fields {
        if !seen.insert(f.name.to_ascii_lowercase()) {
            return Err(EngineError::invalid(format!("duplicate column {}", f.name)));
        }
    }
    for p in &spec.partition_by {
        match spec.schema.field(p).map(|f| &f.data_type) {
            Some(DataType::Primitive(_)) => {}
            Some(_) => {
                return Err(EngineError::invalid(format!(
                    "partition column {p} must have a primitive type"
                )))
            }
            None => {
                return Err(EngineError::invalid(format!(
                    "partition column {p} is not a column of the table"
                )))
            }
        }
    }
    // A data file holds the columns that are not partition columns; with none left, its rows
    // could not be counted (Delta Spark: "Cannot use all columns for partition columns").
    if !spec.partition_by.is_empty() && spec.partition_by.len() >= spec.schema.fields.len() {
        return Err(EngineError::invalid(
            "a table cannot be partitioned by all of its columns",
        ));
    }
    for c in &spec.cluster_by {
        if spec.schema.field(c).is_none() {
            return Err(EngineError::invalid(format!(
                "clustering column {c} is not a column of the table"
            )));
        }
    }
    if !spec.cluster_by.is_empty() && !spec.partition_by.is_empty() {
        return Err(EngineError::invalid(
            "a table cannot be both partitioned and clustered",
        ));
    }
    let mut config = spec.properties.clone();
    let (want_reader, want_writer) = take_protocol_requests(&mut config)?;
    let requested_features = take_feature_requests(&mut config)?;
    if let Some(k) = config
        .keys()
        .find(|k| TableProperty::parse(k).is_some_and(|p| ENGINE_PROPERTIES.contains(&p)))
    {
        return Err(EngineError::invalid(format!("{k} is set by the engine")));
    }
    for k in config.keys() {
        super::alter::refuse_constraint_property(k)?;
    }
    validate_properties(&config)?;
    check_reserved_columns(&spec.schema, &config)?;
    if spec.defaults == CreateDefaults::Engine {
        config
            .entry(TableProperty::EnableDeletionVectors.key().into())
            .or_insert_with(|| "true".into());
    }
    // Column mapping: every column gets an id and a physical name now; data files, stats and
    // partition values use the physical names from the first write on.
    let mut schema = spec.schema.clone();
    let mapping = ColumnMappingMode::from_configuration(&config)
        .map_err(|e| EngineError::invalid(e.to_string()))?;
    if mapping != ColumnMappingMode::None {
        let ids = &table.env.ids;
        let max =
            column_mapping::assign_physical_names(&mut schema, 0, &mut || ids.uuid().to_string());
        config.insert(column_mapping::MAX_ID_KEY.into(), max.to_string());
    }
    let is_true = |p: TableProperty| p.is_true(&config);
    let mut features: Vec<&str> = Vec::new();
    if mapping != ColumnMappingMode::None {
        features.push("columnMapping");
    }
    if is_true(TableProperty::EnableDeletionVectors) {
        features.push("deletionVectors");
    }
    if is_true(TableProperty::AppendOnly) {
        features.extend(["appendOnly", "invariants"]);
    }
    // NOT NULL columns, and NOT NULL fields of struct columns, are column invariants: readers
    // like Spark require the `invariants` feature (without it, Spark refuses to read the table:
    // DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH, red team helper-51).
    if spec
        .schema
        .fields
        .iter()
        .any(crate::constraints::has_not_null)
    {
        features.push("invariants");
    }
    if is_true(TableProperty::EnableInCommitTimestamps) {
        features.push("inCommitTimestamp");
    }
    if is_true(TableProperty::EnableChangeDataFeed) {
        features.push("changeDataFeed");
    }
    if spec
        .schema
        .fields
        .iter()
        .any(|f| crate::constraints::generation_of(f).is_some())
    {
        // Planned now, so an expression this engine cannot compute is refused at CREATE.
        crate::constraints::TableConstraints::new(&spec.schema, &config)?;
        features.push("generatedColumns");
    }
    if spec
        .schema
        .fields
        .iter()
        .any(crate::txn::identity::is_identity)
    {
        crate::txn::identity::identity_columns(&spec.schema)?;
        features.push("identityColumns");
    }
    if is_true(TableProperty::EnableTypeWidening) {
        features.push("typeWidening");
    }
    let row_tracking = is_true(TableProperty::EnableRowTracking);
    if row_tracking {
        features.extend(["rowTracking", "domainMetadata"]);
        config.insert(
            TableProperty::MaterializedRowIdColumnName.key().into(),
            format!("_row-id-col-{}", table.env.ids.uuid()),
        );
        config.insert(
            TableProperty::MaterializedRowCommitVersionColumnName
                .key()
                .into(),
            format!("_row-commit-version-col-{}", table.env.ids.uuid()),
        );
    }
    if !spec.cluster_by.is_empty() {
        features.extend(["clustering", "domainMetadata"]);
    }
    // TIMESTAMP_NTZ and VARIANT columns, nested ones included.
    features.extend(spec.schema.type_features());
    features.sort();
    features.dedup();
    let protocol = Protocol::minimal_for(&features);
    let protocol = raise_protocol(protocol, want_reader, want_writer)?;
    let protocol = with_requested_features(protocol, &requested_features);
    let metadata = Metadata {
        id: table.env.ids.uuid().to_string(),
        name: spec.name.clone(),
        description: spec.description.clone(),
        format: Format::default(),
        schema_string: schema.to_schema_string(),
        partition_columns: spec.partition_by.clone(),
        created_time: Some(table.env.clock.now_ms()),
        configuration: config,
        extra: Default::default(),
    };
    let mut actions = vec![Action::Protocol(protocol), Action::Metadata(metadata)];
    if !spec.cluster_by.is_empty() {
        // Clustering columns are physical paths (column mapping: the physical names).
        let cols: Vec<Vec<String>> = spec
            .cluster_by
            .iter()
            .map(|c| {
                let physical = schema
                    .field(c)
                    .and_then(|f| column_mapping::physical_name(f, mapping).ok())
                    .unwrap_or(c);
                vec![physical.to_string()]
            })
            .collect();
        actions.push(Action::DomainMetadata(DomainMetadata {
            domain: "delta.clustering".into(),
            configuration: json!({ "clusteringColumns": cols }).to_string(),
            removed: false,
        }));
    }
    Ok(actions)
}

/// A transaction that creates the table (version 0). Fails if a table already exists.
pub async fn create_table_txn(table: &DeltaTable, spec: &CreateTableSpec) -> Result<Transaction> {
    if table.exists().await? {
        return Err(EngineError::invalid(format!(
            "a table already exists at {}",
            table.store.root_uri()
        )));
    }
    let mut txn = Transaction::new(table, None, Operation::CreateTable);
    txn.actions = create_table_actions(table, spec)?;
    record_parameters(&mut txn, spec);
    Ok(txn)
}

/// A transaction that replaces the table (`CREATE OR REPLACE TABLE`): the new schema,
/// partitioning, properties, name and description in one commit, which the caller completes
/// with an overwrite that removes every file (`insert_txn` with `InsertMode::Overwrite`, the
/// new rows if any). The table keeps its id and its history, and its protocol never goes down:
/// every feature it had stays supported (a table feature is never dropped by a replace). The
/// clustering domain goes when the new table is not clustered.
///
/// Concurrency: a metadata change, so it conflicts with any concurrent metadata change, and its
/// overwrite read the whole table, so any concurrent write to it aborts one of the two.
pub async fn replace_table_txn(table: &DeltaTable, spec: &CreateTableSpec) -> Result<Transaction> {
    let snapshot = table.snapshot(None).await?;
    let mut actions = create_table_actions(table, spec)?;
    for a in &mut actions {
        match a {
            Action::Protocol(p) => *p = keeping_features(&snapshot.protocol, p),
            Action::Metadata(m) => m.id = snapshot.metadata.id.clone(),
            _ => {}
        }
    }
    if spec.cluster_by.is_empty() {
        if let Some(d) = snapshot.domains.get("delta.clustering") {
            actions.push(Action::DomainMetadata(DomainMetadata {
                domain: d.domain.clone(),
                configuration: d.configuration.clone(),
                removed: true,
            }));
        }
    }
    let mut txn = Transaction::new(table, Some(snapshot), Operation::ReplaceTable);
    txn.actions = actions;
    record_parameters(&mut txn, spec);
    Ok(txn)
}

/// The commitInfo parameters of a CREATE (or a replace), as Delta Spark records them.
fn record_parameters(txn: &mut Transaction, spec: &CreateTableSpec) {
    for (key, value) in [
        ("partitionBy", serde_json::to_string(&spec.partition_by)),
        ("clusterBy", serde_json::to_string(&spec.cluster_by)),
        ("properties", serde_json::to_string(&spec.properties)),
    ] {
        txn.operation_parameters
            .insert(key.into(), json!(value.unwrap_or_default()));
    }
}

/// `new` with every feature `old` supports (a replace never lowers a table's protocol).
fn keeping_features(old: &Protocol, new: &Protocol) -> Protocol {
    let mut p = new.clone();
    for f in old
        .writer_feature_set()
        .iter()
        .chain(old.reader_feature_set().iter())
    {
        p = p.with_feature(f);
    }
    if p.min_reader_version < old.min_reader_version
        || p.min_writer_version < old.min_writer_version
    {
        // Versions that imply no named feature (a table-features protocol listing none): keep
        // the versions themselves, with the feature lists they need.
        let implied = p.writer_feature_set();
        p.min_reader_version = p.min_reader_version.max(old.min_reader_version);
        p.min_writer_version = p.min_writer_version.max(old.min_writer_version);
        if p.min_writer_version >= 7 && p.writer_features.is_none() {
            p.writer_features = Some(implied);
        }
        if p.min_reader_version >= 3 && p.reader_features.is_none() {
            p.reader_features = Some(Vec::new());
        }
    }
    p
}
