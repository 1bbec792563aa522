//! A transaction's change data (the change data feed): rows recorded by the statement, buffered,
//! and written as change files with `cdc` actions (format and reading rule:
//! [`crate::write::change_data`]).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use delta_rlc_protocol::actions::{Action, Cdc, Metadata};
use delta_rlc_protocol::schema::StructType;

use super::Transaction;
use crate::arrow_conv::table_arrow_schema;
use crate::error::{EngineError, Result};
pub use crate::write::change_data::ChangeType;
use crate::write::change_data::{CDF_PROPERTY, CHANGE_CHUNK_BYTES, CHANGE_TYPE_COLUMN};
use crate::write::{FileWriter, DEFAULT_TARGET_FILE_SIZE};

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// A transaction's change rows not yet written (table columns, then `_change_type`).
#[derive(Debug, Default, Clone)]
pub struct ChangeBuffer {
    pending: Vec<RecordBatch>,
    pending_bytes: usize,
    /// Change rows recorded so far (written or pending).
    pub recorded_rows: u64,
    /// Set by operations whose file actions are exactly their changes (an overwrite: every old
    /// live row deleted, every new row inserted), which then need no change files.
    pub file_actions_are_changes: bool,
}

impl ChangeBuffer {
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

/// The metadata the transaction writes against: the staged one, else the read snapshot's.
fn metadata_of(txn: &Transaction) -> Option<&Metadata> {
    txn.actions
        .iter()
        .find_map(Action::as_metadata)
        .or_else(|| txn.read_snapshot.as_ref().map(|s| &s.metadata))
}

/// Whether the transaction's table records change data.
pub fn enabled(txn: &Transaction) -> bool {
    metadata_of(txn).is_some_and(|m| is_true(m.configuration.get(CDF_PROPERTY)))
}

/// Records `rows` (table columns first, in table order; extra columns after them are ignored) as
/// changes of `kind`. A no-op when the table does not record change data.
pub async fn record(txn: &mut Transaction, kind: ChangeType, rows: &RecordBatch) -> Result<()> {
    if rows.num_rows() == 0 || !enabled(txn) {
        return Ok(());
    }
    let Some(metadata) = metadata_of(txn) else {
        return Ok(());
    };
    let schema = StructType::parse(&metadata.schema_string)?;
    let table = table_arrow_schema(&schema);
    let n = table.fields().len();
    let mut fields: Vec<Field> = Vec::with_capacity(n + 1);
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(n + 1);
    for (i, f) in table.fields().iter().enumerate() {
        let (Some(have), Some(col)) = (
            rows.schema().fields().get(i).cloned(),
            rows.columns().get(i),
        ) else {
            return Err(EngineError::Internal(format!(
                "change rows lack table column {}",
                f.name()
            )));
        };
        if !have.name().eq_ignore_ascii_case(f.name()) || have.data_type() != f.data_type() {
            return Err(EngineError::Internal(format!(
                "change rows have column {} ({}) where the table has {} ({})",
                have.name(),
                have.data_type(),
                f.name(),
                f.data_type()
            )));
        }
        fields.push(f.as_ref().clone().with_nullable(true));
        cols.push(Arc::clone(col));
    }
    fields.push(Field::new(CHANGE_TYPE_COLUMN, DataType::Utf8, false));
    cols.push(Arc::new(StringArray::from(vec![
        kind.as_str();
        rows.num_rows()
    ])));
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?;
    let buf = &mut txn.change_data;
    buf.recorded_rows += batch.num_rows() as u64;
    buf.pending_bytes += batch.get_array_memory_size();
    buf.pending.push(batch);
    if buf.pending_bytes >= CHANGE_CHUNK_BYTES {
        flush(txn).await?;
    }
    Ok(())
}

/// Writes the buffered change rows as change files and stages their `cdc` actions.
pub async fn flush(txn: &mut Transaction) -> Result<()> {
    if txn.change_data.pending.is_empty() {
        return Ok(());
    }
    let metadata = metadata_of(txn)
        .cloned()
        .ok_or_else(|| EngineError::Internal("change data without table metadata".into()))?;
    let schema = StructType::parse(&metadata.schema_string)?;
    let pending = std::mem::take(&mut txn.change_data.pending);
    txn.change_data.pending_bytes = 0;
    // Post-images and inserts are recorded before the writer computes generated columns: compute
    // them here (stored values of pre-images and deletes are kept).
    let constraints = crate::constraints::TableConstraints::new(&schema, &metadata.configuration)?;
    let pending: Vec<RecordBatch> = pending
        .iter()
        .map(|b| constraints.fill_generated(b))
        .collect::<Result<_>>()?;
    let writer = FileWriter {
        target_file_size: DEFAULT_TARGET_FILE_SIZE,
        change_data: true,
        ..FileWriter::for_table(&txn.table.store, &txn.table.env, &schema, &metadata)?
    };
    let adds = writer.write(&pending, false).await?;
    for a in adds {
        txn.actions.push(Action::Cdc(Cdc {
            path: a.path,
            partition_values: a.partition_values,
            size: a.size,
            data_change: false,
            tags: None,
            extra: Default::default(),
        }));
    }
    Ok(())
}
