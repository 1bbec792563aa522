//! `delta_rlc._internal`: the Python binding of the `delta-rlc` library. The Python package
//! (`python/delta_rlc/`) gives it deltalake's shapes; this module converts Arrow data through the
//! C stream interface (zero-copy), runs every operation on a shared tokio runtime with the GIL
//! released (checking for Ctrl-C every 100 ms), and turns errors into typed exceptions.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::ffi_stream::ArrowArrayStreamReader;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow, ToPyArrow};
use delta_rlc::{
    AppTransaction, At, BatchStream, CastFailure, CommitOptions, CommitOutcome, ConflictKind,
    ConflictSettings, DeleteClause, ErrorKind, InsertClause, Isolation, MergeSource,
    RecordBatchStream, SchemaMode, Table, TableOptions, UpdateClause, WriteMode,
};
use futures::StreamExt;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod admin;
mod filesystem;
mod query;
mod values;
mod writer_options;

create_exception!(
    delta_rlc.exceptions,
    DeltaError,
    PyException,
    "Base of every delta_rlc error."
);
create_exception!(
    delta_rlc.exceptions,
    CommitFailedError,
    DeltaError,
    "A concurrent commit truly conflicts; nothing was committed. Fields: conflict_type, winning_version, winning_operation, files, read_predicate, tier, retryable, statement_runs."
);
create_exception!(
    delta_rlc.exceptions,
    ConcurrentAppendError,
    CommitFailedError
);
create_exception!(
    delta_rlc.exceptions,
    ConcurrentDeleteReadError,
    CommitFailedError
);
create_exception!(
    delta_rlc.exceptions,
    ConcurrentDeleteDeleteError,
    CommitFailedError
);
create_exception!(
    delta_rlc.exceptions,
    MetadataChangedError,
    CommitFailedError
);
create_exception!(
    delta_rlc.exceptions,
    ProtocolChangedError,
    CommitFailedError
);
create_exception!(
    delta_rlc.exceptions,
    ConcurrentTransactionError,
    CommitFailedError
);
create_exception!(delta_rlc.exceptions, TableNotFoundError, DeltaError);
create_exception!(delta_rlc.exceptions, SchemaMismatchError, DeltaError);
create_exception!(delta_rlc.exceptions, DeltaProtocolError, DeltaError);
create_exception!(delta_rlc.exceptions, UnsupportedError, DeltaError);
create_exception!(
    delta_rlc.exceptions,
    CommitUnknownError,
    DeltaError,
    "The store did not say whether the commit landed; read the table before retrying."
);

/// `InvalidInputError(DeltaError, ValueError)`: bad input is both (deltalake callers catch
/// `DeltaError`, Python callers `ValueError`); made at import, as exceptions with two bases are.
static INVALID_INPUT: OnceLock<Py<pyo3::types::PyType>> = OnceLock::new();

fn invalid_input_type(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let attrs = PyDict::new(py);
    attrs.set_item("__module__", "delta_rlc.exceptions")?;
    attrs.set_item(
        "__doc__",
        "The input is wrong (SQL, an expression, a column, a value that does not fit, an option).",
    )?;
    let bases = (py.get_type::<DeltaError>(), py.get_type::<PyValueError>());
    py.import("builtins")?
        .getattr("type")?
        .call1(("InvalidInputError", bases, attrs))
}

/// The shared runtime, made by the process that first needed it. A forked child inherits the
/// parent's runtime without its threads: using it would hang forever, so the child gets an error
/// instead (start worker processes with `spawn` or `forkserver`).
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<(u32, Result<tokio::runtime::Runtime, String>)> = OnceLock::new();
    let (pid, rt) = RT.get_or_init(|| {
        // 16 MiB worker stacks: a debug build's unoptimized dependencies (the test script's
        // build) need more than tokio's 2 MiB default for a statement's futures.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_stack_size(16 << 20)
            .build()
            .map_err(|e| e.to_string());
        (std::process::id(), rt)
    });
    if *pid != std::process::id() {
        return Err(DeltaError::new_err(
            "The tokio runtime does not support forked processes: this process was forked after delta_rlc ran; start workers with multiprocessing's 'spawn' or 'forkserver'",
        ));
    }
    rt.as_ref()
        .map_err(|e| DeltaError::new_err(format!("cannot start the runtime: {e}")))
}

/// deltalake's `error_on_type_mismatch=False` (as `null_on_cast_failure`) as the library's policy.
fn cast_failure(null_on_cast_failure: bool) -> CastFailure {
    match null_on_cast_failure {
        true => CastFailure::Null,
        false => CastFailure::Error,
    }
}

/// One MERGE clause from Python: (kind, condition, assignments as SQL text, columns set from
/// the source's same-named column).
type MergeClauseArgs = (
    String,
    Option<String>,
    Option<Vec<(String, String)>>,
    Option<Vec<String>>,
);

