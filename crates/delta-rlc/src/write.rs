//! [`WriteBuilder`]: Arrow batches into the table — append, overwrite, or replace the rows a
//! predicate selects.

use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use delta_rlc_engine::arrow_conv::{nullable_fields, table_arrow_schema};
use delta_rlc_engine::ops::alter::{alter_txn, AlterOp};
use delta_rlc_engine::ops::dml::ExprContext;
use delta_rlc_engine::ops::insert::effective_metadata;
use delta_rlc_engine::ops::{insert_txn, InsertMode};
use delta_rlc_engine::Transaction;
use delta_rlc_protocol::schema::StructType;
use futures::StreamExt;

use crate::error::{Error, ErrorKind, Result};
use crate::options::CommitOptions;
use crate::outcome::CommitOutcome;
use crate::table::Table;
use crate::Expression;

/// How a write treats the rows already in the table.
#[derive(Debug, Clone, Default)]
pub enum WriteMode {
    /// Add the rows (a blind append: it never conflicts with other appends).
    #[default]
    Append,
    /// Replace every row.
    Overwrite,
    /// Replace the rows matching the predicate; every new row must match it (`replaceWhere`).
    ReplaceWhere(Expression),
}

/// How a write treats columns the table and the data do not share (deltalake's `schema_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaMode {
    /// Columns the data has and the table lacks are added (nullable) in the same commit; columns
    /// the data lacks are written as NULL.
    Merge,
    /// With [`WriteMode::Overwrite`]: the data's schema replaces the table's.
    Overwrite,
}

/// Writes batches; their columns are matched to the table's by name (any order; without a
/// [`SchemaMode`], a missing or extra column is [`ErrorKind::SchemaMismatch`]) and cast to its
/// types (a value that does not fit, or a NULL in a NOT NULL column, is an error and nothing
/// commits).
///
/// ```
/// # async fn demo(table: delta_rlc::Table, batch: delta_rlc::arrow::array::RecordBatch) -> delta_rlc::Result<()> {
/// use delta_rlc::WriteMode;
///
/// table.write([batch.clone()]).await?; // append
/// let replaced = table
///     .write([batch])
///     .mode(WriteMode::ReplaceWhere("id < 100".into()))
///     .await?;
/// println!("committed version {:?}", replaced.version);
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until it is awaited"]
pub struct WriteBuilder {
    table: Table,
    source: WriteSource,
    mode: WriteMode,
    schema_mode: Option<SchemaMode>,
    partition_by: Option<Vec<String>>,
    commit: CommitOptions,
}

/// A stream of record batches to write (all of one schema), read as the write goes: memory stays
/// bounded by the writer's buffer, whatever the stream's length.
pub type BatchStream =
    std::pin::Pin<Box<dyn futures::Stream<Item = Result<RecordBatch>> + Send + 'static>>;

/// A stream of batches with its schema (Debug without its contents).
pub(crate) struct StreamSource(pub(crate) SchemaRef, pub(crate) BatchStream);

impl std::fmt::Debug for StreamSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a stream of {} columns", self.0.fields().len())
    }
}

/// The rows a write takes: batches in memory, or a stream read while writing.
pub(crate) enum WriteSource {
    Batches(Vec<RecordBatch>),
    Stream(SchemaRef, BatchStream),
}

impl WriteSource {
    fn schema(&self) -> Option<SchemaRef> {
        match self {
            WriteSource::Batches(b) => b.first().map(|b| b.schema()),
            WriteSource::Stream(schema, _) => Some(Arc::clone(schema)),
        }
    }
}

impl std::fmt::Debug for WriteBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match &self.source {
            WriteSource::Batches(b) => format!("{} batches", b.len()),
            WriteSource::Stream(s, _) => format!("a stream of {} columns", s.fields().len()),
        };
        f.debug_struct("WriteBuilder")
            .field("table", &self.table)
            .field("source", &source)
            .field("mode", &self.mode)
            .field("schema_mode", &self.schema_mode)
            .finish()
    }
}

