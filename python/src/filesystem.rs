//! `RawFileStore`: the objects under a location as files, for `delta_rlc.fs.DeltaStorageHandler`
//! (deltalake's pyarrow file system). Every call blocks with the GIL released.

use std::collections::{BTreeMap, HashMap};

use delta_rlc::ObjectFiles;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::run;

/// A file as Python sees it here: (path, size, last modified in ns).
type FileRow = (String, u64, i64);

#[pyclass(module = "delta_rlc._internal")]
pub(crate) struct RawFileStore {
    files: ObjectFiles,
}

#[pymethods]
impl RawFileStore {
    #[new]
    #[pyo3(signature = (uri, options=None))]
    fn new(uri: &str, options: Option<HashMap<String, String>>) -> PyResult<Self> {
        let options: BTreeMap<String, String> = options.unwrap_or_default().into_iter().collect();
        let files = ObjectFiles::open(uri, &options)
            .map_err(|e| Python::attach(|py| crate::to_py_err(py, e)))?;
        Ok(RawFileStore { files })
    }

    fn root_uri(&self) -> String {
        self.files.root_uri().to_string()
    }

    /// (size, last modified ns) of the file at `path`, or None.
    fn file(&self, py: Python<'_>, path: String) -> PyResult<Option<(u64, i64)>> {
        let files = self.files.clone();
        let found = run(py, async move { files.file(&path).await })?;
        Ok(found.map(|f| (f.size, f.modified_ns)))
    }

    /// The files and sub-directories directly under `dir`.
    fn list_dir(&self, py: Python<'_>, dir: String) -> PyResult<(Vec<FileRow>, Vec<String>)> {
        let files = self.files.clone();
        let listing = run(py, async move { files.list_dir(&dir).await })?;
        let rows = listing
            .files
            .into_iter()
            .map(|f| (f.path, f.size, f.modified_ns))
            .collect();
        Ok((rows, listing.dirs))
    }

    /// Every file under `dir`, at any depth.
    fn list_all(&self, py: Python<'_>, dir: String) -> PyResult<Vec<FileRow>> {
        let files = self.files.clone();
        let all = run(py, async move { files.list_all(&dir).await })?;
        Ok(all
            .into_iter()
            .map(|f| (f.path, f.size, f.modified_ns))
            .collect())
    }

    fn read_range<'py>(
        &self,
        py: Python<'py>,
        path: String,
        start: u64,
        end: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let files = self.files.clone();
        let bytes = run(py, async move { files.read_range(&path, start, end).await })?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn write(&self, py: Python<'_>, path: String, data: Vec<u8>) -> PyResult<()> {
        let files = self.files.clone();
        run(py, async move { files.write(&path, data.into()).await })
    }

    fn delete(&self, py: Python<'_>, path: String) -> PyResult<()> {
        let files = self.files.clone();
        run(py, async move { files.delete(&path).await })
    }

    fn copy(&self, py: Python<'_>, src: String, dst: String) -> PyResult<()> {
        let files = self.files.clone();
        run(py, async move { files.copy(&src, &dst).await })
    }

    fn rename(&self, py: Python<'_>, src: String, dst: String) -> PyResult<()> {
        let files = self.files.clone();
        run(py, async move { files.rename(&src, &dst).await })
    }
}
