//! [`Table`]: one Delta table location, and the builders every operation starts from.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use delta_rlc_engine::arrow_conv::table_arrow_schema;
use delta_rlc_engine::snapshot::as_of::version_at_timestamp;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::{DeltaTable, Snapshot};
use delta_rlc_storage::object_cache::{CACHE_BUDGET, HANDLE_CACHE_BUDGET};
use delta_rlc_storage::TableStore;

use crate::changes::ChangesBuilder;
use crate::create::CreateBuilder;
use crate::dml::{DeleteBuilder, UpdateBuilder};
use crate::error::{Error, Result};
use crate::maintenance::{OptimizeBuilder, VacuumBuilder};
use crate::merge::{MergeBuilder, MergeSource};
use crate::options::TableOptions;
use crate::outcome::SqlOutcome;
use crate::scan::{RecordBatchStream, ScanBuilder};
use crate::write::{BatchStream, WriteBuilder, WriteSource};
use crate::Expression;

/// A Delta table at a location (a local path, `file://`, `s3://bucket/prefix`, `memory://name`).
///
/// Cheap to clone; every operation reads the latest committed state when it starts (or the
/// version you ask for) and commits through the row-level conflict checker.
///
/// ```
/// # async fn demo(dir: &str) -> delta_rlc::Result<()> {
/// use delta_rlc::arrow::datatypes::DataType;
/// use delta_rlc::{col, lit, Table};
///
/// let table = Table::create(dir)
///     .column("id", DataType::Int64, false)
///     .column("v", DataType::Utf8, true)
///     .await?;
/// assert_eq!(table.version().await?, 0);
/// let deleted = table.delete().filter(col("id").lt(lit(10))).await?;
/// assert_eq!(deleted.version, None); // an empty table: nothing to delete, nothing committed
/// # Ok(()) }
/// # let dir = tempfile::tempdir().unwrap();
/// # tokio::runtime::Runtime::new().unwrap().block_on(demo(dir.path().to_str().unwrap())).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Table {
    pub(crate) inner: DeltaTable,
    /// The version writes read (None: the latest when each operation starts).
    pub(crate) read_version: Option<u64>,
}

/// Which state of the table to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// The latest committed version.
    Latest,
    /// A version number.
    Version(u64),
    /// The latest version committed at or before this instant (milliseconds since the epoch).
    TimestampMs(i64),
}

impl From<u64> for At {
    fn from(v: u64) -> Self {
        At::Version(v)
    }
}

impl Table {
    /// Opens an existing table with default options.
    pub async fn open(location: &str) -> Result<Table> {
        Table::open_with(location, TableOptions::default()).await
    }

    /// Opens an existing table with object-store options and conflict settings.
    pub async fn open_with(location: &str, options: TableOptions) -> Result<Table> {
        let table = Table::at(location, &options)?;
        if !table.inner.exists().await? {
            return Err(Error::from(delta_rlc_engine::EngineError::NotFound(
                format!("no Delta table at {location}"),
            )));
        }
        Ok(table)
    }

    /// The handle without checking that a table exists (creation).
    pub(crate) fn at(location: &str, options: &TableOptions) -> Result<Table> {
        if options.conflict.max_commit_attempts == 0 {
            return Err(Error::invalid("max_commit_attempts must be at least 1"));
        }
        // The handle keeps the data and DV files its statements read (an eighth of a memory
        // limit at most): a later statement reads only files no earlier one read.
        let kept_budget = options
            .env()
            .memory_limit
            .map_or(HANDLE_CACHE_BUDGET, |limit| {
                (limit / 8).min(HANDLE_CACHE_BUDGET)
            });
        let store = TableStore::open_with_options(location, &options.storage_options)
            .map_err(delta_rlc_engine::EngineError::from)?
            .keeping_objects(kept_budget);
        Ok(Table {
            inner: DeltaTable::on_store(store)
                .with_env(options.env())
                .with_conflict_config(options.conflict.to_engine()),
            read_version: None,
        })
    }

    /// Starts creating a table at `location` (the builder is awaited to create it).
    pub fn create(location: &str) -> CreateBuilder {
        CreateBuilder::new(location)
    }