impl WriteBuilder {
    pub(crate) fn new(table: Table, source: WriteSource) -> Self {
        WriteBuilder {
            table,
            source,
            mode: WriteMode::Append,
            schema_mode: None,
            partition_by: None,
            commit: CommitOptions::default(),
        }
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// Append (default), overwrite, or replace where.
    pub fn mode(mut self, mode: WriteMode) -> Self {
        self.mode = mode;
        self
    }

    /// Schema evolution: add the data's new columns ([`SchemaMode::Merge`]) or replace the
    /// schema ([`SchemaMode::Overwrite`], with [`WriteMode::Overwrite`]).
    pub fn schema_mode(mut self, mode: SchemaMode) -> Self {
        self.schema_mode = Some(mode);
        self
    }

    /// The table's partition columns after the write. Other than the table's own, they need
    /// [`SchemaMode::Overwrite`] with [`WriteMode::Overwrite`]: every file is rewritten in the new
    /// layout.
    pub fn partition_by(mut self, columns: Vec<String>) -> Self {
        self.partition_by = Some(columns);
        self
    }

    async fn run(self) -> Result<CommitOutcome> {
        let (table, commit) = (self.table.clone(), self.commit.clone());
        match self.source {
            WriteSource::Batches(batches) => {
                crate::run_statement(&table, &commit, true, |table| {
                    WriteBuilder {
                        table,
                        source: WriteSource::Batches(batches.clone()),
                        mode: self.mode.clone(),
                        schema_mode: self.schema_mode,
                        partition_by: self.partition_by.clone(),
                        commit: self.commit.clone(),
                    }
                    .run_once()
                })
                .await
            }
            // A stream is read once: the statement runs once (asking it to re-execute is
            // refused by `run_statement`).
            WriteSource::Stream(..) => {
                let mut once = Some(self);
                crate::run_statement(&table, &commit, false, |table| {
                    let builder = once.take().map(|b| WriteBuilder { table, ..b });
                    async move {
                        match builder {
                            Some(b) => b.run_once().await,
                            None => Err(Error::new(
                                ErrorKind::Internal,
                                "a streamed write ran twice",
                            )),
                        }
                    }
                })
                .await
            }
        }
    }

    async fn run_once(self) -> Result<CommitOutcome> {
        let inner = &self.table.statement_table();
        let snapshot = inner.snapshot(self.table.read_version).await?;
        let mut txn = Transaction::new(
            inner,
            Some(std::sync::Arc::clone(&snapshot)),
            delta_rlc_engine::txn::Operation::Write,
        );
        let data_schema = self.source.schema();
        let mut delta_schema = snapshot.schema.clone();
        let mut table_schema = table_arrow_schema(&delta_schema);
        let evolution = match (self.schema_mode, &data_schema) {
            (Some(SchemaMode::Merge), Some(data)) => {
                let top = nullable_fields(data, |f| {
                    table_schema
                        .fields()
                        .iter()
                        .all(|t| !t.name().eq_ignore_ascii_case(f.name()))
                })?;
                let mut new: Vec<(Vec<String>, _)> =
                    top.into_iter().map(|f| (Vec::new(), f)).collect();
                // A struct column's new fields are added to it, as Delta Spark's mergeSchema
                // adds them (one level deep: a deeper new field is refused by the by-name match,
                // never dropped).
                for f in data.fields() {
                    let Some(t) = table_schema
                        .fields()
                        .iter()
                        .find(|t| t.name().eq_ignore_ascii_case(f.name()))
                    else {
                        continue;
                    };
                    if let (DataType::Struct(given), DataType::Struct(has)) =
                        (f.data_type(), t.data_type())
                    {
                        let added: Vec<Field> = given
                            .iter()
                            .filter(|g| {
                                has.iter().all(|h| !h.name().eq_ignore_ascii_case(g.name()))
                            })
                            .map(|g| g.as_ref().clone())
                            .collect();
                        let fields = nullable_fields(&Schema::new(added), |_| true)?;
                        new.extend(fields.into_iter().map(|g| (vec![t.name().clone()], g)));
                    }
                }
                (!new.is_empty()).then_some(AlterOp::AddNestedColumns(new))
            }
            (Some(SchemaMode::Overwrite), Some(data)) => {
                let fields = nullable_fields(data, |_| true)?;
                // A replaceWhere keeps the rows its predicate does not match, which must still
                // fit the schema: it may "overwrite" the schema only with the one the table has.
                let same_schema = fields.len() == delta_schema.fields.len()
                    && fields
                        .iter()
                        .zip(&delta_schema.fields)
                        .all(|(a, b)| a.name == b.name && a.data_type == b.data_type && b.nullable)
                    && self
                        .partition_by
                        .as_ref()
                        .is_none_or(|p| *p == snapshot.metadata.partition_columns);
                match &self.mode {
                    WriteMode::Overwrite => {}
                    WriteMode::ReplaceWhere(_) if same_schema => {}
                    WriteMode::ReplaceWhere(_) => {
                        return Err(Error::invalid(
                            "schema_mode overwrite with a predicate (replaceWhere) would change the schema of the rows the predicate keeps; overwrite the whole table (no predicate) to change the schema",
                        ))
                    }
                    WriteMode::Append => {
                        return Err(Error::invalid(
                            "schema_mode overwrite needs mode overwrite (the old rows do not fit the new schema)",
                        ))
                    }
                }
                if same_schema && matches!(self.mode, WriteMode::ReplaceWhere(_)) {
                    None
                } else {
                    Some(AlterOp::ReplaceSchema {
                        schema: StructType { fields },
                        partition_by: self.partition_by.clone(),
                    })
                }
            }
            _ => None,
        };
        let changes_partitioning = self.partition_by.as_ref().is_some_and(|p| {
            p.len() != snapshot.metadata.partition_columns.len()
                || p.iter()
                    .zip(&snapshot.metadata.partition_columns)
                    .any(|(a, b)| !a.eq_ignore_ascii_case(b))
        });
        if changes_partitioning && !matches!(evolution, Some(AlterOp::ReplaceSchema { .. })) {
            return Err(Error::invalid(format!(
                "partition_by {:?} differs from the table's partition columns {:?}: changing them needs mode overwrite with schema_mode overwrite",
                self.partition_by.unwrap_or_default(),
                snapshot.metadata.partition_columns
            )));
        }
        if let Some(op) = evolution {
            // The schema change and the rows are one commit; the rows are written in the new schema.
            txn = alter_txn(txn, op).await?;
            // A write's schema follows from its data: never re-applied on a concurrent metadata
            // change, even when it writes no row.
            txn.metadata_intent = None;
            txn.operation_parameters.clear();
            let staged = effective_metadata(&txn)?;
            delta_schema = StructType::parse(&staged.schema_string)
                .map_err(delta_rlc_engine::EngineError::from)?;
            table_schema = table_arrow_schema(&delta_schema);
        }
        let fill_missing = self.schema_mode == Some(SchemaMode::Merge);
        // Identity and generated columns the data leaves out are computed when written.
        let computed: Vec<String> = delta_schema
            .fields
            .iter()
            .filter(|f| {
                delta_rlc_engine::txn::identity::is_identity(f)
                    || delta_rlc_engine::constraints::generation_of(f).is_some()
            })
            .map(|f| f.name.to_ascii_lowercase())
            .collect();
        let may_fill = move |n: &str| fill_missing || computed.iter().any(|c| c == n);
        let mode = match &self.mode {
            WriteMode::Append => InsertMode::Append,
            WriteMode::Overwrite => InsertMode::Overwrite,
            WriteMode::ReplaceWhere(p) => {
                InsertMode::ReplaceWhere(p.over_table(&ExprContext::new(&snapshot, None)?)?)
            }
        };
        let txn = match self.source {
            WriteSource::Batches(batches) => {
                let batches = batches
                    .iter()
                    .map(|b| by_name(b, &table_schema, &may_fill))
                    .collect::<Result<Vec<_>>>()?;
                insert_txn(txn, &batches, mode).await?
            }
            WriteSource::Stream(schema, stream) => {
                insert_stream(txn, schema, stream, mode, &table_schema, &may_fill).await?
            }
        };
        // An empty write commits too: the operation's rule (`stage_insert_mode`).
        crate::commit(txn, &self.commit).await
    }
}

/// Stages the rows of `stream` (of `schema`) on `txn`, matched to `table` by name batch by batch
/// as they arrive: the schema is checked before anything is read, so a mismatch writes nothing.
pub(crate) async fn insert_stream(
    txn: Transaction,
    schema: SchemaRef,
    stream: BatchStream,
    mode: InsertMode,
    table: &Schema,
    may_fill: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Transaction> {
    by_name(
        &RecordBatch::new_empty(Arc::clone(&schema)),
        table,
        may_fill,
    )?;
    let engine_stream = stream.map(|r| {
        r.map_err(|e| {
            delta_rlc_engine::EngineError::InvalidArgument(format!("reading the input data: {e}"))
        })
    });
    let map = |b: RecordBatch| {
        if b.schema().fields() != schema.fields() {
            return Err(delta_rlc_engine::EngineError::InvalidArgument(
                "the input data changed its schema mid-stream".into(),
            ));
        }
        by_name(&b, table, may_fill)
            .map_err(|e| delta_rlc_engine::EngineError::InvalidArgument(e.to_string()))
    };
    Ok(delta_rlc_engine::ops::insert_txn_stream(txn, Box::pin(engine_stream), mode, map).await?)
}

/// `batch`'s columns in the table's order, matched by name (case-insensitively); types are cast
/// when the rows are written. An extra column is a schema mismatch, and so is a missing one
/// unless `may_fill` accepts its (lowercase) name (then it is NULL: written as NULL, or computed).
pub(crate) fn by_name(
    batch: &RecordBatch,
    table: &Schema,
    may_fill: &dyn Fn(&str) -> bool,
) -> Result<RecordBatch> {
    let names = |s: &Schema| -> Vec<String> {
        s.fields()
            .iter()
            .map(|f| f.name().to_ascii_lowercase())
            .collect()
    };
    let (ours, theirs) = (names(table), names(batch.schema().as_ref()));
    let missing: Vec<&String> = ours.iter().filter(|n| !theirs.contains(n)).collect();
    let extra: Vec<&String> = theirs.iter().filter(|n| !ours.contains(n)).collect();
    if missing.iter().any(|m| !may_fill(m))
        || !extra.is_empty()
        || theirs.len() + missing.len() != ours.len()
    {
        // deltalake's words first where they apply (callers match on them).
        let what = match theirs.len() == ours.len() {
            true => "schema mismatch",
            false => "schema mismatch: Cannot cast schema, number of fields does not match",
        };
        return Err(Error::new(
            ErrorKind::SchemaMismatch,
            format!(
                "{what}: the data lacks columns {missing:?} and has columns {extra:?} the table does not (table: {ours:?})"
            ),
        ));
    }
    for (n, f) in ours.iter().zip(table.fields()) {
        let Some(i) = theirs.iter().position(|t| t == n) else {
            continue;
        };
        let given = batch.schema().field(i).data_type().clone();
        if narrower_decimal(&given, f.data_type()) {
            // deltalake's words (its callers match on them).
            return Err(Error::new(
                ErrorKind::SchemaMismatch,
                format!(
                    "Cannot cast field {} from {given} to {}: a DataFrame's DECIMAL narrower than the column's is refused by type, as Delta Spark's schema check refuses it",
                    f.name(),
                    f.data_type()
                ),
            ));
        }
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(ours.len());
    let mut fields: Vec<Field> = Vec::with_capacity(ours.len());
    for (n, f) in ours.iter().zip(table.fields()) {
        match theirs.iter().position(|t| t == n) {
            // A column that may be filled (schema_mode="merge") may lack nested fields too:
            // they are NULL; otherwise a struct's fields must all match (`nested_fields`).
            Some(i) if may_fill(n) => {
                use delta_rlc_engine::ops::nested_fields::{align, NestedFields};
                let how = NestedFields::ByNameFillingMissing;
                let col = align(batch.column(i), f.data_type(), how, f.name())?;
                fields.push(Field::new(f.name(), col.data_type().clone(), true));
                columns.push(col);
            }
            Some(i) => {
                columns.push(Arc::clone(batch.column(i)));
                fields.push(batch.schema().field(i).clone());
            }
            None => {
                columns.push(new_null_array(f.data_type(), batch.num_rows()));
                fields.push(f.as_ref().clone().with_nullable(true));
            }
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// A DECIMAL in `given` (at any depth) with fewer integer digits or a smaller scale than the same
/// place in `column`: a DataFrame write refuses it by type, before reading a value (Delta Spark:
/// DELTA_MERGE_INCOMPATIBLE_DECIMAL_TYPE; deltalake: "Cannot cast field"). SQL's INSERT, by
/// contrast, is Spark's store assignment: each value is cast, and one that does not fit fails.
fn narrower_decimal(
    given: &arrow::datatypes::DataType,
    column: &arrow::datatypes::DataType,
) -> bool {
    use arrow::datatypes::DataType as T;
    match (given, column) {
        (T::Decimal128(p1, s1), T::Decimal128(p2, s2)) => {
            s2 < s1 || (i16::from(*p2) - i16::from(*s2)) < (i16::from(*p1) - i16::from(*s1))
        }
        (T::Struct(a), T::Struct(b)) => a.iter().any(|f| {
            b.iter()
                .find(|g| g.name().eq_ignore_ascii_case(f.name()))
                .is_some_and(|g| narrower_decimal(f.data_type(), g.data_type()))
        }),
        (T::List(a) | T::LargeList(a), T::List(b) | T::LargeList(b)) => {
            narrower_decimal(a.data_type(), b.data_type())
        }
        (T::Map(a, _), T::Map(b, _)) => narrower_decimal(a.data_type(), b.data_type()),
        _ => false,
    }
}

awaitable!(WriteBuilder => CommitOutcome);