/// A delta_rlc error as the Python exception of its kind, with the conflict's fields.
pub(crate) fn to_py_err(py: Python<'_>, e: delta_rlc::Error) -> PyErr {
    let msg = e.to_string();
    let err = match e.kind() {
        ErrorKind::Conflict(info) => {
            // By the kind itself, not its name: a renamed kind cannot silently become the base
            // class. (The enum is non-exhaustive: a kind added later is a CommitFailedError.)
            let err = match info.kind {
                ConflictKind::ConcurrentAppend => ConcurrentAppendError::new_err(msg),
                ConflictKind::ConcurrentDeleteRead => ConcurrentDeleteReadError::new_err(msg),
                ConflictKind::ConcurrentDeleteDelete => ConcurrentDeleteDeleteError::new_err(msg),
                ConflictKind::MetadataChanged => MetadataChangedError::new_err(msg),
                ConflictKind::ProtocolChanged => ProtocolChangedError::new_err(msg),
                ConflictKind::ConcurrentTransaction => ConcurrentTransactionError::new_err(msg),
                ConflictKind::ConcurrentDomainMetadata
                | ConflictKind::MaxCommitAttemptsExceeded
                | ConflictKind::TransactionExpired => CommitFailedError::new_err(msg),
                _ => CommitFailedError::new_err(msg),
            };
            let v = err.value(py);
            let _ = v.setattr("conflict_type", info.kind.name());
            let _ = v.setattr("reason", info.reason.name());
            let _ = v.setattr("winning_version", info.winning_version);
            let _ = v.setattr("winning_operation", info.winning_operation.clone());
            let _ = v.setattr("files", info.files.clone());
            let _ = v.setattr("read_predicate", info.predicate.clone());
            let _ = v.setattr("tier", info.tier.clone());
            let _ = v.setattr("reconcile_failures", info.reconcile_failures.clone());
            let _ = v.setattr("retryable", info.retryable);
            let _ = v.setattr("statement_runs", info.statement_runs);
            return err;
        }
        ErrorKind::NotFound => TableNotFoundError::new_err(msg),
        ErrorKind::SchemaMismatch => SchemaMismatchError::new_err(msg),
        ErrorKind::Corrupt => DeltaProtocolError::new_err(msg),
        ErrorKind::Unsupported => UnsupportedError::new_err(msg),
        ErrorKind::CommitUnknown => CommitUnknownError::new_err(msg),
        ErrorKind::InvalidInput => match INVALID_INPUT.get() {
            Some(t) => PyErr::from_type(t.bind(py).clone(), msg),
            None => PyValueError::new_err(msg),
        },
        _ => DeltaError::new_err(msg),
    };
    let _ = err.value(py).setattr("retryable", e.is_retryable());
    err
}

/// Runs `fut` to completion with the GIL released; Ctrl-C (or any pending signal handler that
/// raises) cancels it. A write cancelled while committing may or may not have committed; nothing
/// half-written is ever visible.
pub(crate) fn run<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = delta_rlc::Result<T>> + Send + 'static,
{
    let rt = runtime()?;
    let mut handle = rt.spawn(fut);
    loop {
        let polled = py.detach(|| {
            rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(100), &mut handle).await
            })
        });
        match polled {
            Ok(Ok(result)) => return result.map_err(|e| to_py_err(py, e)),
            Ok(Err(join)) => return Err(DeltaError::new_err(format!("operation failed: {join}"))),
            Err(_) => {
                if let Err(interrupt) = py.check_signals() {
                    handle.abort();
                    return Err(interrupt);
                }
            }
        }
    }
}

/// A scan stream read synchronously, batch by batch (for pyarrow's RecordBatchReader).
pub(crate) struct BlockingReader {
    pub(crate) schema: SchemaRef,
    pub(crate) stream: RecordBatchStream,
}

impl Iterator for BlockingReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        // No runtime (a forked child) is an error, not the end of the rows.
        let rt = match runtime() {
            Ok(rt) => rt,
            Err(e) => return Some(Err(ArrowError::ExternalError(Box::new(e)))),
        };
        rt.block_on(self.stream.next())
            .map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for BlockingReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

/// Every batch of an Arrow stream from Python (anything with `__arrow_c_stream__`).
fn read_all(data: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let reader = ArrowArrayStreamReader::from_pyarrow_bound(data)?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyValueError::new_err(format!("reading the input data: {e}")))?;
    Ok((schema, batches))
}

