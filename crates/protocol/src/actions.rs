//! Delta log actions with an exact JSON round trip.
//!
//! Invariants:
//! - Every action keeps the fields it does not know in `extra`, so reading then writing an action
//!   loses nothing (Delta requires readers to ignore unknown fields; we also preserve them).
//! - Explicit JSON `null`s (delta-rs writes them) parse as absent optional fields.
//! - A commit file is parsed all-or-nothing: one bad line fails the whole version with its line number.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dv::DvDescriptor;
use crate::error::{ProtocolError, Result};

/// Partition values: column (physical name) → serialized value; `None` (JSON null) is the null value.
pub type PartitionValues = BTreeMap<String, Option<String>>;

fn is_false(b: &bool) -> bool {
    !*b
}

/// An action's fields this crate does not model, kept for an exact round trip. Absent when empty
/// (nearly always): a large table holds a million adds, and an empty inline map would cost each of
/// them 72 bytes.
#[derive(Debug, Clone, Default)]
pub struct UnknownFields(Option<Box<Map<String, Value>>>);

/// Absent and empty are the same fields.
impl PartialEq for UnknownFields {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a == b,
            _ => self.is_empty() && other.is_empty(),
        }
    }
}

impl UnknownFields {
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().and_then(|m| m.get(key))
    }

    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        self.0
            .get_or_insert_with(Default::default)
            .insert(key, value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().flat_map(|m| m.iter())
    }
}

impl From<Map<String, Value>> for UnknownFields {
    fn from(m: Map<String, Value>) -> Self {
        UnknownFields((!m.is_empty()).then(|| Box::new(m)))
    }
}

