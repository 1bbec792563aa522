//! deltalake's `WriterProperties` (as the dict `delta_rlc.properties` builds) into the library's
//! `WriterSettings`; the library checks the values.

use delta_rlc::{ColumnWriterSettings, WriterSettings};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn column(d: &Bound<'_, PyDict>) -> PyResult<ColumnWriterSettings> {
    let mut c = ColumnWriterSettings::default();
    if let Some(v) = d.get_item("dictionary_enabled")? {
        c.dictionary_enabled = v.extract()?;
    }
    if let Some(v) = d.get_item("encoding")? {
        c.encoding = v.extract()?;
    }
    if let Some(v) = d.get_item("statistics_enabled")? {
        c.statistics_enabled = v.extract()?;
    }
    if let Some(v) = d.get_item("bloom_filter")? {
        c.bloom_filter = v.extract()?;
    }
    Ok(c)
}

/// The settings of a `writer` dict (None: the defaults).
pub(crate) fn writer_settings(d: Option<&Bound<'_, PyDict>>) -> PyResult<Option<WriterSettings>> {
    let Some(d) = d else {
        return Ok(None);
    };
    let mut s = WriterSettings::default();
    let int = |key: &str| -> PyResult<Option<usize>> {
        match d.get_item(key)? {
            Some(v) => v.extract(),
            None => Ok(None),
        }
    };
    s.max_row_group_size = int("max_row_group_size")?;
    s.data_page_size_limit = int("data_page_size_limit")?;
    s.dictionary_page_size_limit = int("dictionary_page_size_limit")?;
    s.data_page_row_count_limit = int("data_page_row_count_limit")?;
    s.write_batch_size = int("write_batch_size")?;
    s.statistics_truncate_length = int("statistics_truncate_length")?;
    if let Some(v) = d.get_item("compression")? {
        s.compression = v.extract()?;
    }
    if let Some(v) = d.get_item("default_column")? {
        if !v.is_none() {
            s.default_column = column(v.cast()?)?;
        }
    }
    if let Some(v) = d.get_item("columns")? {
        if !v.is_none() {
            let cols = v.cast::<PyDict>()?;
            for (name, c) in cols.iter() {
                s.columns.insert(name.extract()?, column(c.cast()?)?);
            }
        }
    }
    Ok(Some(s))
}