    /// Starts converting the Parquet files under `location` into a Delta table in place
    /// (`CONVERT TO DELTA`; the builder is awaited to convert).
    pub fn convert(location: &str) -> crate::ConvertBuilder {
        crate::ConvertBuilder::new(location)
    }

    /// A handle whose operations read `version` — as a deltalake `DeltaTable` loaded at a
    /// version does — and commit on top of every later version through the conflict checker:
    /// they commit unless a later commit truly conflicts with what they read and changed.
    pub fn at_version(&self, version: u64) -> Table {
        Table {
            inner: self.inner.clone(),
            read_version: Some(version),
        }
    }

    /// The engine handle for one statement: the same table, snapshot cache and settings, with its
    /// requests counted by a fresh meter (reported in [`CommitOutcome::requests`]).
    pub(crate) fn statement_table(&self) -> DeltaTable {
        let mut inner = self.inner.clone();
        // A statement with a memory limit keeps at most a quarter of it in read objects.
        let budget = inner
            .env
            .memory_limit
            .map_or(CACHE_BUDGET, |limit| (limit / 4).min(CACHE_BUDGET));
        inner.store = inner
            .store
            .metered_by(delta_rlc_storage::RequestMeter::new(), budget)
            .0;
        inner
    }

    /// A handle whose operations write their data files with these Parquet settings
    /// (deltalake's `writer_properties`); checked here, so a bad value fails before any write.
    pub fn with_writer_settings(&self, settings: &crate::WriterSettings) -> Result<Table> {
        let mut t = self.clone();
        t.inner.parquet = Some(Arc::new(settings.to_engine()?));
        Ok(t)
    }

    /// The table's root URI.
    pub fn uri(&self) -> &str {
        self.inner.store.root_uri()
    }

    /// The latest committed version.
    pub async fn version(&self) -> Result<u64> {
        Ok(self.inner.snapshot(None).await?.version)
    }

    /// The table as of a version or timestamp ([`At::Latest`] for the newest).
    pub async fn snapshot(&self, at: impl Into<At>) -> Result<TableSnapshot> {
        let version = match at.into() {
            At::Latest => None,
            At::Version(v) => Some(v),
            At::TimestampMs(ms) => Some(version_at_timestamp(&self.inner.store, ms).await?),
        };
        Ok(TableSnapshot {
            table: self.clone(),
            snapshot: self.inner.snapshot(version).await?,
        })
    }

    /// The change data feed of versions `start..=end` (tables with
    /// `delta.enableChangeDataFeed = true`): the table's columns plus `_change_type` (`insert`,
    /// `delete`, `update_preimage`, `update_postimage`), `_commit_version` and `_commit_timestamp`.
    /// Bounds are versions or timestamps; [`At::Latest`] as `end` reads to the newest version (an
    /// `end` past it is clamped). A version whose changes were not recorded is an error.
    ///
    /// ```
    /// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
    /// use delta_rlc::At;
    /// let changes = table.changes(3, At::Latest).await?;
    /// println!("{} changed rows since version 3", changes.num_rows());
    /// # Ok(()) }
    /// ```
    pub fn changes(&self, start: impl Into<At>, end: impl Into<At>) -> ChangesBuilder {
        ChangesBuilder::new(self.clone(), start.into(), end.into())
    }

    /// The engine's handle (for this crate's builders).
    pub(crate) fn engine_table(&self) -> &delta_rlc_engine::DeltaTable {
        &self.inner
    }

    /// Reads rows: `.filter(..)`, `.columns(..)`, `.version(..)`, then `.await` for a stream of
    /// Arrow batches (or [`ScanBuilder::collect`]).
    pub fn scan(&self) -> ScanBuilder {
        let b = ScanBuilder::new(self.clone());
        match self.read_version {
            Some(v) => b.version(v),
            None => b,
        }
    }

    /// Writes Arrow batches (append by default; see [`crate::WriteMode`]).
    pub fn write(&self, batches: impl IntoIterator<Item = RecordBatch>) -> WriteBuilder {
        WriteBuilder::new(
            self.clone(),
            WriteSource::Batches(batches.into_iter().collect()),
        )
    }

    /// Writes a stream of batches of `schema`, read while writing: files are cut as the rows
    /// arrive, so memory stays bounded whatever the stream's length.
    pub fn write_stream(&self, schema: SchemaRef, stream: BatchStream) -> WriteBuilder {
        WriteBuilder::new(self.clone(), WriteSource::Stream(schema, stream))
    }

