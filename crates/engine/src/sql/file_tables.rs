//! Data files as tables: `read_parquet('path or glob')`, `read_csv('…', header => true,
//! delimiter => ';')`, `read_json('…')` (newline-delimited), and a quoted path in FROM ending in
//! `.parquet`, `.csv`, `.json` or `.ndjson`. The rewrite replaces each by an identifier; the
//! statement's context registers a DataFusion listing table for it (schema inferred from the files).

use std::sync::Arc;

use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::TableProvider;
use datafusion::prelude::SessionContext;

use crate::error::{EngineError, Result};

/// The latest snapshot of the Delta table at `location`, when a file reference (`'./t.parquet'`,
/// `read_parquet('dir')`) names a folder holding a `_delta_log`; None for a glob, or where no
/// table is (one listing).
pub(super) async fn delta_table_behind(
    session: &super::session::SqlSession,
    location: &str,
) -> Result<Option<Arc<crate::snapshot::Snapshot>>> {
    if location.contains(['*', '?', '[']) {
        return Ok(None);
    }
    let Ok(table) = session.table(location) else {
        return Ok(None);
    };
    table.latest_if_exists().await
}

/// How a file reference is read.
#[derive(Debug, Clone, PartialEq)]
pub enum FileSource {
    Parquet,
    Csv {
        header: bool,
        delimiter: u8,
    },
    /// Newline-delimited JSON.
    Json,
}

impl FileSource {
    /// The format a path's extension names, if any.
    pub fn from_extension(path: &str) -> Option<FileSource> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".parquet") {
            Some(FileSource::Parquet)
        } else if lower.ends_with(".csv") {
            Some(FileSource::Csv {
                header: true,
                delimiter: b',',
            })
        } else if lower.ends_with(".json") || lower.ends_with(".ndjson") {
            Some(FileSource::Json)
        } else {
            None
        }
    }

    /// The format of a `read_*` function, with its named options (`header`, `delimiter`).
    pub fn from_function(name: &str, options: &[(String, String)]) -> Result<Option<FileSource>> {
        let mut src = match name.to_ascii_lowercase().as_str() {
            "read_parquet" => FileSource::Parquet,
            "read_csv" => FileSource::Csv {
                header: true,
                delimiter: b',',
            },
            "read_json" | "read_ndjson" => FileSource::Json,
            _ => return Ok(None),
        };
        for (k, v) in options {
            match (&mut src, k.to_ascii_lowercase().as_str()) {
                (FileSource::Csv { header, .. }, "header") => {
                    *header = match v.to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        other => {
                            return Err(EngineError::invalid(format!(
                                "{name}: header must be true or false, got {other}"
                            )))
                        }
                    }
                }
                (FileSource::Csv { delimiter, .. }, "delimiter" | "delim" | "sep") => {
                    *delimiter = match v.as_bytes() {
                        [b] => *b,
                        _ => {
                            return Err(EngineError::invalid(format!(
                                "{name}: delimiter must be one character, got {v:?}"
                            )))
                        }
                    }
                }
                _ => return Err(EngineError::invalid(format!("{name}: unknown option {k}"))),
            }
        }
        Ok(Some(src))
    }
}

/// A listing table over `path` (a file, a directory or a glob) in format `src`.
pub async fn file_table(
    ctx: &SessionContext,
    path: &str,
    src: &FileSource,
) -> Result<Arc<dyn TableProvider>> {
    let local = !path.contains("://");
    if local && !path.contains(['*', '?', '[']) && !std::path::Path::new(path).exists() {
        return Err(EngineError::NotFound(format!("no file at {path}")));
    }
    let url = ListingTableUrl::parse(path)?;
    // s3:// paths read through the same credentials and endpoint as Delta tables on S3.
    if let Some(rest) = path.strip_prefix("s3://") {
        let bucket = rest.split('/').next().unwrap_or_default();
        let store = delta_rlc_storage::TableStore::open(&format!("s3://{bucket}"))?;
        let base = url::Url::parse(&format!("s3://{bucket}"))
            .map_err(|e| EngineError::invalid(format!("{path}: {e}")))?;
        ctx.register_object_store(&base, store.object_store());
    }
    let format: Arc<dyn FileFormat> = match src {
        FileSource::Parquet => Arc::new(ParquetFormat::default()),
        FileSource::Csv { header, delimiter } => Arc::new(
            CsvFormat::default()
                .with_has_header(*header)
                .with_delimiter(*delimiter),
        ),
        FileSource::Json => Arc::new(JsonFormat::default()),
    };
    // Any extension: the function (or the path's own extension) already named the format.
    let opts = ListingOptions::new(format).with_file_extension("");
    let schema = opts.infer_schema(&ctx.state(), &url).await?;
    let config = ListingTableConfig::new(url)
        .with_listing_options(opts)
        .with_schema(schema);
    Ok(Arc::new(ListingTable::try_new(config)?))
}
