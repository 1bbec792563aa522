//! `QueryBuilder`: one query over Delta tables registered by name, streamed to pyarrow.

use arrow::record_batch::RecordBatchReader;
use arrow_pyarrow::IntoPyArrow;
use delta_rlc::Table;
use pyo3::prelude::*;

use crate::{run, BlockingReader, RawTable};

/// Runs `statement` over `tables` ((name, table, version or None: the latest)) after the
/// session definitions `definitions` (earlier `CREATE EXTERNAL TABLE` / `CREATE VIEW`
/// statements); any other statement that is not a query is refused before anything runs.
/// Returns the rows and whether `statement` was itself a definition.
#[pyfunction]
#[pyo3(signature = (statement, tables, definitions = Vec::new()))]
fn query<'py>(
    py: Python<'py>,
    statement: String,
    tables: Vec<(String, PyRef<'py, RawTable>, Option<u64>)>,
    definitions: Vec<String>,
) -> PyResult<(Bound<'py, PyAny>, bool)> {
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
    let (stream, defined) = run(py, async move {
        let named: Vec<(&str, &Table)> = handles.iter().map(|(n, t)| (n.as_str(), t)).collect();
        delta_rlc::query_after(&statement, &named, &definitions).await
    })?;
    let reader: Box<dyn RecordBatchReader + Send> = Box::new(BlockingReader {
        schema: stream.schema(),
        stream,
    });
    Ok((reader.into_pyarrow(py)?, defined))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(query, m)?)
}