    /// Deletes the rows matching `.filter(..)` (every row without a filter).
    pub fn delete(&self) -> DeleteBuilder {
        DeleteBuilder::new(self.clone())
    }

    /// Updates rows: `.set(column, value)` and an optional `.filter(..)`.
    pub fn update(&self) -> UpdateBuilder {
        UpdateBuilder::new(self.clone())
    }

    /// Merges `source` into the table on the condition `on` (columns qualified by the target and
    /// source aliases, `target` and `source` unless set).
    pub fn merge(&self, source: impl Into<MergeSource>, on: impl Into<Expression>) -> MergeBuilder {
        MergeBuilder::new(self.clone(), source.into(), on.into())
    }

    /// Compacts small files (optionally Z-ordered).
    pub fn optimize(&self) -> OptimizeBuilder {
        OptimizeBuilder::new(self.clone())
    }

    /// Deletes files no version within the retention period references.
    pub fn vacuum(&self) -> VacuumBuilder {
        VacuumBuilder::new(self.clone())
    }

    /// Runs one SQL statement with this table registered as `t` (other tables by path):
    /// `SELECT count(*) FROM t`, `DESCRIBE HISTORY t`, `ALTER …`, `INSERT INTO t SELECT …`.
    pub async fn sql(&self, sql: &str) -> Result<SqlOutcome> {
        let mut session = SqlSession::new(self.inner.env.clone(), self.inner.conflict.clone());
        let uri = self.uri().to_string();
        session.use_store(&uri, self.inner.store.clone());
        // The handle's cached snapshot, not a fresh load of the log.
        session.use_snapshot_cache(&uri, self.inner.latest.clone());
        session.register("t", &uri);
        let out = session.execute(sql).await?;
        Ok(SqlOutcome::from_engine(out))
    }
}

/// Refuses a new table at `location` inside another Delta table (CREATE and CONVERT from the
/// library check what SQL's do).
pub(crate) async fn refuse_inside_a_table(
    location: &str,
    options: &TableOptions,
    statement: &str,
) -> Result<()> {
    let mut session = SqlSession::new(options.env(), options.conflict.to_engine());
    session.storage_options = options.storage_options.clone();
    Ok(session.refuse_inside_a_table(location, statement).await?)
}

/// Runs one SQL statement that names its tables by path (`SELECT * FROM './t'`,
/// `delta.\`s3://b/t\``, `CREATE TABLE '/data/t' (…)`), opening them with `options`.
pub async fn sql(statement: &str, options: &TableOptions) -> Result<SqlOutcome> {
    let mut session = SqlSession::new(options.env(), options.conflict.to_engine());
    session.storage_options = options.storage_options.clone();
    Ok(SqlOutcome::from_engine(session.execute(statement).await?))
}

/// Runs one query over tables registered by name (deltalake's `QueryBuilder`): each name reads
/// its handle's pinned version ([`Table::at_version`]) or the latest; a statement that is not a
/// query is refused before anything runs. Rows are streamed. A column read as stored carries
/// its Delta field metadata on its Arrow field (`delta.generationExpression`, column-mapping ids,
/// comments), as deltalake's QueryBuilder returns it; computed columns carry none.
///
/// ```
/// # async fn demo(events: delta_rlc::Table) -> delta_rlc::Result<()> {
/// let rows = delta_rlc::query("SELECT count(*) FROM events", &[("events", &events)]).await?;
/// # Ok(()) }
/// ```
pub async fn query(statement: &str, tables: &[(&str, &Table)]) -> Result<RecordBatchStream> {
    Ok(query_after(statement, tables, &[]).await?.0)
}

