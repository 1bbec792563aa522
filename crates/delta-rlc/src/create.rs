//! [`CreateBuilder`]: a new table from columns or an Arrow schema.

use std::collections::BTreeMap;

use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use delta_rlc_engine::arrow_conv::arrow_field_to_delta;
use delta_rlc_engine::arrow_conv::table_arrow_schema;
use delta_rlc_engine::ops::create::replace_table_txn;
use delta_rlc_engine::ops::{
    create_table_txn, insert_txn, CreateDefaults, CreateTableSpec, InsertMode,
};
use delta_rlc_protocol::schema::StructType;

use crate::error::{Error, Result};
use crate::options::{CommitOptions, TableOptions};
use crate::table::Table;

/// Creates a table (version 0); fails if one exists. Awaiting it returns the [`Table`].
///
/// ```
/// # async fn demo(dir: &str) -> delta_rlc::Result<()> {
/// use delta_rlc::arrow::datatypes::DataType;
/// use delta_rlc::Table;
///
/// let table = Table::create(dir)
///     .column("day", DataType::Date32, false)
///     .column("id", DataType::Int64, false)
///     .column("amount", DataType::Float64, true)
///     .partition_by(["day"])
///     .property("delta.enableDeletionVectors", "true")
///     .await?;
/// let snap = table.snapshot(delta_rlc::At::Latest).await?;
/// assert_eq!(snap.partition_columns(), ["day"]);
/// # Ok(()) }
/// # let dir = tempfile::tempdir().unwrap();
/// # tokio::runtime::Runtime::new().unwrap().block_on(demo(dir.path().to_str().unwrap())).unwrap();
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct CreateBuilder {
    location: String,
    options: TableOptions,
    fields: Vec<Field>,
    /// A Delta schema (JSON, with field metadata) given instead of Arrow columns.
    delta_schema: Option<String>,
    partition_by: Vec<String>,
    properties: BTreeMap<String, String>,
    name: Option<String>,
    description: Option<String>,
    data: Vec<RecordBatch>,
    /// First rows given as a stream (read while writing).
    stream: Option<crate::write::StreamSource>,
    writer: Option<crate::WriterSettings>,
    commit: CommitOptions,
    /// `CREATE OR REPLACE`: an existing table is replaced in one commit.
    replace: bool,
    defaults: CreateDefaults,
    /// Recorded as a first write (`WRITE` with this save mode), not `CREATE TABLE`.
    as_write: Option<SaveMode>,
}

/// The save mode a first write that creates the table records (`operationParameters.mode` of
/// its `WRITE` commit), as Spark's `DataFrameWriter` and deltalake's `write_deltalake` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaveMode {
    /// `mode="append"`.
    Append,
    /// `mode="overwrite"`.
    Overwrite,
    /// `mode="error"` (the default): the write fails when a table exists.
    ErrorIfExists,
    /// `mode="ignore"`: nothing is written when a table exists.
    Ignore,
}

impl SaveMode {
    fn label(self) -> &'static str {
        match self {
            SaveMode::Append => "Append",
            SaveMode::Overwrite => "Overwrite",
            SaveMode::ErrorIfExists => "ErrorIfExists",
            SaveMode::Ignore => "Ignore",
        }
    }
}

impl CreateBuilder {
    pub(crate) fn new(location: &str) -> Self {
        CreateBuilder {
            location: location.to_string(),
            options: TableOptions::default(),
            fields: Vec::new(),
            delta_schema: None,
            partition_by: Vec::new(),
            properties: BTreeMap::new(),
            name: None,
            description: None,
            data: Vec::new(),
            stream: None,
            writer: None,
            commit: CommitOptions::default(),
            replace: false,
            defaults: CreateDefaults::Engine,
            as_write: None,
        }
    }

    /// Records the commit as the first write of a DataFrame (`WRITE`, with `mode` and
    /// `partitionBy`), as Spark and deltalake record a write to a path with no table yet, instead
    /// of `CREATE TABLE`. What it commits is the same.
    pub fn as_write(mut self, mode: SaveMode) -> Self {
        self.as_write = Some(mode);
        self
    }

    /// Fills what the properties do not say as deltalake does (its Python API uses this): no
    /// deletion vectors unless `delta.enableDeletionVectors` asks for them, so the table gets the
    /// protocol and configuration deltalake 1.6 would give it. Without this call deletion vectors
    /// are on, so concurrent DELETE, UPDATE and MERGE on one file merge instead of aborting.
    pub fn deltalake_defaults(mut self) -> Self {
        self.defaults = CreateDefaults::Deltalake;
        self
    }

    /// The schema as Delta JSON (`{"type":"struct","fields":[…]}`), field metadata included
    /// (generation expressions, identity columns, comments, invariants); replaces any columns
    /// given as Arrow. The metadata is checked as `CREATE TABLE` checks it.
    pub fn delta_schema(mut self, json: impl Into<String>) -> Self {
        self.delta_schema = Some(json.into());
        self
    }

    /// Adds a column.
    pub fn column(mut self, name: &str, data_type: DataType, nullable: bool) -> Self {
        self.fields.push(Field::new(name, data_type, nullable));
        self
    }

    /// Adds every column of an Arrow schema (e.g. the schema of the batches you will write).
    pub fn columns_from(mut self, schema: &Schema) -> Self {
        self.fields
            .extend(schema.fields().iter().map(|f| f.as_ref().clone()));
        self
    }

