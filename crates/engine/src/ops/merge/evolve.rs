//! `MERGE WITH SCHEMA EVOLUTION` (library `with_schema_evolution`, Python `merge_schema=True`): the
//! source's top-level columns the target lacks (by name, case-insensitively) are added to the
//! target as nullable columns, staged as an ADD COLUMNS in the MERGE's own transaction, so the new
//! columns and the rows that fill them commit together or not at all. The MERGE then runs against
//! the read snapshot with the staged schema: old files read NULL in the new columns, `UPDATE SET *`
//! and `INSERT *` fill them from the source, and explicit clauses may assign them.
//!
//! Concurrency: the MERGE changes metadata, so it conflicts with any concurrent metadata change (a
//! loser that changes metadata itself; `conflict/metadata_change.rs`); its reads and removals are
//! checked as any MERGE's.

use std::sync::Arc;

use arrow::datatypes::Schema;
use delta_rlc_protocol::schema::StructType;

use crate::arrow_conv::nullable_fields;
use crate::error::{EngineError, Result};
use crate::ops::alter::{alter_txn, AlterOp};
use crate::ops::insert::effective_metadata;
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

/// Stages the source's new columns in `txn` and returns the snapshot the MERGE runs against (the
/// read snapshot itself when the source has no new column).
pub async fn evolve_for_source(
    mut txn: Transaction,
    source: &Schema,
) -> Result<(Transaction, Arc<Snapshot>)> {
    let snapshot = Arc::clone(txn.snapshot()?);
    let new = nullable_fields(source, |f| {
        snapshot
            .schema
            .fields
            .iter()
            .all(|t| !t.name.eq_ignore_ascii_case(f.name()))
    })?;
    if new.is_empty() {
        return Ok((txn, snapshot));
    }
    let operation = txn.operation;
    txn = alter_txn(txn, AlterOp::AddColumns(new)).await?;
    // A MERGE's schema follows from the whole target it read (its source's other columns, its ON
    // clause): never re-applied on a concurrent metadata change, even when it writes no row.
    txn.metadata_intent = None;
    txn.operation = operation;
    txn.operation_parameters.clear();
    let metadata = effective_metadata(&txn)?;
    let schema = StructType::parse(&metadata.schema_string).map_err(EngineError::from)?;
    let mut evolved = (*snapshot).clone();
    evolved.metadata = metadata;
    evolved.schema = schema;
    Ok((txn, Arc::new(evolved)))
}