impl Serialize for UnknownFields {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for UnknownFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Map::<String, Value>::deserialize(d).map(UnknownFields::from)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Add {
    pub path: String,
    #[serde(default, deserialize_with = "de_partition_values")]
    pub partition_values: PartitionValues,
    pub size: i64,
    pub modification_time: i64,
    pub data_change: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_vector: Option<Box<DvDescriptor>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_row_commit_version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clustering_provider: Option<String>,
    #[serde(flatten)]
    pub extra: UnknownFields,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Remove {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<i64>,
    pub data_change: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_file_metadata: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_opt_partition_values"
    )]
    pub partition_values: Option<PartitionValues>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_vector: Option<Box<DvDescriptor>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_row_commit_version: Option<i64>,
    #[serde(flatten)]
    pub extra: UnknownFields,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Format {
    #[serde(default = "parquet_provider")]
    pub provider: String,
    #[serde(default, deserialize_with = "de_string_map")]
    pub options: BTreeMap<String, String>,
}

fn parquet_provider() -> String {
    "parquet".to_string()
}

impl Default for Format {
    fn default() -> Self {
        Format {
            provider: parquet_provider(),
            options: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub format: Format,
    pub schema_string: String,
    #[serde(default, deserialize_with = "de_string_vec")]
    pub partition_columns: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<i64>,
    #[serde(default, deserialize_with = "de_string_map")]
    pub configuration: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Protocol {
    pub min_reader_version: i32,
    pub min_writer_version: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_features: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_features: Option<Vec<String>>,
}

/// commitInfo: the fields the engine uses are typed; everything else (userId, clusterId, …) is kept.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_commit_timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_parameters: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_blind_append: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_metrics: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_info: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Txn {
    pub app_id: String,
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainMetadata {
    pub domain: String,
    pub configuration: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub removed: bool,
}

/// The directory (under the table root) where writers put change data files.
pub const CHANGE_DATA_DIR: &str = "_change_data";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cdc {
    pub path: String,
    #[serde(default, deserialize_with = "de_partition_values")]
    pub partition_values: PartitionValues,
    pub size: i64,
    #[serde(default)]
    pub data_change: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, Option<String>>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointMetadata {
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, Option<String>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sidecar {
    pub path: String,
    pub size_in_bytes: i64,
    #[serde(default)]
    pub modification_time: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, Option<String>>>,
}

/// One line of a commit file (or one row of a checkpoint).
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Add(Add),
    Remove(Remove),
    Metadata(Metadata),
    Protocol(Protocol),
    CommitInfo(CommitInfo),
    Txn(Txn),
    DomainMetadata(DomainMetadata),
    Cdc(Cdc),
    CheckpointMetadata(CheckpointMetadata),
    Sidecar(Sidecar),
    /// An action name this engine does not know; kept verbatim (readers must ignore unknown actions).
    Unknown(String, Value),
}

impl Action {
    /// The single-key JSON object for this action.
    pub fn to_json(&self) -> Result<Value> {
        let (key, value) = match self {
            Action::Add(a) => ("add", to_value(a)?),
            Action::Remove(a) => ("remove", to_value(a)?),
            Action::Metadata(a) => ("metaData", to_value(a)?),
            Action::Protocol(a) => ("protocol", to_value(a)?),
            Action::CommitInfo(a) => ("commitInfo", to_value(a)?),
            Action::Txn(a) => ("txn", to_value(a)?),
            Action::DomainMetadata(a) => ("domainMetadata", to_value(a)?),
            Action::Cdc(a) => ("cdc", to_value(a)?),
            Action::CheckpointMetadata(a) => ("checkpointMetadata", to_value(a)?),
            Action::Sidecar(a) => ("sidecar", to_value(a)?),
            Action::Unknown(k, v) => (k.as_str(), v.clone()),
        };
        let mut obj = Map::new();
        obj.insert(key.to_string(), value);
        Ok(Value::Object(obj))
    }

    /// One JSON line (no trailing newline).
    pub fn to_json_line(&self) -> Result<String> {
        serde_json::to_string(&self.to_json()?)
            .map_err(|e| ProtocolError::MalformedAction(e.to_string()))
    }

    /// Parses one action object `{"<name>": {...}}`. Returns `None` for an object whose only key
    /// holds `null` (checkpoint rows converted to JSON have this shape for absent actions).
    pub fn from_json(value: Value) -> Result<Option<Action>> {
        let Value::Object(obj) = value else {
            return Err(ProtocolError::MalformedAction(
                "an action must be a JSON object".into(),
            ));
        };
        let mut found = None;
        for (key, inner) in obj {
            if inner.is_null() {
                continue;
            }
            if found.is_some() {
                return Err(ProtocolError::MalformedAction(
                    "an action line must hold exactly one action".into(),
                ));
            }
            found = Some(parse_named(&key, inner)?);
        }
        Ok(found)
    }

    pub fn as_add(&self) -> Option<&Add> {
        match self {
            Action::Add(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_remove(&self) -> Option<&Remove> {
        match self {
            Action::Remove(r) => Some(r),
            _ => None,
        }
    }

    pub fn as_metadata(&self) -> Option<&Metadata> {
        match self {
            Action::Metadata(m) => Some(m),
            _ => None,
        }
    }
}

fn to_value<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| ProtocolError::MalformedAction(e.to_string()))
}

fn from_value<T: serde::de::DeserializeOwned>(name: &str, v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| ProtocolError::MalformedAction(format!("{name}: {e}")))
}

fn parse_named(key: &str, inner: Value) -> Result<Action> {
    Ok(match key {
        "add" => Action::Add(from_value(key, inner)?),
        "remove" => Action::Remove(from_value(key, inner)?),
        "metaData" => Action::Metadata(from_value(key, inner)?),
        "protocol" => Action::Protocol(from_value(key, inner)?),
        "commitInfo" => Action::CommitInfo(from_value(key, inner)?),
        "txn" => Action::Txn(from_value(key, inner)?),
        "domainMetadata" => Action::DomainMetadata(from_value(key, inner)?),
        "cdc" => Action::Cdc(from_value(key, inner)?),
        "checkpointMetadata" => Action::CheckpointMetadata(from_value(key, inner)?),
        "sidecar" => Action::Sidecar(from_value(key, inner)?),
        other => Action::Unknown(other.to_string(), inner),
    })
}

/// Parses a whole commit file. Empty lines are allowed (some writers end with one); anything else that
/// is not a JSON action object fails the version, naming the line.
pub fn parse_commit(version: u64, bytes: &[u8]) -> Result<Vec<Action>> {
    let text = std::str::from_utf8(bytes).map_err(|e| ProtocolError::MalformedCommit {
        version,
        line: 0,
        reason: format!("not UTF-8: {e}"),
    })?;
    let mut actions = Vec::new();
    let mut lines = 0usize;
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        lines += 1;
        let value: Value =
            serde_json::from_str(line).map_err(|e| ProtocolError::MalformedCommit {
                version,
                line: i + 1,
                reason: e.to_string(),
            })?;
        let action = Action::from_json(value).map_err(|e| ProtocolError::MalformedCommit {
            version,
            line: i + 1,
            reason: e.to_string(),
        })?;
        if let Some(a) = action {
            actions.push(a);
        }
    }
    // Every writer puts at least one action (commitInfo) in a commit: an empty file is a torn or
    // truncated write, and accepting it would silently drop the commit it should have held.
    if lines == 0 {
        return Err(ProtocolError::MalformedCommit {
            version,
            line: 0,
            reason: "the commit file is empty (a torn write?)".into(),
        });
    }
    Ok(actions)
}

/// Serializes actions as a commit file: one JSON object per line, newline-terminated.
pub fn serialize_commit(actions: &[Action]) -> Result<Vec<u8>> {
    let mut out = String::new();
    for a in actions {
        out.push_str(&a.to_json_line()?);
        out.push('\n');
    }
    Ok(out.into_bytes())
}

fn de_partition_values<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<PartitionValues, D::Error> {
    let v: Option<PartitionValues> = Option::deserialize(d)?;
    Ok(v.unwrap_or_default())
}

fn de_opt_partition_values<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<PartitionValues>, D::Error> {
    Option::deserialize(d)
}

fn de_string_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    // Some writers store configuration values as null; those keys are dropped.
    let v: Option<BTreeMap<String, Option<String>>> = Option::deserialize(d)?;
    Ok(v.unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect())
}

fn de_string_vec<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v: Option<Vec<String>> = Option::deserialize(d)?;
    Ok(v.unwrap_or_default())
}

impl Add {
    /// `numRecords` from the file's statistics: physical rows, DV not applied. `None` without
    /// stats, with unparseable stats, or when the writer did not record it.
    pub fn num_records(&self) -> Option<i64> {
        crate::stats::FileStats::parse_num_records(self.stats.as_deref()?).ok()?
    }