/// An Arrow stream from Python (anything with `__arrow_c_stream__`) as a stream the library
/// writes while reading: a thread pulls batches into a channel of two, so at most a few batches
/// are in memory whatever the input's length. The input's end is an explicit message: if the
/// thread stops without sending it (a panic inside the Arrow C stream, for example), the write
/// sees an error, never a shorter input, and commits nothing. The first error ends the reading
/// (the C stream interface forbids reading on after one).
fn stream_of(data: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, BatchStream)> {
    enum Item {
        Batch(delta_rlc::Result<RecordBatch>),
        End,
    }
    let reader = ArrowArrayStreamReader::from_pyarrow_bound(data)?;
    let schema = reader.schema();
    let (tx, rx) = tokio::sync::mpsc::channel::<Item>(2);
    std::thread::Builder::new()
        .name("delta-rlc-input".into())
        .spawn(move || {
            let mut reader = reader;
            loop {
                let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.next()));
                let item = match next {
                    Ok(Some(Ok(batch))) => Item::Batch(Ok(batch)),
                    Ok(Some(Err(e))) => Item::Batch(Err(delta_rlc::Error::from(e))),
                    Ok(None) => Item::End,
                    Err(_) => Item::Batch(Err(delta_rlc::Error::from(
                        arrow::error::ArrowError::ExternalError(
                            "reading the input data failed (the Arrow stream panicked)".into(),
                        ),
                    ))),
                };
                let stop = !matches!(item, Item::Batch(Ok(_)));
                if tx.blocking_send(item).is_err() || stop {
                    break;
                }
            }
        })
        .map_err(|e| DeltaError::new_err(format!("cannot start the input reader: {e}")))?;
    let stream = futures::stream::unfold((rx, false), |(mut rx, done)| async move {
        if done {
            return None;
        }
        match rx.recv().await {
            Some(Item::Batch(b)) => {
                let failed = b.is_err();
                Some((b, (rx, failed)))
            }
            Some(Item::End) => None,
            None => Some((
                Err(delta_rlc::Error::from(
                    arrow::error::ArrowError::ExternalError(
                        "the input reader stopped before the input's end".into(),
                    ),
                )),
                (rx, true),
            )),
        }
    });
    Ok((schema, Box::pin(stream)))
}

fn conflict_settings(conflict: Option<&Bound<'_, PyDict>>) -> PyResult<ConflictSettings> {
    let mut s = ConflictSettings::default();
    let Some(d) = conflict else {
        return Ok(s);
    };
    // A misspelt setting is refused, never ignored.
    const KNOWN: [&str; 6] = [
        "legacy",
        "isolation",
        "max_commit_attempts",
        "retry_on_conflict",
        "reconcile_max_millis",
        "reconcile_max_bytes",
    ];
    for key in d.keys() {
        let key: String = key.extract()?;
        if !KNOWN.contains(&key.as_str()) {
            return Err(PyValueError::new_err(format!(
                "unknown conflict setting {key:?} (known: {})",
                KNOWN.join(", ")
            )));
        }
    }
    if let Some(v) = d.get_item("legacy")? {
        s.legacy = v.extract()?;
    }
    if let Some(v) = d.get_item("isolation")? {
        if !v.is_none() {
            let name: String = v.extract()?;
            s.isolation = Some(match name.to_ascii_lowercase().as_str() {
                "serializable" => Isolation::Serializable,
                "writeserializable" | "write_serializable" => Isolation::WriteSerializable,
                "snapshotisolation" | "snapshot_isolation" | "snapshot" => {
                    Isolation::SnapshotIsolation
                }
                other => {
                    return Err(PyValueError::new_err(format!(
                        "unknown isolation level {other:?} (Serializable, WriteSerializable, SnapshotIsolation)"
                    )))
                }
            });
        }
    }
    if let Some(v) = d.get_item("max_commit_attempts")? {
        if !v.is_none() {
            s.max_commit_attempts = v.extract()?;
        }
    }
    if let Some(v) = d.get_item("retry_on_conflict")? {
        if !v.is_none() {
            s.retry_on_conflict = v.extract()?;
        }
    }
    if let Some(v) = d.get_item("reconcile_max_millis")? {
        if !v.is_none() {
            s.reconcile_time_budget = Duration::from_millis(v.extract()?);
        }
    }
    if let Some(v) = d.get_item("reconcile_max_bytes")? {
        if !v.is_none() {
            s.reconcile_byte_budget = v.extract()?;
        }
    }
    Ok(s)
}

pub(crate) fn table_options(
    storage_options: Option<HashMap<String, String>>,
    conflict: Option<&Bound<'_, PyDict>>,
) -> PyResult<TableOptions> {
    // A memory limit for joins (MERGE) from the environment, as the CLI reads it.
    let options = TableOptions {
        storage_options: storage_options.unwrap_or_default().into_iter().collect(),
        conflict: conflict_settings(conflict)?,
        memory_limit: None,
    };
    match std::env::var("DELTA_RLC_MEMORY_LIMIT") {
        Ok(v) => options
            .memory_limit_str(&v)
            .map_err(|e| PyValueError::new_err(format!("DELTA_RLC_MEMORY_LIMIT: {e}"))),
        Err(_) => Ok(options),
    }
}

