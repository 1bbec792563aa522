//! Table administration for `delta_rlc.table`: ALTER changes, RESTORE, checkpoints, log
//! cleanup, add actions and application transaction versions. Each function takes the
//! `RawTable` and translates Python values into the library's typed calls; the rules are the
//! library's.

use std::collections::{BTreeMap, HashMap};

use arrow_pyarrow::FromPyArrow;
use delta_rlc::{At, TableChange};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{commit_options, outcome_dict, run, RawTable};

/// Commits one ALTER change. `kind` names the change; `arg` carries its value:
/// add_columns (a pyarrow schema of the new fields), add_constraints ({name: expr}),
/// drop_constraint ((name, if_exists)), set_properties ({k: v}), unset_properties
/// ((keys, if_exists)), drop_not_null (column), add_features ((names, allow_increase)),
/// set_name / set_description (str or None).
#[pyfunction]
#[pyo3(signature = (table, kind, arg, commit=None, read_version=None))]
fn alter<'py>(
    py: Python<'py>,
    table: &RawTable,
    kind: &str,
    arg: &Bound<'py, PyAny>,
    commit: Option<&Bound<'py, PyDict>>,
    read_version: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let change = match kind {
        "add_columns" => {
            let schema = arrow::datatypes::Schema::from_pyarrow_bound(arg)?;
            TableChange::AddColumns(schema.fields().iter().map(|f| f.as_ref().clone()).collect())
        }
        "add_constraints" => {
            let c: BTreeMap<String, String> = arg.extract()?;
            TableChange::AddConstraints(c)
        }
        "drop_constraint" => {
            let (name, if_exists): (String, bool) = arg.extract()?;
            TableChange::DropConstraint { name, if_exists }
        }
        "set_properties" => {
            let p: BTreeMap<String, String> = arg.extract()?;
            TableChange::SetProperties(p)
        }
        "unset_properties" => {
            let (keys, if_exists): (Vec<String>, bool) = arg.extract()?;
            TableChange::UnsetProperties { keys, if_exists }
        }
        "drop_not_null" => TableChange::DropNotNull(arg.extract()?),
        "set_column_metadata" => {
            let (column, metadata): (String, std::collections::BTreeMap<String, String>) =
                arg.extract()?;
            TableChange::SetColumnMetadata { column, metadata }
        }
        "add_features" => {
            let (features, allow): (Vec<String>, bool) = arg.extract()?;
            TableChange::AddFeatures {
                features,
                allow_protocol_versions_increase: allow,
            }
        }
        "set_name" => TableChange::SetName(arg.extract()?),
        "set_description" => TableChange::SetDescription(arg.extract()?),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown table change {other:?}"
            )))
        }
    };
    let b = table
        .at(read_version)
        .alter(change)
        .commit_options(commit_options(commit)?);
    let c = run(py, async move { b.await })?;
    outcome_dict(py, &c)
}

/// Restores version `version` (or the latest at `timestamp_ms`) as a new commit.
#[pyfunction]
#[pyo3(signature = (table, version=None, timestamp_ms=None, ignore_missing_files=false, commit=None))]
fn restore<'py>(
    py: Python<'py>,
    table: &RawTable,
    version: Option<u64>,
    timestamp_ms: Option<i64>,
    ignore_missing_files: bool,
    commit: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let at = match (version, timestamp_ms) {
        (Some(v), None) => At::Version(v),
        (None, Some(ms)) => At::TimestampMs(ms),
        _ => {
            return Err(PyValueError::new_err(
                "restore takes a version or a timestamp",
            ))
        }
    };
    let b = table
        .table
        .restore(at)
        .ignore_missing_files(ignore_missing_files)
        .commit_options(commit_options(commit)?);
    let c = run(py, async move { b.await })?;
    outcome_dict(py, &c)
}

/// Writes a checkpoint of the latest version; returns its version.
#[pyfunction]
#[pyo3(signature = (table, version=None))]
fn create_checkpoint(py: Python<'_>, table: &RawTable, version: Option<u64>) -> PyResult<u64> {
    let t = match version {
        Some(v) => table.table.at_version(v),
        None => table.table.clone(),
    };
    run(py, async move { t.create_checkpoint().await })
}

