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

use crate::operation_metrics::{OperationMetrics, VacuumEndMetrics, VacuumStartMetrics};
use crate::snapshot::Snapshot;

pub use crate::retention::{
    parse_interval_ms, DEFAULT_RETENTION_MS, MAX_TRANSACTION_MS, MIN_RETENTION_FLOOR_MS,
};

pub fn deleted_file_retention_ms(snapshot: &Snapshot) -> i64 {
    crate::retention::deleted_file_retention_ms(snapshot.property(
        delta_rlc_protocol::table_properties::TableProperty::DeletedFileRetentionDuration,
    ))
}

use std::collections::HashSet;

use delta_rlc_protocol::dv::DvLocation;
use delta_rlc_protocol::table_path::TableRoot;

use futures::{StreamExt, TryStreamExt};
use serde_json::json;

use crate::error::{EngineError, Result};
use crate::table::DeltaTable;
use crate::txn::{Operation, Transaction};

#[derive(Debug, Clone, Default)]
pub struct VacuumResult {
    /// Relative paths deleted (or, in a dry run, that would be deleted).
    pub files: Vec<String>,
    pub dry_run: bool,
    /// The versions of the VACUUM START and VACUUM END commits (none for a dry run).
    pub commits: Vec<u64>,
}

/// Where VACUUM looks for files to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VacuumMode {
    /// List every file under the root (Delta Spark's `VACUUM`, deltalake's `full=True`): files
    /// the log removed and files it never named (left by writers that failed).
    #[default]
    Full,
    /// Only the files the log's tombstones name (Delta Spark's `VACUUM … LITE`, deltalake's
    /// default): no listing, so files the log never named stay.
    Lite,
}

/// What a VACUUM does: the retention (default: the table's), a dry run, the mode, versions whose
/// files stay whatever their age (deltalake's `keep_versions`), and fields for its commitInfo.
#[derive(Debug, Clone, Default)]
pub struct VacuumSpec {
    pub retention_ms: Option<i64>,
    pub dry_run: bool,
    pub mode: VacuumMode,
    pub keep_versions: Vec<u64>,
    pub app_metadata: serde_json::Map<String, serde_json::Value>,
}

fn dv_relative(root: &TableRoot, dv: &delta_rlc_protocol::DvDescriptor) -> Option<String> {
    match dv.location().ok()? {
        DvLocation::Relative { path, .. } => root.resolve(&path).ok(),
        DvLocation::Absolute { uri, .. } => root.resolve(&uri).ok(),
        DvLocation::Inline(_) => None,
    }
}

/// A path VACUUM may delete: relative to the root (a tombstone may name an absolute URI, a file
/// of another table) and not hidden (any segment starting with `_` or `.`, except partition
/// directories `_p=1` and the change data directory, whose files go after the retention like
/// other unreferenced files, as in Delta Spark).
fn deletable(path: &str) -> bool {
    if path.contains("://") || path.starts_with('/') || path.split('/').any(|seg| seg == "..") {
        return false;
    }
    !path.split('/').any(|seg| {
        (seg.starts_with('_') || seg.starts_with('.'))
            && !seg.contains('=')
            && seg != delta_rlc_protocol::actions::CHANGE_DATA_DIR
    })
}

