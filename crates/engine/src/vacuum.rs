//! VACUUM: delete data and DV files no version inside the retention window references, and change
//! data files (`_change_data/`) older than the retention.
//!
//! Safety for concurrent writers: a transaction writes its data and DV files after it starts and
//! may commit only within [`MAX_TRANSACTION_MS`] of its start (the commit loop refuses later). So a
//! file an uncommitted or just-committed writer needs is younger than that, and VACUUM never deletes
//! a file younger than [`MIN_RETENTION_FLOOR_MS`] (the limit plus an hour for clock skew between
//! this machine and the store), measured from a time taken *before* its snapshot is loaded: a
//! commit its snapshot does not show landed after that time, so its files are within the floor.
//! Retention below the table's `delta.deletedFileRetentionDuration` (default 168 h) is refused
//! unless `retentionDurationCheck=false`; the floor applies even then.
//! Only regular files under the root are listed and deleted: symbolic links are never followed
//! (the store refuses them), so nothing outside the root is touched.

use crate::snapshot::Snapshot;

pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

pub use crate::retention::{parse_interval_ms, MAX_TRANSACTION_MS, MIN_RETENTION_FLOOR_MS};

pub fn deleted_file_retention_ms(snapshot: &Snapshot) -> i64 {
    snapshot
        .config("delta.deletedFileRetentionDuration")
        .and_then(parse_interval_ms)
        .unwrap_or(DEFAULT_RETENTION_MS)
}

use std::collections::HashSet;

use delta_rlc_protocol::dv::DvLocation;
use delta_rlc_protocol::table_path::TableRoot;

use crate::error::{EngineError, Result};
use crate::table::DeltaTable;

#[derive(Debug, Clone, Default)]
pub struct VacuumResult {
    /// Relative paths deleted (or, in a dry run, that would be deleted).
    pub files: Vec<String>,
    pub dry_run: bool,
}

fn dv_relative(root: &TableRoot, dv: &delta_rlc_protocol::DvDescriptor) -> Option<String> {
    match dv.location().ok()? {
        DvLocation::Relative { path, .. } => root.resolve(&path).ok(),
        DvLocation::Absolute { uri, .. } => root.resolve(&uri).ok(),
        DvLocation::Inline(_) => None,
    }
}

/// Deletes data and DV files that no live file or unexpired tombstone references and that are older
/// than the retention. Never touches `_delta_log`, hidden paths, or anything outside the root (the
/// listing is of the root only, and every path is re-checked by the store).
pub async fn vacuum(
    table: &DeltaTable,
    retention_ms: Option<i64>,
    dry_run: bool,
) -> Result<VacuumResult> {
    // Taken before the snapshot: every commit the snapshot misses landed after this instant.
    let now = table.env.clock.now_ms();
    let snap = table.snapshot(None).await?;
    let table_retention = deleted_file_retention_ms(&snap);
    let retention = retention_ms.unwrap_or(table_retention);
    if retention < 0 {
        return Err(EngineError::invalid("retention must not be negative"));
    }
    if retention < table_retention && table.conflict.retention_duration_check {
        return Err(EngineError::invalid(format!(
            "VACUUM retention of {} hours is below the table's delta.deletedFileRetentionDuration ({} hours): readers of older versions could lose files; set retentionDurationCheck=false to allow it (files younger than {} hours are kept regardless, for writers still in flight)",
            hours(retention),
            hours(table_retention),
            hours(MIN_RETENTION_FLOOR_MS)
        )));
    }
    let cutoff = now.saturating_sub(retention.max(MIN_RETENTION_FLOOR_MS));
    let root = &snap.root;
    let mut keep: HashSet<String> = HashSet::new();
    for f in &snap.files {
        keep.insert(f.path.clone());
        if let Some(dv) = &f.deletion_vector {
            if let Some(p) = dv_relative(root, dv) {
                keep.insert(p);
            }
        }
    }
    for t in &snap.tombstones {
        if t.deletion_timestamp.unwrap_or(i64::MAX) >= cutoff {
            keep.insert(t.path.clone());
            if let Some(dv) = &t.deletion_vector {
                if let Some(p) = dv_relative(root, dv) {
                    keep.insert(p);
                }
            }
        }
    }
    let mut victims = Vec::new();
    for obj in table.store.list("").await? {
        // Hidden: any segment starting with '_' or '.', except partition directories (`_p=1`)
        // and the change data directory, whose files (never live, so never in `keep`) go after
        // the retention like other unreferenced files, as in Delta Spark.
        let hidden = obj.path.split('/').any(|seg| {
            (seg.starts_with('_') || seg.starts_with('.'))
                && !seg.contains('=')
                && seg != delta_rlc_protocol::actions::CHANGE_DATA_DIR
        });
        if hidden {
            continue;
        }
        if keep.contains(&obj.path) || obj.last_modified_ms >= cutoff {
            continue;
        }
        victims.push(obj.path);
    }
    if !dry_run {
        for v in &victims {
            table.store.delete(v).await?;
        }
        victims.extend(cleanup_expired_logs(table, now).await?);
    }
    Ok(VacuumResult {
        files: victims,
        dry_run,
    })
}

fn hours(ms: i64) -> String {
    let h = ms as f64 / 3_600_000.0;
    if h.fract() == 0.0 {
        format!("{h:.0}")
    } else {
        format!("{h}")
    }
}

pub const DEFAULT_LOG_RETENTION_MS: i64 = 30 * 24 * 3600 * 1000;

/// Metadata cleanup: deletes commit, checkpoint and checksum files older than
/// `delta.logRetentionDuration` (default 30 days) that precede the newest checkpoint not newer than
/// the cutoff; that checkpoint and everything after it stay, so every retained version can still be
/// reconstructed. Returns the deleted log paths.
pub async fn cleanup_expired_logs(table: &DeltaTable, now_ms: i64) -> Result<Vec<String>> {
    use delta_rlc_protocol::log_path::{parse_log_file_name, LogFileKind};
    let snap = table.snapshot(None).await?;
    let retention = snap
        .config("delta.logRetentionDuration")
        .and_then(parse_interval_ms)
        .unwrap_or(DEFAULT_LOG_RETENTION_MS);
    let cutoff = now_ms.saturating_sub(retention);
    let listing = crate::snapshot::list_log(&table.store).await?;
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    // The newest complete classic checkpoint whose file is older than the cutoff.
    let keep_from = listing
        .iter()
        .filter(|o| o.last_modified_ms < cutoff)
        .filter_map(|o| {
            parse_log_file_name(&name(&o.path))
                .filter(|f| f.kind == LogFileKind::Checkpoint)
                .map(|f| f.version)
        })
        .max();
    let Some(keep_from) = keep_from else {
        return Ok(Vec::new());
    };
    let mut deleted = Vec::new();
    for o in &listing {
        let Some(f) = parse_log_file_name(&name(&o.path)) else {
            continue;
        };
        let expired = f.version < keep_from && o.last_modified_ms < cutoff;
        let removable = matches!(
            f.kind,
            LogFileKind::Commit
                | LogFileKind::Checkpoint
                | LogFileKind::MultiPartCheckpoint { .. }
                | LogFileKind::Crc
        );
        if expired && removable {
            table.store.delete(&o.path).await?;
            deleted.push(o.path.clone());
        }
    }
    Ok(deleted)
}