/// Writes the log compaction file of commits `start..=end` at the handle's version; returns its
/// path.
#[pyfunction]
#[pyo3(signature = (table, start, end, version=None))]
fn compact_logs(
    py: Python<'_>,
    table: &RawTable,
    start: u64,
    end: u64,
    version: Option<u64>,
) -> PyResult<String> {
    let t = match version {
        Some(v) => table.table.at_version(v),
        None => table.table.clone(),
    };
    run(py, async move { t.compact_logs(start, end).await })
}

/// Deletes expired log entries; returns their paths.
#[pyfunction]
fn cleanup_metadata(py: Python<'_>, table: &RawTable) -> PyResult<Vec<String>> {
    let t = table.table.clone();
    run(py, async move { t.cleanup_metadata().await })
}

/// The add actions of one version: a list of dicts (path, size_bytes, modification_time,
/// data_change, partition_values, stats (JSON text or None), deletion_vector (dict or None),
/// tags).
#[pyfunction]
fn add_actions<'py>(
    py: Python<'py>,
    table: &RawTable,
    version: u64,
) -> PyResult<Bound<'py, PyList>> {
    let t = table.table.clone();
    let snap = run(py, async move { t.snapshot(At::Version(version)).await })?;
    let out = PyList::empty(py);
    for a in snap.add_actions() {
        let d = PyDict::new(py);
        d.set_item("path", &a.path)?;
        d.set_item("size_bytes", a.size)?;
        d.set_item("modification_time", a.modification_time)?;
        d.set_item("data_change", a.data_change)?;
        let pv: HashMap<String, Option<String>> = a.partition_values.into_iter().collect();
        d.set_item("partition_values", pv)?;
        d.set_item("stats", a.stats)?;
        match a.deletion_vector {
            Some(dv) => {
                let v = PyDict::new(py);
                v.set_item("storage_type", dv.storage_type)?;
                v.set_item("path_or_inline_dv", dv.path_or_inline_dv)?;
                v.set_item("offset", dv.offset)?;
                v.set_item("size_in_bytes", dv.size_in_bytes)?;
                v.set_item("cardinality", dv.cardinality)?;
                d.set_item("deletion_vector", v)?;
            }
            None => d.set_item("deletion_vector", py.None())?,
        }
        let tags: HashMap<String, Option<String>> = a.tags.into_iter().collect();
        d.set_item("tags", tags)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The version application `app_id` last recorded, as of `version`.
#[pyfunction]
fn app_transaction_version(
    py: Python<'_>,
    table: &RawTable,
    version: u64,
    app_id: String,
) -> PyResult<Option<i64>> {
    let t = table.table.clone();
    let snap = run(py, async move { t.snapshot(At::Version(version)).await })?;
    Ok(snap.app_transaction_version(&app_id))
}

/// Files with deletion vectors as a pyarrow reader: `filepath` (the file's URI) and
/// `selection_vector` (one bool per physical row, true = kept).
#[pyfunction]
fn deletion_vectors<'py>(
    py: Python<'py>,
    table: &RawTable,
    version: u64,
) -> PyResult<Bound<'py, PyAny>> {
    use arrow::array::{ArrayRef, BooleanBuilder, LargeStringArray, ListBuilder};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::record_batch::{RecordBatch, RecordBatchIterator, RecordBatchReader};
    use arrow_pyarrow::IntoPyArrow;
    use std::sync::Arc;

    let t = table.table.clone();
    let dvs = run(py, async move {
        t.snapshot(At::Version(version))
            .await?
            .deletion_vectors()
            .await
    })?;
    let root = table.table.uri().trim_end_matches('/').to_string();
    let paths: Vec<String> = dvs.iter().map(|(p, _)| format!("{root}/{p}")).collect();
    let item = Field::new("item", DataType::Boolean, false);
    let mut lists = ListBuilder::new(BooleanBuilder::new()).with_field(Arc::new(item.clone()));
    for (_, keep) in &dvs {
        for k in keep {
            lists.values().append_value(*k);
        }
        lists.append(true);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("filepath", DataType::LargeUtf8, false),
        Field::new("selection_vector", DataType::List(Arc::new(item)), false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(LargeStringArray::from(paths)),
        Arc::new(lists.finish()),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let reader: Box<dyn RecordBatchReader + Send> =
        Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema));
    reader.into_pyarrow(py)
}

