//! Warnings for the person running delta-rlc: conditions that are not errors but put their data at
//! risk. Each is emitted once per process and subject (a table, say), through `tracing` and a sink
//! the front end installs (the CLI prints `warning: …` on stderr); a library caller without a sink
//! gets only the `tracing` event.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use crate::snapshot::Snapshot;

static SINK: OnceLock<fn(&str)> = OnceLock::new();

fn warned() -> &'static Mutex<HashSet<String>> {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    WARNED.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Installs the process's warning sink (first call wins).
pub fn set_warning_sink(sink: fn(&str)) {
    let _ = SINK.set(sink);
}

/// Emits `message` unless a warning with `key` was already emitted by this process.
pub fn warn_once(key: &str, message: &str) {
    let first = warned()
        .lock()
        .map(|mut w| w.insert(key.to_string()))
        .unwrap_or(false);
    if first {
        tracing::warn!("{message}");
        if let Some(sink) = SINK.get() {
            sink(message);
        }
    }
}

/// Engines whose commits on S3 are not put-if-absent: Delta Spark's S3 log stores (single-driver
/// locking, or a DynamoDB table delta-rlc does not consult) do not interlock with our commits.
const NOT_PUT_IF_ABSENT_ON_S3: &[&str] = &["Apache-Spark"];

/// On an S3 table, warns when the loaded log shows commits by an engine that does not commit with
/// put-if-absent there: concurrent commits by it and by delta-rlc can overwrite each other.
pub fn check_commit_interlock(root_uri: &str, snapshot: &Snapshot) {
    let on_s3 = root_uri.starts_with("s3://") || root_uri.starts_with("s3a://");
    if !on_s3 {
        return;
    }
    for engine in NOT_PUT_IF_ABSENT_ON_S3 {
        if snapshot.writer_engines.contains(*engine) {
            warn_once(
                &format!("interlock:{root_uri}:{engine}"),
                &format!(
                    "{root_uri}: the log has commits by {engine} (Delta Spark), whose S3 log stores do not commit with put-if-absent; do not let it write this table while delta-rlc writes it (see docs/design.md, Mixed engines)"
                ),
            );
        }
    }
}
