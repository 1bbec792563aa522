//! Parquet settings a caller chooses for the data files an operation writes (deltalake's
//! `WriterProperties`), applied over the engine's defaults (`write/encoding.rs`). Kept apart from
//! the writer so the table handle can carry them without importing the write layer; imports
//! nothing of the engine.

use parquet::basic::{Compression, Encoding};
use parquet::file::properties::WriterPropertiesBuilder;
use parquet::schema::types::ColumnPath;

/// Parquet settings a caller chose for the data files it writes (deltalake's
/// `WriterProperties`), applied over this module's defaults. Column settings are keyed by the
/// file's column name (the physical name under column mapping). Values are checked by whoever
/// builds this (the parquet builder panics on a zero size, a dictionary encoding given as the
/// encoding, or a bloom filter probability outside (0, 1)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParquetSettings {
    pub compression: Option<Compression>,
    pub max_row_group_size: Option<usize>,
    pub data_page_size_limit: Option<usize>,
    pub dictionary_page_size_limit: Option<usize>,
    pub data_page_row_count_limit: Option<usize>,
    pub write_batch_size: Option<usize>,
    pub statistics_truncate_length: Option<usize>,
    /// Settings for every column, then per column.
    pub default_column: ColumnSettings,
    pub columns: Vec<(String, ColumnSettings)>,
}

/// One column's Parquet settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnSettings {
    pub dictionary_enabled: Option<bool>,
    pub encoding: Option<Encoding>,
    pub statistics_enabled: Option<parquet::file::properties::EnabledStatistics>,
    /// (false-positive probability, distinct values) when bloom filters are on.
    pub bloom_filter: Option<(Option<f64>, Option<u64>)>,
}

impl ParquetSettings {
    pub(crate) fn apply(&self, mut b: WriterPropertiesBuilder) -> WriterPropertiesBuilder {
        if let Some(c) = self.compression {
            b = b.set_compression(c);
        }
        if let Some(n) = self.max_row_group_size {
            b = b.set_max_row_group_row_count(Some(n));
        }
        if let Some(n) = self.data_page_size_limit {
            b = b.set_data_page_size_limit(n);
        }
        if let Some(n) = self.dictionary_page_size_limit {
            b = b.set_dictionary_page_size_limit(n);
        }
        if let Some(n) = self.data_page_row_count_limit {
            b = b.set_data_page_row_count_limit(n);
        }
        if let Some(n) = self.write_batch_size {
            b = b.set_write_batch_size(n);
        }
        if let Some(n) = self.statistics_truncate_length {
            b = b.set_statistics_truncate_length(Some(n));
        }
        let d = &self.default_column;
        if let Some(e) = d.dictionary_enabled {
            b = b.set_dictionary_enabled(e);
        }
        if let Some(e) = d.encoding {
            b = b.set_encoding(e);
        }
        if let Some(s) = d.statistics_enabled {
            b = b.set_statistics_enabled(s);
        }
        if let Some((fpp, ndv)) = d.bloom_filter {
            b = b.set_bloom_filter_enabled(true);
            if let Some(f) = fpp {
                b = b.set_bloom_filter_fpp(f);
            }
            if let Some(n) = ndv {
                b = b.set_bloom_filter_max_ndv(n);
            }
        }
        for (name, c) in &self.columns {
            let path = ColumnPath::from(name.as_str());
            // An encoding named for a column is the one its pages get: with a dictionary on,
            // Parquet would use it only as the fallback, so naming one turns the column's
            // dictionary off unless the caller turns it on too (deltalake refuses the pair).
            match (c.dictionary_enabled, c.encoding) {
                (Some(on), _) => b = b.set_column_dictionary_enabled(path.clone(), on),
                (None, Some(_)) => b = b.set_column_dictionary_enabled(path.clone(), false),
                (None, None) => {}
            }
            if let Some(e) = c.encoding {
                b = b.set_column_encoding(path.clone(), e);
            }
            if let Some(s) = c.statistics_enabled {
                b = b.set_column_statistics_enabled(path.clone(), s);
            }
            if let Some((fpp, ndv)) = c.bloom_filter {
                b = b.set_column_bloom_filter_enabled(path.clone(), true);
                if let Some(f) = fpp {
                    b = b.set_column_bloom_filter_fpp(path.clone(), f);
                }
                if let Some(n) = ndv {
                    b = b.set_column_bloom_filter_max_ndv(path.clone(), n);
                }
            }
        }
        b
    }
}