/// Removes (or with `dry_run` lists) the live files missing from storage: a dict with
/// `dry_run`, `files_removed` and the commit's metrics when one was made.
#[pyfunction]
#[pyo3(signature = (table, dry_run, commit=None))]
fn repair<'py>(
    py: Python<'py>,
    table: &RawTable,
    dry_run: bool,
    commit: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let t = table.table.clone();
    let options = commit_options(commit)?;
    let (missing, outcome) = run(py, async move { t.repair_with(dry_run, &options).await })?;
    let d = match &outcome {
        Some(c) => outcome_dict(py, c)?,
        None => PyDict::new(py),
    };
    d.set_item("dry_run", dry_run)?;
    d.set_item("files_removed", missing)?;
    Ok(d)
}

/// The commit history, newest first: a list of (version, commitInfo JSON).
#[pyfunction]
#[pyo3(signature = (table, limit=None))]
fn history(py: Python<'_>, table: &RawTable, limit: Option<usize>) -> PyResult<Vec<(u64, String)>> {
    let t = table.table.clone();
    let entries = run(py, async move { t.history(limit).await })?;
    Ok(entries
        .into_iter()
        .map(|e| (e.version, e.commit_info))
        .collect())
}

/// Converts the Parquet files under `uri` into a Delta table in place (CONVERT TO DELTA):
/// `partition_schema` (a pyarrow schema) names the hive partition columns with their types.
#[pyfunction]
#[pyo3(signature = (uri, partition_schema=None, configuration=None, name=None, description=None, storage_options=None, commit=None))]
#[allow(clippy::too_many_arguments)] // deltalake's convert_to_deltalake keywords, one each
fn convert_to_delta(
    py: Python<'_>,
    uri: String,
    partition_schema: Option<&Bound<'_, PyAny>>,
    configuration: Option<HashMap<String, String>>,
    name: Option<String>,
    description: Option<String>,
    storage_options: Option<HashMap<String, String>>,
    commit: Option<&Bound<'_, PyDict>>,
) -> PyResult<RawTable> {
    // deltalake's API: the table deltalake would create (no deletion vectors unless asked for).
    let mut b = delta_rlc::Table::convert(&uri)
        .deltalake_defaults()
        .options(crate::table_options(storage_options, None)?)
        .commit_options(commit_options(commit)?);
    if let Some(s) = partition_schema {
        let schema = arrow::datatypes::Schema::from_pyarrow_bound(s)?;
        b = b.partition_by(schema.fields().iter().map(|f| f.as_ref().clone()));
    }
    for (k, v) in configuration.unwrap_or_default() {
        b = b.property(k, v);
    }
    if let Some(n) = name {
        b = b.name(n);
    }
    if let Some(d) = description {
        b = b.description(d);
    }
    let table = run(py, async move { b.await })?;
    Ok(RawTable { table })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(convert_to_delta, m)?)?;
    m.add_function(wrap_pyfunction!(alter, m)?)?;
    m.add_function(wrap_pyfunction!(restore, m)?)?;
    m.add_function(wrap_pyfunction!(create_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(compact_logs, m)?)?;
    m.add_function(wrap_pyfunction!(cleanup_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(add_actions, m)?)?;
    m.add_function(wrap_pyfunction!(app_transaction_version, m)?)?;
    m.add_function(wrap_pyfunction!(deletion_vectors, m)?)?;
    m.add_function(wrap_pyfunction!(repair, m)?)?;
    m.add_function(wrap_pyfunction!(history, m)?)?;
    Ok(())
}