/// [`query`] in a session that first defines `definitions` (statements an earlier call defined,
/// in order); the statement itself may define too: `CREATE EXTERNAL TABLE e STORED AS CSV
/// LOCATION 'path'` or `CREATE VIEW v AS …`, which write nothing (deltalake's `QueryBuilder`
/// keeps them for its later queries). Returns the rows (none for a definition) and whether the
/// statement was a definition, for the caller to pass again.
pub async fn query_after(
    statement: &str,
    tables: &[(&str, &Table)],
    definitions: &[String],
) -> Result<(RecordBatchStream, bool)> {
    let (env, conflict) = match tables.first() {
        Some((_, t)) => (t.inner.env.clone(), t.inner.conflict.clone()),
        None => (
            TableOptions::default().env(),
            TableOptions::default().conflict.to_engine(),
        ),
    };
    let mut session = SqlSession::new(env, conflict);
    for (name, table) in tables {
        let uri = table.uri().to_string();
        session.use_store(&uri, table.inner.store.clone());
        match table.read_version {
            Some(v) => session.register_at(name, &uri, v),
            None => session.register(name, &uri),
        }
    }
    for d in definitions {
        session.define_session_object(d)?;
    }
    if session.define_session_object(statement)? {
        let empty = Arc::new(arrow::datatypes::Schema::empty());
        let rows = datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
            empty,
            futures::stream::empty(),
        );
        return Ok((RecordBatchStream::new(Box::pin(rows)), true));
    }
    let stream = session.query_only(statement).await?;
    Ok((RecordBatchStream::new(stream), false))
}

/// Splits a SQL script into its statements with the SQL tokenizer: a `;` inside a string, a quoted
/// identifier or a comment does not split. The one splitter behind `sql -f`, the shell and Python.
pub fn split_statements(script: &str) -> Result<Vec<String>> {
    Ok(delta_rlc_engine::sql::split_statements(script)?)
}

/// A table's metadata: identity, name, description, partitioning, properties.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableMetadata {
    /// The table id (a UUID, fixed at creation).
    pub id: String,
    /// The table's name, if it has one.
    pub name: Option<String>,
    /// The table's description, if it has one.
    pub description: Option<String>,
    /// Partition columns, in order.
    pub partition_columns: Vec<String>,
    /// When the table was created (milliseconds since the epoch), if recorded.
    pub created_time: Option<i64>,
    /// Table properties.
    pub configuration: BTreeMap<String, String>,
}

/// The reader and writer versions and features a table requires.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtocolInfo {
    /// minReaderVersion.
    pub min_reader_version: i32,
    /// minWriterVersion.
    pub min_writer_version: i32,
    /// Reader features (reader version 3).
    pub reader_features: Option<Vec<String>>,
    /// Writer features (writer version 7).
    pub writer_features: Option<Vec<String>>,
}

/// A live data file as its add action records it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileAction {
    /// The path as logged (relative to the table root unless absolute; URI-encoded).
    pub path: String,
    /// Size in bytes.
    pub size: i64,
    /// Modification time (milliseconds since the epoch).
    pub modification_time: i64,
    /// Whether the commit that added it changed data.
    pub data_change: bool,
    /// Partition values as strings (None: null).
    pub partition_values: BTreeMap<String, Option<String>>,
    /// The statistics JSON, if recorded.
    pub stats: Option<String>,
    /// Its deletion vector, if any.
    pub deletion_vector: Option<DeletionVectorInfo>,
    /// Its tags.
    pub tags: BTreeMap<String, Option<String>>,
}

/// A deletion vector descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeletionVectorInfo {
    /// `u` (a file by UUID), `i` (inline) or `p` (an absolute path).
    pub storage_type: String,
    /// The UUID, the inline bytes or the path.
    pub path_or_inline_dv: String,
    /// The offset in the DV file.
    pub offset: Option<i32>,
    /// The serialized size.
    pub size_in_bytes: i32,
    /// Rows deleted.
    pub cardinality: i64,
}

/// One version of a table: its schema, properties and files; it can be scanned.
#[derive(Debug, Clone)]
pub struct TableSnapshot {
    table: Table,
    snapshot: Arc<Snapshot>,
}

impl TableSnapshot {
    /// The version.
    pub fn version(&self) -> u64 {
        self.snapshot.version
    }

    /// The commit timestamp (milliseconds since the epoch).
    pub fn timestamp_ms(&self) -> i64 {
        self.snapshot.timestamp_ms
    }

    /// The table schema as Arrow.
    pub fn schema(&self) -> SchemaRef {
        table_arrow_schema(&self.snapshot.schema)
    }

    /// Partition columns, in order.
    pub fn partition_columns(&self) -> &[String] {
        self.snapshot.partition_columns()
    }