    /// Partition columns, in order.
    pub fn partition_by<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.partition_by = columns.into_iter().map(Into::into).collect();
        self
    }

    /// A table property (`delta.enableDeletionVectors`, `delta.enableRowTracking`, …).
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.insert(key.into(), value.into());
        self
    }

    /// Replace a table that already exists there (`CREATE OR REPLACE TABLE`): one commit with
    /// the new schema, partitioning and properties that removes every file (the given rows, if
    /// any, are its rows); the table keeps its id, history and protocol features. Without a
    /// table there, a plain create.
    pub fn or_replace(mut self) -> Self {
        self.replace = true;
        self
    }

    /// The table's name in its metadata.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Rows the table starts with, written in the same commit as the table (version 0), their
    /// columns matched to the table's by name.
    pub fn data(mut self, batches: impl IntoIterator<Item = RecordBatch>) -> Self {
        self.data = batches.into_iter().collect();
        self
    }

    /// The table's first rows as a stream of batches of `schema` (read while writing, in the
    /// creating commit).
    pub fn data_stream(
        mut self,
        schema: arrow::datatypes::SchemaRef,
        stream: crate::BatchStream,
    ) -> Self {
        self.stream = Some(crate::write::StreamSource(schema, stream));
        self
    }

    /// Parquet settings for the first rows' files.
    pub fn writer_settings(mut self, settings: crate::WriterSettings) -> Self {
        self.writer = Some(settings);
        self
    }

    /// Commit metadata for the creating commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// The table's description in its metadata.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Object-store options and conflict settings for the returned table.
    pub fn options(mut self, options: TableOptions) -> Self {
        self.options = options;
        self
    }

    async fn run(self) -> Result<Table> {
        let fields = match &self.delta_schema {
            Some(json) => {
                let mut schema = StructType::parse(json)
                    .map_err(|e| Error::invalid(format!("CREATE: the schema: {e}")))?;
                // A new table never reuses another table's column ids or physical names (a
                // schema copied from an existing table carries them): the engine assigns fresh
                // ones when column mapping is on.
                without_column_mapping(&mut schema);
                schema.fields
            }
            None => {
                let mut fields = Vec::with_capacity(self.fields.len());
                for f in &self.fields {
                    fields.push(arrow_field_to_delta(f)?);
                }
                fields
            }
        };
        if fields.is_empty() {
            return Err(Error::invalid("CREATE: a table needs at least one column"));
        }
        crate::table::refuse_inside_a_table(&self.location, &self.options, "CREATE TABLE").await?;
        let mut table = Table::at(&self.location, &self.options)?;
        if let Some(w) = &self.writer {
            table = table.with_writer_settings(w)?;
        }
        let spec = CreateTableSpec {
            schema: StructType { fields },
            partition_by: self.partition_by,
            cluster_by: Vec::new(),
            properties: self.properties,
            name: self.name,
            description: self.description,
            defaults: self.defaults,
        };
        let replace = self.replace && table.inner.exists().await?;
        let mut txn = match replace {
            true => replace_table_txn(&table.inner, &spec).await?,
            false => create_table_txn(&table.inner, &spec).await?,
        };
        // A replace removes every file, with or without new rows.
        let mode = match replace {
            true => InsertMode::Overwrite,
            false => InsertMode::Append,
        };
        if replace && self.data.is_empty() && self.stream.is_none() {
            txn = insert_txn(txn, &[], InsertMode::Overwrite).await?;
        }
        if !self.data.is_empty() {
            let schema = table_arrow_schema(&spec.schema);
            let batches = self
                .data
                .iter()
                .map(|b| crate::write::by_name(b, &schema, &|_| false))
                .collect::<Result<Vec<_>>>()?;
            txn = insert_txn(txn, &batches, mode.clone()).await?;
        }
        if let Some(crate::write::StreamSource(data_schema, stream)) = self.stream {
            let schema = table_arrow_schema(&spec.schema);
            txn = crate::write::insert_stream(txn, data_schema, stream, mode, &schema, &|_| false)
                .await?;
        }
        if replace {
            // The overwrite names itself WRITE; the commit is the replace.
            txn.operation = delta_rlc_engine::txn::Operation::ReplaceTable;
        }
        if let (Some(mode), false) = (self.as_write, replace) {
            txn.operation = delta_rlc_engine::txn::Operation::Write;
            txn.operation_parameters = serde_json::Map::from_iter([
                ("mode".to_string(), serde_json::json!(mode.label())),
                (
                    "partitionBy".to_string(),
                    serde_json::json!(serde_json::to_string(&spec.partition_by).unwrap_or_default()),
                ),
            ]);
        }
        crate::commit(txn, &self.commit).await?;
        Ok(table)
    }
}

awaitable!(CreateBuilder => Table);

/// Removes column-mapping ids and physical names from every field, nested ones included.
fn without_column_mapping(schema: &mut StructType) {
    use delta_rlc_protocol::schema::DataType;
    fn walk(t: &mut DataType) {
        match t {
            DataType::Struct(s) => without_column_mapping(s),
            DataType::Array { element, .. } => walk(element),
            DataType::Map { key, value, .. } => {
                walk(key);
                walk(value);
            }
            DataType::Primitive(_) => {}
        }
    }
    for f in &mut schema.fields {
        f.metadata
            .retain(|k, _| !k.starts_with("delta.columnMapping.") && k != "parquet.field.id");
        walk(&mut f.data_type);
    }
}