pub(crate) fn commit_options(commit: Option<&Bound<'_, PyDict>>) -> PyResult<CommitOptions> {
    let mut o = CommitOptions::default();
    let Some(d) = commit else {
        return Ok(o);
    };
    if let Some(v) = d.get_item("custom_metadata")? {
        if !v.is_none() {
            // One JSON object (the Python side checked it is a mapping with string keys).
            let text: String = v.extract()?;
            let serde_json::Value::Object(m) = serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| PyValueError::new_err(format!("custom_metadata is not JSON: {e}")))?
            else {
                return Err(PyValueError::new_err("custom_metadata must be a mapping"));
            };
            o.metadata = m.into_iter().collect();
        }
    }
    if let Some(v) = d.get_item("app_transactions")? {
        if !v.is_none() {
            let txns: Vec<(String, i64, Option<i64>)> = v.extract()?;
            o.app_transactions = txns
                .into_iter()
                .map(|(app_id, version, last_updated)| AppTransaction {
                    app_id,
                    version,
                    last_updated,
                })
                .collect();
        }
    }
    if let Some(v) = d.get_item("max_commit_retries")? {
        if !v.is_none() {
            let retries: u32 = v.extract()?;
            o.max_commit_attempts = Some(retries.saturating_add(1));
        }
    }
    if let Some(v) = d.get_item("create_checkpoint")? {
        if !v.is_none() {
            o.skip_checkpoint = !v.extract::<bool>()?;
        }
    }
    if let Some(v) = d.get_item("retry_on_conflict")? {
        if !v.is_none() {
            o.retry_on_conflict = Some(v.extract()?);
        }
    }
    Ok(o)
}

/// A commit outcome as deltalake-style metrics: Spark's names and their snake_case forms, the
/// version, the attempts and the reconcile events.
pub(crate) fn outcome_dict<'py>(
    py: Python<'py>,
    c: &CommitOutcome,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in c.metrics.iter() {
        let v: Py<PyAny> = match (value.parse::<i64>(), value) {
            (Ok(n), _) => n.into_pyobject(py)?.into_any().unbind(),
            (Err(_), "true" | "false") => pyo3::types::PyBool::new(py, value == "true")
                .to_owned()
                .into_any()
                .unbind(),
            (Err(_), _) => value.into_pyobject(py)?.into_any().unbind(),
        };
        d.set_item(snake(name), v.clone_ref(py))?;
        d.set_item(name, v)?;
    }
    d.set_item("version", c.version)?;
    d.set_item("num_commit_attempts", c.attempts)?;
    d.set_item("rows_affected", c.metrics.rows_affected)?;
    let events: Vec<String> = c.events.iter().map(|e| e.name.to_string()).collect();
    d.set_item("reconcile_events", events)?;
    // Re-execution on conflict: how many times the statement ran, and why earlier runs aborted.
    d.set_item("statement_runs", c.statement_runs())?;
    d.set_item("earlier_runs", c.earlier_runs.clone())?;
    // What the statement sent to the store, and its longest chain of round trips.
    if let Some(r) = &c.requests {
        let q = PyDict::new(py);
        for (kind, n) in [
            ("GET", r.get),
            ("PUT", r.put),
            ("LIST", r.list),
            ("HEAD", r.head),
            ("DELETE", r.delete),
        ] {
            q.set_item(kind, n)?;
        }
        d.set_item("requests", q)?;
        d.set_item("critical_path_depth", r.critical_path_depth)?;
    }
    Ok(d)
}