    /// The Delta schema as the log records it (`schemaString`: JSON with field metadata).
    pub fn schema_json(&self) -> &str {
        &self.snapshot.metadata.schema_string
    }

    /// Table properties (`delta.enableDeletionVectors`, …).
    pub fn properties(&self) -> BTreeMap<String, String> {
        self.snapshot
            .metadata
            .configuration
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Paths of the live data files, relative to the table root.
    pub fn files(&self) -> Vec<String> {
        self.snapshot.files.iter().map(|f| f.path.clone()).collect()
    }

    /// Live rows, when every file records its row count.
    pub fn num_rows(&self) -> Option<i64> {
        self.snapshot.num_rows()
    }

    /// The table's metadata action.
    pub fn metadata(&self) -> TableMetadata {
        let m = &self.snapshot.metadata;
        TableMetadata {
            id: m.id.clone(),
            name: m.name.clone(),
            description: m.description.clone(),
            partition_columns: m.partition_columns.clone(),
            created_time: m.created_time,
            configuration: self.properties(),
        }
    }

    /// The table's protocol action.
    pub fn protocol(&self) -> ProtocolInfo {
        let p = &self.snapshot.protocol;
        ProtocolInfo {
            min_reader_version: p.min_reader_version,
            min_writer_version: p.min_writer_version,
            reader_features: p.reader_features.clone(),
            writer_features: p.writer_features.clone(),
        }
    }

    /// The version application `app_id` last recorded with a commit (a `txn` action), if any.
    pub fn app_transaction_version(&self, app_id: &str) -> Option<i64> {
        self.snapshot.txns.get(app_id).map(|t| t.version)
    }

    /// The live files' add actions (deltalake's `get_add_actions`).
    pub fn add_actions(&self) -> Vec<FileAction> {
        self.snapshot
            .files
            .iter()
            .map(|f| FileAction {
                path: f.path.clone(),
                size: f.size,
                modification_time: f.modification_time,
                data_change: f.data_change,
                partition_values: f
                    .partition_values
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                stats: f.stats.clone(),
                deletion_vector: f.deletion_vector.as_ref().map(|d| DeletionVectorInfo {
                    storage_type: d.storage_type.clone(),
                    path_or_inline_dv: d.path_or_inline_dv.clone(),
                    offset: d.offset,
                    size_in_bytes: d.size_in_bytes,
                    cardinality: d.cardinality,
                }),
                tags: f
                    .tags
                    .as_ref()
                    .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// For each live file with a deletion vector: its logged path and its selection vector (one
    /// entry per physical row, `true` = kept). A file without a row count fails (the vector's
    /// length is unknown).
    pub async fn deletion_vectors(&self) -> Result<Vec<(String, Vec<bool>)>> {
        /// The selection entries all files may hold together (an Arrow list's i32 offsets).
        const MAX_SELECTION_ENTRIES: usize = i32::MAX as usize;
        let mut out = Vec::new();
        let mut total = 0usize;
        for f in &self.snapshot.files {
            if f.deletion_vector.is_none() {
                continue;
            }
            let deleted = delta_rlc_engine::dv_io::load_file_dv(
                &self.table.inner.store,
                &self.snapshot.root,
                f,
            )
            .await?;
            let rows = f
                .num_records()
                .ok_or_else(|| Error::invalid(format!("{}: no row count", f.path)))?;
            // The row count comes from the log: bounded before it sizes an allocation (one
            // vector per file; Arrow lists hold at most i32::MAX entries in all).
            let rows = usize::try_from(rows)
                .ok()
                .filter(|r| total.saturating_add(*r) <= MAX_SELECTION_ENTRIES)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "{}: {rows} rows is more than a selection vector holds",
                        f.path
                    ))
                })?;
            total += rows;
            let mut keep = vec![true; rows];
            for i in deleted.iter() {
                match usize::try_from(i).ok().and_then(|i| keep.get_mut(i)) {
                    Some(k) => *k = false,
                    None => {
                        return Err(Error::invalid(format!(
                            "{}: deletion vector names row {i} of {rows}",
                            f.path
                        )))
                    }
                }
            }
            out.push((f.path.clone(), keep));
        }
        Ok(out)
    }

    /// Scans this version.
    pub fn scan(&self) -> ScanBuilder {
        ScanBuilder::new(self.table.clone()).version(self.snapshot.version)
    }
}