/// Roots of the tables nested below a listed directory: each directory holding a `_delta_log`
/// below the root.
pub fn nested_table_roots<'a>(paths: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut roots: Vec<String> = paths
        .filter_map(|p| {
            let i = p.find("/_delta_log/")?;
            Some(p.get(..i)?.to_string())
        })
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// Whether `path` lies below directory `root`.
pub fn under(path: &str, root: &str) -> bool {
    path.strip_prefix(root)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// The classic entry point: a full VACUUM with a retention and a dry-run flag.
pub async fn vacuum(
    table: &DeltaTable,
    retention_ms: Option<i64>,
    dry_run: bool,
) -> Result<VacuumResult> {
    let spec = VacuumSpec {
        retention_ms,
        dry_run,
        ..VacuumSpec::default()
    };
    vacuum_with(table, &spec).await
}

/// Deletes data and DV files that no live file, unexpired tombstone or kept version references.
/// Two ages decide, because two kinds of file are at stake:
/// - a file a tombstone names was committed and then removed: it goes once the tombstone is
///   older than the retention (readers of older versions are what the retention protects, and
///   the retention check guards that);
/// - a file the log never named (Full mode only) may belong to a writer still in flight: it goes
///   only once it is older than the retention *and* the floor [`MIN_RETENTION_FLOOR_MS`],
///   whatever the retention check says — deleting it could lose a commit.
///
/// A run that deletes is recorded as two commits, VACUUM START (what it will delete) and VACUUM
/// END (what it deleted), as Delta Spark and deltalake record them; neither holds an action, so
/// neither conflicts with any writer. Never touches `_delta_log` (other than the expired log
/// cleanup), hidden paths, or anything outside the root.
pub async fn vacuum_with(table: &DeltaTable, spec: &VacuumSpec) -> Result<VacuumResult> {
    // Taken before the snapshot: every commit the snapshot misses landed after this instant.
    let now = table.env.clock.now_ms();
    let snap = table.snapshot(None).await?;
    let table_retention = deleted_file_retention_ms(&snap);
    let retention = spec.retention_ms.unwrap_or(table_retention);
    if retention < 0 {
        return Err(EngineError::invalid("retention must not be negative"));
    }
    let check = table.conflict.retention_duration_check;
    if retention < table_retention && check {
        return Err(EngineError::invalid(format!(
            "VACUUM retention of {} hours is below the table's delta.deletedFileRetentionDuration ({} hours): readers of older versions could lose files; set retentionDurationCheck=false to allow it (files no version ever named that are younger than {} hours are kept regardless, for writers still in flight)",
            hours(retention),
            hours(table_retention),
            hours(MIN_RETENTION_FLOOR_MS)
        )));
    }
    let tombstone_cutoff = now.saturating_sub(retention);
    let untracked_cutoff = now.saturating_sub(retention.max(MIN_RETENTION_FLOOR_MS));
    let root = &snap.root;
    let mut keep: HashSet<String> = HashSet::new();
    let mut keep_files = |files: &[delta_rlc_protocol::actions::Add]| {
        for f in files {
            keep.insert(f.path.clone());
            if let Some(p) = f
                .deletion_vector
                .as_deref()
                .and_then(|dv| dv_relative(root, dv))
            {
                keep.insert(p);
            }
        }
    };
    keep_files(&snap.files);
    let mut kept_versions: Vec<u64> = spec.keep_versions.clone();
    kept_versions.sort_unstable();
    kept_versions.dedup();
    for v in kept_versions {
        let old = table.snapshot(Some(v)).await?;
        keep_files(&old.files);
    }
    // Tombstones: the unexpired ones keep their files; the expired ones are the candidates, with
    // their sizes (for the START commit's metrics).
    let mut expired: Vec<(String, u64)> = Vec::new();
    for t in &snap.tombstones {
        let dv = t
            .deletion_vector
            .as_deref()
            .and_then(|dv| dv_relative(root, dv));
        if t.deletion_timestamp.unwrap_or(i64::MAX) >= tombstone_cutoff {
            keep.insert(t.path.clone());
            keep.extend(dv);
        } else {
            expired.push((
                t.path.clone(),
                t.size.and_then(|s| u64::try_from(s).ok()).unwrap_or(0),
            ));
            expired.extend(dv.map(|p| (p, 0)));
        }
    }
    let mut victims: Vec<(String, u64)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    match spec.mode {
        VacuumMode::Lite => {
            let named: Vec<(String, u64)> = expired
                .into_iter()
                .filter(|(path, _)| {
                    deletable(path) && !keep.contains(path) && seen.insert(path.clone())
                })
                .collect();
            // A tombstone outlives its file (an earlier VACUUM deleted it, the log keeps the
            // remove until a checkpoint drops it): only files still there are reported, each
            // looked up once, concurrently.
            let present: Vec<Option<(String, u64)>> = futures::stream::iter(named)
                .map(|(path, size)| {
                    let store = table.store.clone();
                    async move {
                        Ok::<_, EngineError>(store.exists(&path).await?.then_some((path, size)))
                    }
                })
                .buffer_unordered(DELETES_IN_FLIGHT)
                .try_collect()
                .await?;
            victims.extend(present.into_iter().flatten());
        }
        VacuumMode::Full => {
            let expired: HashSet<String> = expired.into_iter().map(|(p, _)| p).collect();
            let listing = table.store.list("").await?;
            // Another table below this one (its own `_delta_log`): its files are its own, never
            // this table's to delete, whoever created the two.
            let nested = nested_table_roots(listing.iter().map(|o| o.path.as_str()));
            for obj in listing {
                if !deletable(&obj.path)
                    || keep.contains(&obj.path)
                    || nested.iter().any(|root| under(&obj.path, root))
                {
                    continue;
                }
                let old_enough = match expired.contains(&obj.path) {
                    true => true,
                    false => obj.last_modified_ms < untracked_cutoff,
                };
                if old_enough && seen.insert(obj.path.clone()) {
                    victims.push((obj.path, obj.size));
                }
            }
        }
    }
    victims.sort();
    let files: Vec<String> = victims.iter().map(|(p, _)| p.clone()).collect();
    if spec.dry_run {
        return Ok(VacuumResult {
            files,
            dry_run: true,
            commits: Vec::new(),
        });
    }
    let mut start = Transaction::new(table, Some(snap.clone()), Operation::VacuumStart);
    start.record_when_empty = true;
    for (k, v) in [
        ("retentionCheckEnabled", check.to_string()),
        ("specifiedRetentionMillis", retention.to_string()),
        ("defaultRetentionMillis", table_retention.to_string()),
    ] {
        start.operation_parameters.insert(k.into(), json!(v));
    }
    let bytes: u64 = victims.iter().map(|(_, s)| *s).sum();
    start.metrics = OperationMetrics::VacuumStart(VacuumStartMetrics {
        files_to_delete: files.len() as u64,
        bytes_to_delete: bytes,
    });
    with_caller_metadata(&mut start, spec)?;
    // The deletion window opens before the announcement commits (`vacuum_in_flight`).
    let announced_ms = table.env.clock.now_ms();
    let mut commits = Vec::new();
    let start_version = start.commit().await?.version;
    commits.extend(start_version);
    // A commit between this snapshot and the announcement may have added files back (RESTORE):
    // they stay. A RESTORE after the announcement aborts on it (`conflict/vacuum_restore.rs`).
    if let Some(announced) = start_version {
        let readded = added_between(table, &snap.root, snap.version, announced).await?;
        victims.retain(|(p, _)| !readded.contains(p));
    }
    // Deletes are independent requests, a bounded number in flight at once, and all of them
    // within the deletion window after the announcement (a RESTORE that plans later relies on it).
    let deadline = announced_ms.saturating_add(DELETION_WINDOW_MS);
    let mut deleted: Vec<(String, u64)> = Vec::new();
    let mut status = "COMPLETED";
    let mut failure = None;
    for chunk in victims.chunks(DELETES_IN_FLIGHT) {
        // Each delete looks at the clock just before it is sent: none leaves after the window.
        let done = futures::future::try_join_all(chunk.iter().map(|(p, _)| {
            let (store, p, clock) = (table.store.clone(), p.clone(), table.env.clock.clone());
            async move {
                if clock.now_ms() > deadline {
                    return Ok(false);
                }
                store.delete(&p).await.map(|()| true)
            }
        }))
        .await;
        match done {
            Ok(sent) => {
                deleted.extend(
                    chunk
                        .iter()
                        .zip(&sent)
                        .filter(|(_, sent)| **sent)
                        .map(|(f, _)| f.clone()),
                );
                if sent.iter().any(|s| !s) {
                    status = "INCOMPLETE";
                    break;
                }
            }
            Err(e) => {
                status = "FAILED";
                failure = Some(e);
                break;
            }
        }
    }
    let mut end = Transaction::new(table, Some(snap), Operation::VacuumEnd);
    end.record_when_empty = true;
    end.operation_parameters
        .insert("status".into(), json!(status));
    // Which announcement this ends: only this END closes it (`vacuum_in_flight`).
    if let Some(v) = start_version {
        end.operation_parameters
            .insert(START_VERSION_PARAMETER.into(), json!(v.to_string()));
    }
    let dirs = deleted
        .iter()
        .filter_map(|(p, _)| p.rsplit_once('/').map(|(d, _)| d))
        .collect::<HashSet<_>>()
        .len();
    end.metrics = OperationMetrics::VacuumEnd(VacuumEndMetrics {
        deleted_files: deleted.len() as u64,
        vacuumed_directories: dirs as u64,
    });
    with_caller_metadata(&mut end, spec)?;
    commits.extend(end.commit().await?.version);
    if let Some(e) = failure {
        return Err(e.into());
    }
    // Log cleanup deletes no data file, so it runs after the window has closed.
    let logs = cleanup_expired_logs(table, now).await?;
    let mut files: Vec<String> = deleted.into_iter().map(|(p, _)| p).collect();
    files.extend(logs);
    Ok(VacuumResult {
        files,
        dry_run: false,
        commits,
    })
}

/// Paths (data files and their DV files) that commits `after + 1 .. before` add, read
/// concurrently.
async fn added_between(
    table: &DeltaTable,
    root: &TableRoot,
    after: u64,
    before: u64,
) -> Result<HashSet<String>> {
    use delta_rlc_protocol::actions::{parse_commit, Action};
    use delta_rlc_protocol::log_path::{commit_file_name, LOG_DIR};
    let versions = (after.saturating_add(1))..before;
    let commits: Vec<(u64, bytes::Bytes)> = futures::stream::iter(versions)
        .map(|v| {
            let store = table.store.clone();
            async move {
                let bytes = store
                    .get(&format!("{LOG_DIR}/{}", commit_file_name(v)))
                    .await?;
                Ok::<_, EngineError>((v, bytes))
            }
        })
        .buffer_unordered(DELETES_IN_FLIGHT)
        .try_collect()
        .await?;
    let mut added = HashSet::new();
    for (v, bytes) in commits {
        for a in parse_commit(v, &bytes)? {
            if let Action::Add(add) = a {
                added.insert(root.resolve(&add.path)?);
                added.extend(
                    add.deletion_vector
                        .as_deref()
                        .and_then(|dv| dv_relative(root, dv)),
                );
            }
        }
    }
    Ok(added)
}

/// How long after its announcement (`VACUUM START`) a VACUUM may go on deleting; past it, it stops
/// and records `INCOMPLETE` (the next run goes on).
pub const DELETION_WINDOW_MS: i64 = 3600 * 1000;

/// Clock skew allowed between this machine, other writers and the store (as in
/// `MIN_RETENTION_FLOOR_MS`).
const CLOCK_SKEW_MS: i64 = 3600 * 1000;

/// The `VACUUM END` parameter naming the version of the `VACUUM START` it ends.
pub const START_VERSION_PARAMETER: &str = "startVersion";

/// A VACUUM announced at or before `version` that may still be deleting: the version of a
/// `VACUUM START` whose commit file is younger than the deletion window plus twice the clock skew
/// (older, it has stopped deleting) and that no `VACUUM END` has closed. This engine's END names
/// its START (`startVersion`) and only that END closes it; another engine's START (its END names
/// none) is closed by the first unlinked END after it. Every commit file that young is read
/// (concurrently). A RESTORE calls this after loading its snapshot: it re-adds files such a
/// VACUUM may be deleting, so it must not plan on their existence until the VACUUM has ended.
pub async fn vacuum_in_flight(table: &DeltaTable, version: u64) -> Result<Option<u64>> {
    use delta_rlc_protocol::actions::{parse_commit, Action, CommitInfo};
    use delta_rlc_protocol::log_path::{parse_log_file_name, LogFileKind};
    let since = table
        .env
        .clock
        .now_ms()
        .saturating_sub(DELETION_WINDOW_MS + 2 * CLOCK_SKEW_MS);
    let listing = crate::snapshot::list_log(&table.store).await?;
    let young: Vec<(u64, String)> = listing
        .into_iter()
        .filter(|o| o.last_modified_ms >= since)
        .filter_map(|o| {
            let name = o.path.rsplit('/').next().unwrap_or(&o.path).to_string();
            parse_log_file_name(&name)
                .filter(|f| f.kind == LogFileKind::Commit && f.version <= version)
                .map(|f| (f.version, o.path))
        })
        .collect();
    let mut infos: Vec<(u64, CommitInfo)> = futures::stream::iter(young)
        .map(|(v, path)| {
            let store = table.store.clone();
            async move {
                let bytes = store.get(&path).await?;
                let info = parse_commit(v, &bytes)?.into_iter().find_map(|a| match a {
                    Action::CommitInfo(c) => Some(c),
                    _ => None,
                });
                Ok::<_, EngineError>((v, info.unwrap_or_default()))
            }
        })
        .buffer_unordered(DELETES_IN_FLIGHT)
        .try_collect()
        .await?;
    infos.sort_by_key(|(v, _)| *v);
    // (version, written by this engine) of each START not closed yet.
    let mut open: Vec<(u64, bool)> = Vec::new();
    for (v, info) in infos {
        match info.operation.as_deref().and_then(Operation::parse) {
            Some(Operation::VacuumStart) => {
                let ours = info
                    .engine_info
                    .as_deref()
                    .is_some_and(|e| e.starts_with("delta-rlc/"));
                open.push((v, ours));
            }
            Some(Operation::VacuumEnd) => {
                let link = info
                    .operation_parameters
                    .as_ref()
                    .and_then(|p| p.get(START_VERSION_PARAMETER))
                    .and_then(|s| s.as_str().and_then(|s| s.parse::<u64>().ok()));
                match link {
                    Some(start) => open.retain(|(v, _)| *v != start),
                    None => {
                        if let Some(i) = open.iter().rposition(|(_, ours)| !ours) {
                            open.remove(i);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(open.last().map(|(v, _)| *v))
}

/// The caller's commitInfo fields, checked as every commit checks them, after the operation's own
/// parameters (which win).
fn with_caller_metadata(txn: &mut Transaction, spec: &VacuumSpec) -> Result<()> {
    for (k, v) in &spec.app_metadata {
        txn.set_app_metadata(k, v.clone())?;
    }
    Ok(())
}

/// Deletes one VACUUM keeps in flight at once (each a round trip on an object store).
const DELETES_IN_FLIGHT: usize = 16;

fn hours(ms: i64) -> String {
    let h = ms as f64 / 3_600_000.0;
    if h.fract() == 0.0 {
        format!("{h:.0}")
    } else {
        format!("{h}")
    }
}

pub const DEFAULT_LOG_RETENTION_MS: i64 = 30 * 24 * 3600 * 1000;

/// Metadata cleanup: deletes commit, checkpoint, checksum and log compaction files older than
/// `delta.logRetentionDuration` (default 30 days) that precede the newest checkpoint not newer than
/// the cutoff; that checkpoint and everything after it stay, so every retained version can still be
/// reconstructed. Returns the deleted log paths.
pub async fn cleanup_expired_logs(table: &DeltaTable, now_ms: i64) -> Result<Vec<String>> {
    use delta_rlc_protocol::log_path::{parse_log_file_name, LogFileKind};
    let snap = table.snapshot(None).await?;
    let retention = snap
        .property(delta_rlc_protocol::table_properties::TableProperty::LogRetentionDuration)
        .and_then(parse_interval_ms)
        .unwrap_or(DEFAULT_LOG_RETENTION_MS);
    // Never a commit file younger than the floor, whatever the retention: a writer in flight
    // (open at most `MAX_TRANSACTION_MS`) may still have to read it, and with the file gone its
    // put-if-absent at that version would succeed and rewrite history.
    let cutoff = now_ms.saturating_sub(retention.max(MIN_RETENTION_FLOOR_MS));
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
        let old = o.last_modified_ms < cutoff;
        // A compaction starting at or before the kept checkpoint is never read again: a reader
        // starts from that checkpoint and uses only compactions beginning after it.
        let expired = match f.kind {
            LogFileKind::Compaction { .. } => f.version <= keep_from && old,
            _ => f.version < keep_from && old,
        };
        let removable = matches!(
            f.kind,
            LogFileKind::Commit
                | LogFileKind::Checkpoint
                | LogFileKind::MultiPartCheckpoint { .. }
                | LogFileKind::Crc
                | LogFileKind::Compaction { .. }
        );
        if expired && removable {
            table.store.delete(&o.path).await?;
            deleted.push(o.path.clone());
        }
    }
    Ok(deleted)
}