/// `numDeletedRows` → `num_deleted_rows`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for ch in name.chars() {
        if ch.is_ascii_uppercase() {
            out.push('_');
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// One Delta table (the Python `DeltaTable` wraps it).
#[pyclass(module = "delta_rlc._internal", frozen)]
struct RawTable {
    pub(crate) table: Table,
}

impl RawTable {
    /// The handle writes go through: reading `read_version` when given (the Python table's
    /// pinned version), else the latest.
    pub(crate) fn at(&self, read_version: Option<u64>) -> Table {
        match read_version {
            Some(v) => self.table.at_version(v),
            None => self.table.clone(),
        }
    }

    /// [`RawTable::at`] writing its files with the `writer` dict's Parquet settings.
    pub(crate) fn writing(
        &self,
        py: Python<'_>,
        read_version: Option<u64>,
        writer: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Table> {
        let t = self.at(read_version);
        match writer_options::writer_settings(writer)? {
            Some(s) => t.with_writer_settings(&s).map_err(|e| to_py_err(py, e)),
            None => Ok(t),
        }
    }
}

#[pymethods]
impl RawTable {
    /// Opens an existing table.
    #[staticmethod]
    #[pyo3(signature = (uri, storage_options=None, conflict=None))]
    fn open(
        py: Python<'_>,
        uri: String,
        storage_options: Option<HashMap<String, String>>,
        conflict: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<RawTable> {
        let options = table_options(storage_options, conflict)?;
        let table = run(py, async move { Table::open_with(&uri, options).await })?;
        Ok(RawTable { table })
    }

    /// Creates a table from an Arrow schema.
    #[staticmethod]
    /// `replace`: an existing table is replaced in one commit (CREATE OR REPLACE TABLE).
    #[pyo3(signature = (uri, schema, partition_by, configuration, name=None, description=None, storage_options=None, conflict=None, data=None, commit=None, schema_json=None, writer=None, replace=false, save_mode=None))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        uri: String,
        schema: &Bound<'_, PyAny>,
        partition_by: Vec<String>,
        configuration: HashMap<String, String>,
        name: Option<String>,
        description: Option<String>,
        storage_options: Option<HashMap<String, String>>,
        conflict: Option<&Bound<'_, PyDict>>,
        data: Option<&Bound<'_, PyAny>>,
        commit: Option<&Bound<'_, PyDict>>,
        schema_json: Option<String>,
        writer: Option<&Bound<'_, PyDict>>,
        replace: bool,
        save_mode: Option<String>,
    ) -> PyResult<RawTable> {
        let schema = arrow::datatypes::Schema::from_pyarrow_bound(schema)?;
        let rows = data.map(stream_of).transpose()?;
        let options = table_options(storage_options, conflict)?;
        // deltalake's API: the table deltalake would create (no deletion vectors unless asked for).
        let mut b = Table::create(&uri)
            .deltalake_defaults()
            .columns_from(&schema)
            .partition_by(partition_by)
            .options(options);
        for (k, v) in configuration {
            b = b.property(k, v);
        }
        if let Some(w) = writer_options::writer_settings(writer)? {
            b = b.writer_settings(w);
        }
        if let Some(j) = schema_json {
            b = b.delta_schema(j);
        }
        if let Some(n) = name {
            b = b.name(n);
        }
        if let Some(d) = description {
            b = b.description(d);
        }
        if let Some((data_schema, stream)) = rows {
            b = b.data_stream(data_schema, stream);
        }
        if replace {
            b = b.or_replace();
        }
        // write_deltalake creating the table: recorded as its first WRITE, with the save mode.
        if let Some(m) = save_mode {
            b = b.as_write(match m.as_str() {
                "append" => delta_rlc::SaveMode::Append,
                "overwrite" => delta_rlc::SaveMode::Overwrite,
                "error" => delta_rlc::SaveMode::ErrorIfExists,
                "ignore" => delta_rlc::SaveMode::Ignore,
                other => return Err(PyValueError::new_err(format!("unknown mode {other:?}"))),
            });
        }
        b = b.commit_options(commit_options(commit)?);
        let table = run(py, async move { b.await })?;
        Ok(RawTable { table })
    }

    fn uri(&self) -> String {
        self.table.uri().to_string()
    }

    /// The root URI as deltalake spells it (with a trailing `/`).
    fn table_uri(&self) -> String {
        format!("{}/", self.table.uri().trim_end_matches('/'))
    }

    /// The latest committed version.
    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        let t = self.table.clone();
        run(py, async move { t.version().await })
    }

    /// The latest version committed at or before `timestamp_ms`.
    fn version_at(&self, py: Python<'_>, timestamp_ms: i64) -> PyResult<u64> {
        let t = self.table.clone();
        run(py, async move {
            Ok(t.snapshot(At::TimestampMs(timestamp_ms)).await?.version())
        })
    }

    /// Schema, metadata, protocol and files of one version.
    fn snapshot<'py>(&self, py: Python<'py>, version: u64) -> PyResult<Bound<'py, PyDict>> {
        let t = self.table.clone();
        let s = run(py, async move { t.snapshot(At::Version(version)).await })?;
        let d = PyDict::new(py);
        d.set_item("version", s.version())?;
        d.set_item("timestamp_ms", s.timestamp_ms())?;
        d.set_item("schema", s.schema().as_ref().to_pyarrow(py)?)?;
        d.set_item("schema_string", s.schema_json())?;
        let m = s.metadata();
        d.set_item("id", m.id)?;
        d.set_item("name", m.name)?;
        d.set_item("description", m.description)?;
        d.set_item("partition_columns", m.partition_columns)?;
        d.set_item("created_time", m.created_time)?;
        d.set_item("configuration", m.configuration)?;
        let p = s.protocol();
        d.set_item("min_reader_version", p.min_reader_version)?;
        d.set_item("min_writer_version", p.min_writer_version)?;
        d.set_item("reader_features", p.reader_features)?;
        d.set_item("writer_features", p.writer_features)?;
        d.set_item("files", s.files())?;
        d.set_item("num_rows", s.num_rows())?;
        Ok(d)
    }

    /// Rows of one version as a pyarrow RecordBatchReader (streamed file by file).
    /// `filters`: deltalake's filters as typed terms (`values::filters`); `predicate`: SQL text.
    /// Both given: rows for which both hold.
    #[pyo3(signature = (version, columns=None, predicate=None, filters=None))]
    #[allow(clippy::type_complexity)]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        version: u64,
        columns: Option<Vec<String>>,
        predicate: Option<String>,
        filters: Option<Vec<Vec<(String, String, Bound<'py, PyAny>)>>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut b = self.table.scan().version(version);
        if let Some(c) = columns {
            b = b.columns(c);
        }
        if let Some(f) = values::filters(filters)? {
            b = b.filter(f);
        }
        if let Some(p) = predicate {
            b = b.filter(p);
        }
        let stream = run(py, async move { b.await })?;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(BlockingReader {
            schema: stream.schema(),
            stream,
        });
        reader.into_pyarrow(py)
    }

    /// Appends, overwrites or replaces rows (`mode`: append | overwrite; `predicate`: replace
    /// where).
    #[pyo3(signature = (data, mode, predicate=None, commit=None, read_version=None, schema_mode=None, writer=None, partition_by=None))]
    #[allow(clippy::too_many_arguments)] // deltalake's keyword arguments, one each
    fn write<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        mode: &str,
        predicate: Option<String>,
        commit: Option<&Bound<'py, PyDict>>,
        read_version: Option<u64>,
        schema_mode: Option<String>,
        writer: Option<&Bound<'py, PyDict>>,
        partition_by: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let table = self.writing(py, read_version, writer)?;
        let (data_schema, stream) = stream_of(data)?;
        let schema_mode = match schema_mode.as_deref() {
            None => None,
            Some("merge") => Some(SchemaMode::Merge),
            Some("overwrite") => Some(SchemaMode::Overwrite),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "schema_mode must be 'merge' or 'overwrite', got {other:?}"
                )))
            }
        };
        let mode = match (mode, predicate) {
            ("overwrite", Some(p)) => WriteMode::ReplaceWhere(p.into()),
            ("overwrite", None) => WriteMode::Overwrite,
            ("append", None) => WriteMode::Append,
            ("append", Some(_)) => {
                return Err(PyValueError::new_err(
                    "predicate (replaceWhere) needs mode='overwrite'",
                ))
            }
            (other, _) => return Err(PyValueError::new_err(format!("unknown mode {other:?}"))),
        };
        let options = commit_options(commit)?;
        // Re-execution needs the rows again: asked for on this call, they are read into memory
        // first (a stream is read once).
        let mut b = match options.retry_on_conflict {
            Some(n) if n > 0 => {
                let batches = run(py, async move {
                    use futures::TryStreamExt;
                    stream.try_collect::<Vec<_>>().await
                })?;
                match batches.is_empty() {
                    true => table.write_stream(data_schema, Box::pin(futures::stream::empty())),
                    false => table.write(batches),
                }
            }
            _ => table.write_stream(data_schema, stream),
        }
        .mode(mode)
        .commit_options(options);
        if let Some(m) = schema_mode {
            b = b.schema_mode(m);
        }
        if let Some(p) = partition_by {
            b = b.partition_by(p);
        }
        let c = run(py, async move { b.await })?;
        outcome_dict(py, &c)
    }

    #[pyo3(signature = (predicate=None, commit=None, read_version=None, writer=None))]
    fn delete<'py>(
        &self,
        py: Python<'py>,
        predicate: Option<String>,
        commit: Option<&Bound<'py, PyDict>>,
        read_version: Option<u64>,
        writer: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let table = self.writing(py, read_version, writer)?;
        let mut b = table.delete().commit_options(commit_options(commit)?);
        if let Some(p) = predicate {
            b = b.filter(p);
        }
        let c = run(py, async move { b.await })?;
        outcome_dict(py, &c)
    }

    /// `null_on_cast_failure`: a value that does not cast to its column is stored as NULL
    /// (deltalake's `error_on_type_mismatch=False`).
    #[pyo3(signature = (updates, predicate=None, commit=None, read_version=None, writer=None, null_on_cast_failure=false))]
    #[allow(clippy::too_many_arguments)]
    fn update<'py>(
        &self,
        py: Python<'py>,
        updates: Vec<(String, Bound<'py, PyAny>)>,
        predicate: Option<String>,
        commit: Option<&Bound<'py, PyDict>>,
        read_version: Option<u64>,
        writer: Option<&Bound<'py, PyDict>>,
        null_on_cast_failure: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let table = self.writing(py, read_version, writer)?;
        let mut b = table
            .update()
            .commit_options(commit_options(commit)?)
            .on_cast_failure(cast_failure(null_on_cast_failure));
        for (col, value) in updates {
            b = b.set(col, values::assigned_value(&value)?);
        }
        if let Some(p) = predicate {
            b = b.filter(p);
        }
        let c = run(py, async move { b.await })?;
        outcome_dict(py, &c)
    }

    /// MERGE. `clauses`: (kind, condition, assignments, from_source) with kind one of
    /// matched_update, matched_delete, not_matched_insert, not_matched_by_source_update,
    /// not_matched_by_source_delete; assignments (SQL text per column) and from_source (columns
    /// set from the source's column of the same name, typed) both None = all columns (`*`).
    #[pyo3(signature = (source, predicate, source_alias, target_alias, clauses, commit=None, read_version=None, merge_schema=false, writer=None, null_on_cast_failure=false))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn merge<'py>(
        &self,
        py: Python<'py>,
        source: &Bound<'py, PyAny>,
        predicate: String,
        source_alias: String,
        target_alias: String,
        clauses: Vec<MergeClauseArgs>,
        commit: Option<&Bound<'py, PyDict>>,
        read_version: Option<u64>,
        merge_schema: bool,
        writer: Option<&Bound<'py, PyDict>>,
        null_on_cast_failure: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let table = self.writing(py, read_version, writer)?;
        let (schema, batches) = read_all(source)?;
        let alias = source_alias.clone();
        let mut b = table
            .merge(MergeSource::batches(schema, batches), predicate)
            .source_alias(source_alias)
            .target_alias(target_alias)
            .commit_options(commit_options(commit)?)
            .on_cast_failure(cast_failure(null_on_cast_failure));
        if merge_schema {
            b = b.with_schema_evolution();
        }
        for (kind, condition, assignments, from_source) in clauses {
            let assignments: Option<Vec<(String, delta_rlc::Expression)>> =
                match (assignments, from_source) {
                    (None, None) => None,
                    (sql, same_named) => Some(
                        sql.unwrap_or_default()
                            .into_iter()
                            .map(|(c, e)| (c, e.into()))
                            .chain(same_named.unwrap_or_default().into_iter().map(|c| {
                                let e = values::source_column(&alias, &c);
                                (c, e)
                            }))
                            .collect(),
                    ),
                };
            let update = || {
                let mut u = UpdateClause::default();
                match &assignments {
                    Some(a) => {
                        for (c, e) in a {
                            u = u.set(c.clone(), e.clone());
                        }
                    }
                    None => u = u.all(),
                }
                if let Some(c) = &condition {
                    u = u.when(c.clone());
                }
                u
            };
            let delete = || match &condition {
                Some(c) => DeleteClause::default().when(c.clone()),
                None => DeleteClause::default(),
            };
            b = match kind.as_str() {
                "matched_update" => {
                    let u = update();
                    b.when_matched_update(move |_| u)
                }
                "matched_delete" => {
                    let d = delete();
                    b.when_matched_delete(move |_| d)
                }
                "not_matched_by_source_update" => {
                    let u = update();
                    b.when_not_matched_by_source_update(move |_| u)
                }
                "not_matched_by_source_delete" => {
                    let d = delete();
                    b.when_not_matched_by_source_delete(move |_| d)
                }
                "not_matched_insert" => {
                    let mut i = InsertClause::default();
                    match &assignments {
                        Some(a) => {
                            for (c, e) in a {
                                i = i.value(c.clone(), e.clone());
                            }
                        }
                        None => i = i.all(),
                    }
                    if let Some(c) = &condition {
                        i = i.when(c.clone());
                    }
                    b.when_not_matched_insert(move |_| i)
                }
                other => {
                    return Err(PyValueError::new_err(format!(
                        "unknown merge clause {other:?}"
                    )))
                }
            };
        }
        let c = run(py, async move { b.await })?;
        outcome_dict(py, &c)
    }

    #[pyo3(signature = (zorder, target_size=None, partition_filter=None, commit=None, read_version=None, writer=None, min_commit_interval_ms=None))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn optimize<'py>(
        &self,
        py: Python<'py>,
        zorder: Vec<String>,
        target_size: Option<u64>,
        partition_filter: Option<Vec<Vec<(String, String, Bound<'py, PyAny>)>>>,
        commit: Option<&Bound<'py, PyDict>>,
        read_version: Option<u64>,
        writer: Option<&Bound<'py, PyDict>>,
        min_commit_interval_ms: Option<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let table = self.writing(py, read_version, writer)?;
        let mut b = table
            .optimize()
            .zorder(zorder)
            .commit_options(commit_options(commit)?);
        if let Some(s) = target_size {
            b = b.target_size(s);
        }
        if let Some(f) = values::filters(partition_filter)? {
            b = b.filter(f);
        }
        if let Some(ms) = min_commit_interval_ms {
            b = b.min_commit_interval(std::time::Duration::from_millis(ms));
        }
        let c = run(py, async move { b.await })?;
        outcome_dict(py, &c)
    }

    /// Paths relative to the root, as deltalake returns them. `full`: list every file (else only
    /// the files the log's tombstones name); `keep_versions`: versions whose files stay.
    #[pyo3(signature = (retention_hours, dry_run, enforce_retention_duration, full=false, keep_versions=None, commit=None))]
    #[allow(clippy::too_many_arguments)] // deltalake's vacuum keywords, one each
    fn vacuum(
        &self,
        py: Python<'_>,
        retention_hours: Option<f64>,
        dry_run: bool,
        enforce_retention_duration: bool,
        full: bool,
        keep_versions: Option<Vec<u64>>,
        commit: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vec<String>> {
        let mut b = self
            .table
            .vacuum()
            .dry_run(dry_run)
            .enforce_retention_duration(enforce_retention_duration)
            .lite(!full)
            .keep_versions(keep_versions.unwrap_or_default())
            .commit_options(commit_options(commit)?);
        if let Some(h) = retention_hours {
            if !(h.is_finite() && h >= 0.0) {
                return Err(PyValueError::new_err("retention_hours must be >= 0"));
            }
            b = b.retention(Duration::from_secs_f64(h * 3600.0));
        }
        let out = run(py, async move { b.await })?;
        Ok(out.files)
    }

    /// The change data feed of `start..=end` (each a version or a timestamp in ms; no end: the
    /// latest) as a pyarrow RecordBatch, with `predicate` (SQL text over the change columns) and
    /// `columns` applied by the library.
    #[pyo3(signature = (start_version=None, start_ms=None, end_version=None, end_ms=None, columns=None, predicate=None))]
    #[allow(clippy::too_many_arguments)] // deltalake's load_cdf keywords, one each
    fn changes<'py>(
        &self,
        py: Python<'py>,
        start_version: Option<u64>,
        start_ms: Option<i64>,
        end_version: Option<u64>,
        end_ms: Option<i64>,
        columns: Option<Vec<String>>,
        predicate: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let at = |v: Option<u64>, ms: Option<i64>| match (v, ms) {
            (Some(v), _) => At::Version(v),
            (None, Some(ms)) => At::TimestampMs(ms),
            (None, None) => At::Latest,
        };
        let start = match at(start_version, start_ms) {
            At::Latest => At::Version(0),
            other => other,
        };
        let mut b = self.table.changes(start, at(end_version, end_ms));
        if let Some(c) = columns {
            b = b.columns(c);
        }
        if let Some(p) = predicate {
            b = b.filter(p);
        }
        let batch = run(py, async move { b.await })?;
        batch.to_pyarrow(py)
    }

    /// One SQL statement with this table registered as `t`: (rows reader or None, commit dict or
    /// None, message or None).
    fn sql<'py>(&self, py: Python<'py>, statement: String) -> PyResult<Bound<'py, PyAny>> {
        let t = self.table.clone();
        let out = run(py, async move { t.sql(&statement).await })?;
        sql_result(py, out.batches, out.commit.as_ref(), out.message)
    }
}

