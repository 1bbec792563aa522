//! Identity columns (`identityColumns`): `BIGINT GENERATED ALWAYS | BY DEFAULT AS IDENTITY
//! [(START WITH s INCREMENT BY i)]`. Field metadata (the protocol's): `delta.identity.start`,
//! `delta.identity.step` (non-zero), `delta.identity.highWaterMark` (the last value generated;
//! absent before the first) and `delta.identity.allowExplicitInsert` (BY DEFAULT).
//!
//! A new row without a value (NULL) gets the next values after the high-water mark: `start` for the
//! first, then `mark + step`, in order; the transaction keeps its own mark across the chunks it
//! writes and the commit stages a metadata action raising the column's `highWaterMark` to it.
//! Only new rows are filled (INSERT, MERGE's INSERT clauses); rows rewritten by UPDATE, MERGE or
//! a copy-on-write DELETE keep theirs, whatever they are. GENERATED ALWAYS refuses explicit values
//! in INSERT rows and UPDATE assignments.
//!
//! Concurrency (stated): values are unique because two transactions that both generate values
//! both change metadata, and a loser that changes metadata conflicts with every metadata-changing
//! winner (`MetadataChanged`, retryable; `conflict/metadata_change.rs`) — the same rule as Delta
//! Spark. Explicit BY DEFAULT values are not checked against generated ones (nor in Spark).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use delta_rlc_protocol::actions::{Action, Metadata};
use delta_rlc_protocol::schema::{DataType, PrimitiveType, StructField, StructType};
use serde_json::json;

use super::Transaction;
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

/// Refuses explicit (non-NULL) values for GENERATED ALWAYS columns among new rows.
pub fn check_no_explicit(schema: &StructType, batches: &[RecordBatch]) -> Result<()> {
    for c in identity_columns(schema)?
        .iter()
        .filter(|c| !c.allow_explicit)
    {
        for b in batches {
            if let Some(col) = b.column_by_name(&c.name) {
                if col.null_count() != col.len() {
                    return Err(EngineError::invalid(format!(
                        "cannot insert explicit values into {}, an identity column GENERATED ALWAYS (leave it out of the column list)",
                        c.name
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Fills the NULL values of each identity column of `batches` (table columns by name, possibly
/// with extra columns) with the next values after the transaction's high-water mark.
pub fn fill(
    txn: &mut Transaction,
    schema: &StructType,
    batches: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>> {
    let columns = identity_columns(schema)?;
    if columns.is_empty() {
        return Ok(batches);
    }
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        for c in &columns {
            let Ok(i) = b.schema().index_of(&c.name) else {
                continue;
            };
            let Some(arr) = cols.get(i).cloned() else {
                continue;
            };
            if arr.null_count() == 0 {
                continue;
            }
            let values = arr
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or_else(|| EngineError::Internal(format!("identity column {}", c.name)))?;
            let mut mark = txn
                .identity_marks
                .get(&c.name)
                .copied()
                .or(c.high_water_mark);
            let overflow = || {
                EngineError::invalid(format!(
                    "identity column {}: the next value overflows BIGINT",
                    c.name
                ))
            };
            let mut filled = Vec::with_capacity(values.len());
            for v in values.iter() {
                filled.push(Some(match v {
                    Some(v) => v,
                    None => {
                        let next = match mark {
                            None => c.start,
                            Some(m) => m.checked_add(c.step).ok_or_else(overflow)?,
                        };
                        mark = Some(next);
                        next
                    }
                }));
            }
            if let Some(m) = mark {
                txn.identity_marks.insert(c.name.clone(), m);
            }
            if let Some(slot) = cols.get_mut(i) {
                *slot = Arc::new(Int64Array::from(filled));
            }
        }
        out.push(RecordBatch::try_new(b.schema(), cols)?);
    }
    Ok(out)
}

/// Stages the raised high-water marks: the staged metadata action (or the read snapshot's
/// metadata) with each column's `highWaterMark` set to the transaction's.
pub fn stage(txn: &mut Transaction) -> Result<()> {
    if txn.identity_marks.is_empty() {
        return Ok(());
    }
    let marks: BTreeMap<String, i64> = txn.identity_marks.clone();
    let raise = |m: &Metadata| -> Result<Metadata> {
        let mut schema = StructType::parse(&m.schema_string)?;
        for f in schema.fields.iter_mut() {
            if let Some(v) = marks.get(&f.name) {
                f.metadata.insert(HWM_KEY.into(), json!(v));
            }
        }
        let mut m = m.clone();
        m.schema_string = schema.to_schema_string();
        Ok(m)
    };
    if let Some(staged) = txn.actions.iter_mut().find_map(|a| match a {
        Action::Metadata(m) => Some(m),
        _ => None,
    }) {
        *staged = raise(staged)?;
        return Ok(());
    }
    let read = txn
        .read_snapshot
        .as_ref()
        .map(|s| s.metadata.clone())
        .ok_or_else(|| EngineError::Internal("identity values without table metadata".into()))?;
    txn.actions.push(Action::Metadata(raise(&read)?));
    Ok(())
}
