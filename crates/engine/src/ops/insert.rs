//! INSERT: rows conformed to the table schema (by position, cast with errors on overflow or bad
//! values, NOT NULL enforced), written as files, staged as adds. Append is a blind append; overwrite
//! removes every live file and reads the whole table; REPLACE WHERE removes the files matching the
//! predicate, reads them, and requires every new row to satisfy it.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{Array, RecordBatch};

use arrow::datatypes::SchemaRef;
use datafusion::logical_expr::Expr;
use delta_rlc_protocol::actions::{Action, Metadata};
use delta_rlc_protocol::schema::StructType;
use serde_json::json;

use crate::arrow_conv::table_arrow_schema;
use crate::error::{EngineError, Result};
use crate::read_set::split_predicate;
use crate::txn::Transaction;
use crate::write::FileWriter;

#[derive(Debug, Clone)]
pub enum InsertMode {
    Append,
    Overwrite,
    ReplaceWhere(Expr),
}

/// Casts `batches` to the table schema by column position.
pub fn conform_batches(batches: &[RecordBatch], schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
    conform_batches_exact(batches, schema).map(|(b, _)| b)
}

/// [`conform_batches`], with the names of the columns into which some value converted inexactly.
pub fn conform_batches_exact(
    batches: &[RecordBatch],
    schema: &SchemaRef,
) -> Result<(Vec<RecordBatch>, BTreeSet<String>)> {
    let mut inexact = BTreeSet::new();
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        if b.num_columns() != schema.fields().len() {
            return Err(EngineError::invalid(format!(
                "INSERT has {} columns but the table has {} ({})",
                b.num_columns(),
                schema.fields().len(),
                schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let mut cols = Vec::with_capacity(b.num_columns());
        for (col, field) in b.columns().iter().zip(schema.fields()) {
            let (col, exact) = super::conform::conform_column_exact(col.clone(), field)?;
            if !exact {
                inexact.insert(field.name().clone());
            }
            cols.push(col);
        }
        out.push(RecordBatch::try_new(schema.clone(), cols)?);
    }
    Ok((out, inexact))
}

/// The metadata the transaction writes against: staged (CREATE / CTAS) or the read snapshot's.
pub fn effective_metadata(txn: &Transaction) -> Result<Metadata> {
    if let Some(m) = txn.actions.iter().find_map(|a| match a {
        Action::Metadata(m) => Some(m.clone()),
        _ => None,
    }) {
        return Ok(m);
    }
    Ok(txn.snapshot()?.metadata.clone())
}

/// `arrow` (the table's Arrow schema) with its generated and identity columns nullable: the
/// values the write computes for them are not there yet when the rows are conformed.
fn computed_columns_nullable(schema: &StructType, arrow: SchemaRef) -> SchemaRef {
    let computed = |name: &str| {
        schema.fields.iter().any(|f| {
            f.name == name
                && (crate::txn::identity::is_identity(f)
                    || crate::constraints::generation_of(f).is_some())
        })
    };
    if !arrow
        .fields()
        .iter()
        .any(|f| !f.is_nullable() && computed(f.name()))
    {
        return arrow;
    }
    let fields: Vec<arrow::datatypes::Field> = arrow
        .fields()
        .iter()
        .map(|f| {
            let nullable = f.is_nullable() || computed(f.name());
            f.as_ref().clone().with_nullable(nullable)
        })
        .collect();
    std::sync::Arc::new(arrow::datatypes::Schema::new_with_metadata(
        fields,
        arrow.metadata().clone(),
    ))
}

/// Writes rows as new files and stages their adds. Under REPLACE WHERE every new row, with its
/// identity and generated values computed, must satisfy the predicate (Spark's replaceWhere
/// constraint: the row as stored, not as given).
async fn write_rows(
    txn: &mut Transaction,
    batches: &[RecordBatch],
    mode: &InsertMode,
) -> Result<u64> {
    let metadata = effective_metadata(txn)?;
    let schema = StructType::parse(&metadata.schema_string)?;
    if let Some(s) = &txn.read_snapshot {
        if s.property_true(delta_rlc_protocol::table_properties::TableProperty::AppendOnly)
            && txn.removes().any(|r| r.data_change)
        {
            return Err(EngineError::invalid(
                "table is append-only (delta.appendOnly=true)",
            ));
        }
    }
    // Generated and identity columns a write leaves out arrive as NULL and are computed below
    // (identity values here, generation expressions by the writer), so a NOT NULL one is checked
    // after that, with every other rule (`TableConstraints::check`), not while conforming.
    let arrow_schema = computed_columns_nullable(&schema, table_arrow_schema(&schema));
    let (batches, inexact) = conform_batches_exact(batches, &arrow_schema)?;
    txn.read_set.inexact_writes.extend(inexact);
    crate::txn::identity::check_no_explicit(&schema, &batches)?;
    let batches = crate::txn::identity::fill(txn, &schema, batches)?;
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    // A commit with change files lists every change in them: once a REPLACE WHERE recorded the
    // rows it deleted, the new rows are recorded as inserts.
    if txn.change_data.recorded_rows > 0 {
        for b in &batches {
            crate::txn::change_data::record(txn, crate::txn::change_data::ChangeType::Insert, b)
                .await?;
        }
    }
    let constraints = crate::constraints::TableConstraints::new(&schema, &metadata.configuration)?;
    let batches = match mode {
        InsertMode::ReplaceWhere(pred) => {
            // The predicate is checked on the generated ids: moving them could break it.
            txn.identity_pinned = true;
            let filled = batches
                .iter()
                .map(|b| constraints.fill_generated(b))
                .collect::<Result<Vec<_>>>()?;
            check_rows_satisfy(&schema, &filled, pred)?;
            filled
        }
        _ => batches,
    };
    let writer = FileWriter {
        constraints: Some(&constraints),
        parquet: txn.table.parquet.clone(),
        ..FileWriter::for_table(&txn.table.store, &txn.table.env, &schema, &metadata)?
    };
    let adds = writer.write(&batches, true).await?;
    let bytes: i64 = adds.iter().map(|a| a.size).sum();
    let files = adds.len();
    for a in adds {
        txn.add_file(a);
    }
    txn.metrics.add_write(files as u64, rows, bytes);
    Ok(rows)
}

/// Builds an INSERT transaction on `txn` (fresh, or a CREATE for CTAS).
pub async fn insert_txn(
    mut txn: Transaction,
    batches: &[RecordBatch],
    mode: InsertMode,
) -> Result<Transaction> {
    txn = stage_insert_mode(txn, &mode).await?;
    let rows = write_rows(&mut txn, batches, &mode).await?;
    txn.affected_rows = Some(rows);
    Ok(txn)
}

/// Rows an INSERT buffers before writing them as files: its memory is bounded by this (plus the
/// writer's buffers), not by its input.
pub const INSERT_CHUNK_BYTES: usize = 128 << 20;

/// [`insert_txn`] over a stream of batches (e.g. an `INSERT … SELECT`), written in chunks of
/// about [`INSERT_CHUNK_BYTES`] as they arrive. `map` shapes each batch (column lists).
pub async fn insert_txn_stream<S>(
    mut txn: Transaction,
    mut batches: S,
    mode: InsertMode,
    map: impl Fn(RecordBatch) -> Result<RecordBatch>,
) -> Result<Transaction>
where
    S: futures::Stream<Item = Result<RecordBatch>> + Unpin,
{
    use futures::StreamExt;
    txn = stage_insert_mode(txn, &mode).await?;
    let mut rows = 0u64;
    let mut chunk: Vec<RecordBatch> = Vec::new();
    let mut chunk_bytes = 0usize;
    loop {
        let next = batches.next().await.transpose()?;
        if let Some(b) = next.as_ref() {
            let b = map(b.clone())?;
            chunk_bytes += b.get_array_memory_size();
            chunk.push(b);
        }
        if chunk_bytes >= INSERT_CHUNK_BYTES || (next.is_none() && !chunk.is_empty()) {
            rows += write_rows(&mut txn, &chunk, &mode).await?;
            chunk.clear();
            chunk_bytes = 0;
        }
        if next.is_none() {
            break;
        }
    }
    txn.affected_rows = Some(rows);
    Ok(txn)
}

/// Stages what the insert mode needs besides the new rows: the removes of an overwrite and the
/// reads they imply.
/// Stages what the mode removes before the new rows: nothing (append), every file (overwrite), or
/// the rows a replaceWhere predicate selects — whole files when it references only partition
/// columns, else exactly the matching rows, as a DELETE removes them (deletion vectors or
/// rewrites), so rows outside the predicate survive.
async fn stage_insert_mode(mut txn: Transaction, mode: &InsertMode) -> Result<Transaction> {
    // An INSERT evaluates no expression over the table's columns but its REPLACE WHERE predicate
    // (a read predicate); its values' conversions are recorded as they are written.
    txn.read_set.used_columns([]);
    // A write is recorded even when it holds no row, from every front end (as Delta Spark and
    // deltalake record it): a commit of its commitInfo alone, which no writer conflicts with.
    txn.record_when_empty = true;
    if txn.read_snapshot.is_some() && txn.operation != crate::txn::Operation::CreateTableAsSelect {
        txn.operation = crate::txn::Operation::Write;
    }
    let now = txn.table.env.clock.now_ms();
    match mode {
        InsertMode::Append => {
            txn.operation_parameters
                .insert("mode".into(), json!("Append"));
        }
        InsertMode::Overwrite => {
            txn.operation_parameters
                .insert("mode".into(), json!("Overwrite"));
            let snap = Arc::clone(txn.snapshot()?);
            // Change data: every old live row deleted, every new row inserted — the file actions.
            txn.change_data.file_actions_are_changes = true;
            txn.read_set.read_whole_table();
            for f in &snap.files {
                txn.remove_file(f.to_remove(now, true));
            }
        }
        InsertMode::ReplaceWhere(pred) => {
            txn.operation_parameters
                .insert("mode".into(), json!("Overwrite"));
            txn.operation_parameters
                .insert("predicate".into(), json!(pred.to_string()));
            let snap = Arc::clone(txn.snapshot()?);
            let rp = split_predicate(pred, &snap.metadata.partition_columns, pred.to_string());
            txn.read_set.add_predicate(rp);
            let only_partition = pred
                .column_refs()
                .iter()
                .all(|c| snap.metadata.partition_columns.contains(&c.name));
            if !only_partition {
                let operation = txn.operation;
                let parameters = std::mem::take(&mut txn.operation_parameters);
                txn = super::delete::delete_txn(txn, Some(pred.clone())).await?;
                txn.operation = operation;
                txn.operation_parameters = parameters;
                return Ok(txn);
            }
            txn.change_data.file_actions_are_changes = true;
            for f in crate::scan::files_matching_partition_predicate(&snap, pred)? {
                txn.read_set
                    .read_file(&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()));
                txn.remove_file(f.to_remove(now, true));
            }
        }
    }
    Ok(txn)
}

/// Errors unless `pred` is true for every row (NULL counts as false).
pub fn check_rows_satisfy(schema: &StructType, batches: &[RecordBatch], pred: &Expr) -> Result<()> {
    use datafusion::common::DFSchema;
    let arrow_schema = table_arrow_schema(schema);
    let batches = conform_batches(batches, &arrow_schema)?;
    let df_schema = DFSchema::try_from(arrow_schema.as_ref().clone())?;
    let phys = crate::expr_plan::plan_physical(&crate::spark::context(), pred, &df_schema)?;
    for b in &batches {
        let v = phys.evaluate(b)?.into_array(b.num_rows())?;
        let v = v
            .as_any()
            .downcast_ref::<arrow::array::BooleanArray>()
            .ok_or_else(|| EngineError::invalid("REPLACE WHERE predicate is not boolean"))?;
        let failing = (0..v.len())
            .filter(|&i| !v.is_valid(i) || !v.value(i))
            .count();
        if failing > 0 {
            return Err(crate::constraints::invalid_data(
                failing,
                &format!("Rows being written must satisfy the REPLACE WHERE predicate {pred}"),
            ));
        }
    }
    Ok(())
}