fn sql_result<'py>(
    py: Python<'py>,
    batches: Vec<RecordBatch>,
    commit: Option<&CommitOutcome>,
    message: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let rows: Py<PyAny> = match batches.first() {
        Some(first) => {
            let schema = first.schema();
            let reader: Box<dyn RecordBatchReader + Send> = Box::new(
                arrow::record_batch::RecordBatchIterator::new(batches.into_iter().map(Ok), schema),
            );
            reader.into_pyarrow(py)?.unbind()
        }
        None => py.None(),
    };
    let commit: Py<PyAny> = match commit {
        Some(c) => outcome_dict(py, c)?.into_any().unbind(),
        None => py.None(),
    };
    Ok((rows, commit, message).into_pyobject(py)?.into_any())
}

/// One SQL statement over tables named by path: (rows reader or None, commit dict or None,
/// message or None).
#[pyfunction]
#[pyo3(signature = (statement, storage_options=None, conflict=None))]
fn sql<'py>(
    py: Python<'py>,
    statement: String,
    storage_options: Option<HashMap<String, String>>,
    conflict: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = table_options(storage_options, conflict)?;
    let out = run(
        py,
        async move { delta_rlc::sql(&statement, &options).await },
    )?;
    sql_result(py, out.batches, out.commit.as_ref(), out.message)
}

