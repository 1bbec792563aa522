//! Identity columns as the schema states them (`identityColumns`): the field metadata keys, and
//! the columns of a schema with their start, step, high-water mark and mode. A leaf: the write
//! path (`txn::identity`) and the conflict checker (`conflict::identity_rebase`) both read it.

use delta_rlc_protocol::schema::{DataType, PrimitiveType, StructField, StructType};
use serde_json::json;

use crate::error::{EngineError, Result};

pub use delta_rlc_protocol::schema::{
    IDENTITY_ALLOW_EXPLICIT_INSERT_KEY as ALLOW_EXPLICIT_KEY,
    IDENTITY_HIGH_WATER_MARK_KEY as HWM_KEY, IDENTITY_START_KEY as START_KEY,
    IDENTITY_STEP_KEY as STEP_KEY,
};

/// One identity column of a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityColumn {
    pub name: String,
    pub start: i64,
    pub step: i64,
    pub high_water_mark: Option<i64>,
    /// BY DEFAULT (explicit values allowed) rather than ALWAYS.
    pub allow_explicit: bool,
}

/// Whether a field is an identity column (has the start key).
pub fn is_identity(f: &StructField) -> bool {
    f.metadata.contains_key(START_KEY)
}

/// The field metadata of a new identity column.
pub fn identity_metadata(
    start: i64,
    step: i64,
    always: bool,
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert(START_KEY.into(), json!(start));
    m.insert(STEP_KEY.into(), json!(step));
    m.insert(ALLOW_EXPLICIT_KEY.into(), json!(!always));
    m
}

fn long_of(f: &StructField, key: &str) -> Result<Option<i64>> {
    match f.metadata.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .map(Some)
            .ok_or_else(|| {
                EngineError::corrupt(format!(
                    "identity column {}: {key} is not a number ({v})",
                    f.name
                ))
            }),
    }
}

/// The identity columns of `schema` (top level); malformed metadata is an error.
pub fn identity_columns(schema: &StructType) -> Result<Vec<IdentityColumn>> {
    let mut out = Vec::new();
    for f in schema.fields.iter().filter(|f| is_identity(f)) {
        if f.data_type != DataType::Primitive(PrimitiveType::Long) {
            return Err(EngineError::corrupt(format!(
                "identity column {} is not BIGINT",
                f.name
            )));
        }
        let start = long_of(f, START_KEY)?.unwrap_or(1);
        let step = long_of(f, STEP_KEY)?.unwrap_or(1);
        if step == 0 {
            return Err(EngineError::corrupt(format!(
                "identity column {}: step 0",
                f.name
            )));
        }
        let allow_explicit = match f.metadata.get(ALLOW_EXPLICIT_KEY) {
            Some(v) => v
                .as_bool()
                .or_else(|| v.as_str().map(|s| s.eq_ignore_ascii_case("true")))
                .unwrap_or(false),
            None => false,
        };
        out.push(IdentityColumn {
            name: f.name.clone(),
            start,
            step,
            high_water_mark: long_of(f, HWM_KEY)?,
            allow_explicit,
        });
    }
    Ok(out)
}