    /// Logical file identity: (path, DV unique id).
    pub fn file_key(&self) -> (String, Option<String>) {
        (
            self.path.clone(),
            self.deletion_vector.as_ref().map(|d| d.unique_id()),
        )
    }

    /// A tombstone for this file (Spark's `removeWithTimestamp`: extended metadata copied).
    pub fn to_remove(&self, deletion_timestamp: i64, data_change: bool) -> Remove {
        Remove {
            path: self.path.clone(),
            deletion_timestamp: Some(deletion_timestamp),
            data_change,
            extended_file_metadata: Some(true),
            partition_values: Some(self.partition_values.clone()),
            size: Some(self.size),
            stats: self.stats.clone(),
            tags: self.tags.clone(),
            deletion_vector: self.deletion_vector.clone(),
            base_row_id: self.base_row_id,
            default_row_commit_version: self.default_row_commit_version,
            extra: UnknownFields::default(),
        }
    }
}

impl Remove {
    pub fn file_key(&self) -> (String, Option<String>) {
        (
            self.path.clone(),
            self.deletion_vector.as_ref().map(|d| d.unique_id()),
        )
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    /// A snapshot holds one `Add` per live file (a million on large tables): the rare fields stay
    /// boxed, so the struct does not grow back (it was 344 bytes).
    #[test]
    fn add_stays_small() {
        assert!(
            std::mem::size_of::<Add>() <= 200,
            "{}",
            std::mem::size_of::<Add>()
        );
        assert!(std::mem::size_of::<Remove>() <= 200);
        let mut extra = UnknownFields::default();
        assert!(extra.is_empty());
        extra.insert("x".into(), Value::from(1));
        let add = Add {
            path: "a".into(),
            extra,
            ..Default::default()
        };
        let json = serde_json::to_value(&add).unwrap();
        assert_eq!(json["x"], 1);
        let back: Add = serde_json::from_value(json).unwrap();
        assert_eq!(back, add);
        assert_eq!(back.extra.get("x"), Some(&Value::from(1)));
    }

    #[test]
    fn explicit_nulls_parse_as_absent() {
        let line = br#"{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true,"stats":null,"tags":null,"deletionVector":null,"baseRowId":null,"defaultRowCommitVersion":null,"clusteringProvider":null}}"#;
        let actions = parse_commit(3, line).unwrap();
        let Action::Add(add) = &actions[0] else {
            panic!("not an add")
        };
        assert_eq!(add.stats, None);
        assert_eq!(add.base_row_id, None);
        assert!(add.extra.is_empty());
    }

    #[test]
    fn unknown_fields_round_trip() {
        let line = r#"{"commitInfo":{"timestamp":1,"operation":"WRITE","clusterId":"c-1","nested":{"a":[1,2]}}}"#;
        let actions = parse_commit(0, line.as_bytes()).unwrap();
        let back = actions[0].to_json_line().unwrap();
        let a: Value = serde_json::from_str(line).unwrap();
        let b: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn bad_line_names_version_and_line() {
        let text = b"{\"txn\":{\"appId\":\"a\",\"version\":1}}\n{not json";
        let err = parse_commit(7, text).unwrap_err();
        assert!(
            matches!(
                err,
                ProtocolError::MalformedCommit {
                    version: 7,
                    line: 2,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn missing_required_field_is_an_error() {
        let err = parse_commit(1, br#"{"add":{"path":"x"}}"#).unwrap_err();
        assert!(err.to_string().contains("commit 1: line 1"), "{err}");
    }
}
