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
//! Concurrency: two transactions that both generate values both stage metadata. A loser that
//! generated values only for new rows (no explicit value, no REPLACE WHERE, no remove:
//! `identity_pinned` false) is re-based after a winner that raised the mark — its values moved
//! past the winner's, as a serial run would generate them (`conflict/identity_rebase.rs`,
//! `txn/identity_rebase.rs`).
//! Anything else conflicts (`MetadataChanged`, retryable), as in Delta Spark. Explicit BY
//! DEFAULT values are not checked against generated ones (nor in Spark).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use delta_rlc_protocol::actions::{Action, Metadata};
use delta_rlc_protocol::schema::StructType;
use serde_json::json;

use super::Transaction;
use crate::error::{EngineError, Result};

pub use crate::identity_schema::{
    identity_columns, identity_metadata, is_identity, IdentityColumn, ALLOW_EXPLICIT_KEY, HWM_KEY,
    START_KEY, STEP_KEY,
};

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
            // An explicit value: the transaction's rows are no longer all generated ones, which
            // the conflict checker's re-basing requires.
            if arr.null_count() != arr.len() {
                txn.identity_pinned = true;
            }
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
