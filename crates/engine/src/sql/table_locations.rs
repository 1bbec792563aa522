//! What a location named as a table is on the local disk: a data file read as a table, a folder
//! without a `_delta_log`, or nothing there. Statements that need a Delta table say which.

use crate::error::EngineError;

/// The local path of `location`, when it is on the local disk (no scheme, or `file://`).
fn local_path(location: &str) -> Option<&std::path::Path> {
    (!location.contains("://") || location.starts_with("file://"))
        .then(|| std::path::Path::new(location.strip_prefix("file://").unwrap_or(location)))
}

pub(super) fn is_local_file(location: &str) -> bool {
    local_path(location).is_some_and(|p| p.is_file())
}

/// Why a path named as a table is not one, as precisely as the local disk can say.
pub(super) fn not_a_table(location: &str) -> EngineError {
    if let Some(local) = local_path(location) {
        if local.is_file() {
            return EngineError::invalid(format!(
                "{location} is a file, not a Delta table: read it with read_csv, read_parquet or read_json (or name it with its .csv/.parquet/.json extension)"
            ));
        }
        if local.is_dir() {
            return EngineError::NotFound(format!(
                "{location} is not a Delta table (no _delta_log) or a known file format"
            ));
        }
    }
    EngineError::NotFound(format!("no Delta table at {location}"))
}
