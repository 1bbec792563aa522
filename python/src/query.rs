//! `QueryBuilder`: one query over Delta tables registered by name, streamed to pyarrow.

use arrow::record_batch::RecordBatchReader;
use arrow_pyarrow::IntoPyArrow;
use delta_rlc::Table;
use pyo3::prelude::*;

use crate::{run, BlockingReader, RawTable};

/// Runs `statement` over `tables` ((name, table, version or None: the latest)); a statement that
/// is not a query is refused before anything runs.
#[pyfunction]
fn query<'py>(
    py: Python<'py>,
    statement: String,
    tables: Vec<(String, PyRef<'py, RawTable>, Option<u64>)>,
) -> PyResult<Bound<'py, PyAny>> {
    let handles: Vec<(String, Table)> = tables
        .iter()
        .map(|(name, raw, version)| {
            let t = match version {
                Some(v) => raw.table.at_version(*v),
                None => raw.table.clone(),
            };
            (name.clone(), t)
        })
        .collect();
    let stream = run(py, async move {
        let named: Vec<(&str, &Table)> = handles.iter().map(|(n, t)| (n.as_str(), t)).collect();
        delta_rlc::query(&statement, &named).await
    })?;
    let reader: Box<dyn RecordBatchReader + Send> = Box::new(BlockingReader {
        schema: stream.schema(),
        stream,
    });
    reader.into_pyarrow(py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(query, m)?)
}