/// The statements of a SQL script, split by the SQL tokenizer (a `;` inside a string or a
/// comment does not split).
#[pyfunction]
fn split_statements(py: Python<'_>, script: String) -> PyResult<Vec<String>> {
    delta_rlc::split_statements(&script).map_err(|e| to_py_err(py, e))
}

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<RawTable>()?;
    m.add_class::<filesystem::RawFileStore>()?;
    m.add_function(wrap_pyfunction!(sql, m)?)?;
    m.add_function(wrap_pyfunction!(split_statements, m)?)?;
    admin::register(m)?;
    query::register(m)?;
    m.add("DeltaError", py.get_type::<DeltaError>())?;
    m.add("CommitFailedError", py.get_type::<CommitFailedError>())?;
    m.add(
        "ConcurrentAppendError",
        py.get_type::<ConcurrentAppendError>(),
    )?;
    m.add(
        "ConcurrentDeleteReadError",
        py.get_type::<ConcurrentDeleteReadError>(),
    )?;
    m.add(
        "ConcurrentDeleteDeleteError",
        py.get_type::<ConcurrentDeleteDeleteError>(),
    )?;
    m.add(
        "MetadataChangedError",
        py.get_type::<MetadataChangedError>(),
    )?;
    m.add(
        "ProtocolChangedError",
        py.get_type::<ProtocolChangedError>(),
    )?;
    m.add(
        "ConcurrentTransactionError",
        py.get_type::<ConcurrentTransactionError>(),
    )?;
    m.add("TableNotFoundError", py.get_type::<TableNotFoundError>())?;
    m.add("SchemaMismatchError", py.get_type::<SchemaMismatchError>())?;
    m.add("DeltaProtocolError", py.get_type::<DeltaProtocolError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("CommitUnknownError", py.get_type::<CommitUnknownError>())?;
    let invalid = invalid_input_type(py)?;
    m.add("InvalidInputError", &invalid)?;
    let _ = INVALID_INPUT.set(invalid.extract::<Py<pyo3::types::PyType>>()?);
    Ok(())
}
