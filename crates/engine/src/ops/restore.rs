//! RESTORE: the table's live files as of an earlier version, committed as a new version.
//!
//! The files live now but not then are removed, the files live then but not now are added back
//! (a file's identity is its path and deletion vector, so a file whose DV changed is swapped for
//! its earlier state), both with dataChange=true; their change data is exactly these actions.
//! The earlier metadata comes back (always staged, so a concurrent metadata change aborts the
//! restore); the protocol stays (a restore never removes a
//! feature a reader or writer relies on now). A file to add back that no longer exists (VACUUM
//! deleted it) fails the restore unless missing files are explicitly ignored.
//!
//! A restore reads the whole table: a concurrent commit that changes any live file makes it retry
//! or abort; a concurrent blind append survives it (WriteSerializable, as in Delta).

use std::collections::BTreeSet;
use std::sync::Arc;

use delta_rlc_protocol::actions::Action;
use delta_rlc_protocol::dv::DvLocation;
use futures::{StreamExt, TryStreamExt};
use serde_json::json;

use crate::conflict_error::{AbortReason, ConflictKind};
use crate::error::{EngineError, Result};
use crate::read_set::ReadPredicate;
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

/// What to restore.
#[derive(Debug, Clone)]
pub struct RestoreSpec {
    /// The earlier state.
    pub target: Arc<Snapshot>,
    /// Add back the files that still exist and skip the ones VACUUM deleted (default: fail).
    pub ignore_missing_files: bool,
}

/// Stages the restore on `txn`'s snapshot (the latest).
pub async fn restore_txn(mut txn: Transaction, spec: RestoreSpec) -> Result<Transaction> {
    let current = Arc::clone(txn.snapshot()?);
    current.protocol.check_writable()?;
    let target = spec.target;
    if target.version >= current.version {
        return Err(EngineError::invalid(format!(
            "RESTORE: version {} is not earlier than the current version {}",
            target.version, current.version
        )));
    }
    // The earlier files may rely on features the table no longer lists (a dropped deletion
    // vector feature: readers would ignore the DVs and deleted rows would come back). Restoring
    // then is refused rather than guessed at.
    let missing: Vec<String> = target
        .protocol
        .writer_feature_set()
        .into_iter()
        .chain(target.protocol.reader_feature_set())
        .filter(|f| {
            !current.protocol.has_writer_feature(f) && !current.protocol.has_reader_feature(f)
        })
        .collect();
    if !missing.is_empty() {
        return Err(EngineError::Unsupported(format!(
            "RESTORE to version {}: it needs table features the table no longer has ({})",
            target.version,
            missing.join(", ")
        )));
    }
    txn.operation = crate::txn::Operation::Restore;
    txn.operation_parameters
        .insert("version".into(), json!(target.version.to_string()));
    // A whole-table read: only proofs that a winner's file holds no new rows apply to it.
    txn.read_set.read_whole_table();
    txn.read_set.add_predicate(ReadPredicate {
        partition: None,
        data: None,
        text: "true".into(),
        exact_keys: None,
    });
    let now_keys: BTreeSet<_> = current.files.iter().map(|f| f.file_key()).collect();
    let then_keys: BTreeSet<_> = target.files.iter().map(|f| f.file_key()).collect();
    let now = txn.table.env.clock.now_ms();
    let (mut removed, mut removed_bytes) = (0u64, 0i64);
    for f in &current.files {
        txn.read_set
            .read_file(&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()));
        if !then_keys.contains(&f.file_key()) {
            txn.remove_file(f.to_remove(now, true));
            removed += 1;
            removed_bytes += f.size;
        }
    }
    // Files are checked below to exist; a VACUUM announced in this snapshot that may still be
    // deleting would make that check worthless (and one announced later aborts this commit:
    // `conflict/vacuum_restore.rs`).
    if let Some(announced) = crate::vacuum::vacuum_in_flight(&txn.table, current.version).await? {
        return Err(EngineError::Conflict(Box::new(
            crate::conflict_error::ConflictError {
                kind: ConflictKind::ConcurrentDeleteRead,
                reason: AbortReason::of_kind(ConflictKind::ConcurrentDeleteRead),
                winning_version: announced,
                winning_operation: crate::txn::Operation::VacuumStart.to_string(),
                files: Vec::new(),
                predicate: Some(
                    "a VACUUM is still deleting: RESTORE once it has ended (VACUUM END)".into(),
                ),
                tier: None,
                reconcile_failures: Vec::new(),
                statement_runs: 1,
            },
        )));
    }
    txn.read_set.restores_files = true;
    let (mut restored, mut restored_bytes) = (0u64, 0i64);
    let back: Vec<delta_rlc_protocol::actions::Add> = target
        .files
        .iter()
        .filter(|f| !now_keys.contains(&f.file_key()))
        .cloned()
        .collect();
    // One stage of lookups, a bounded number in flight, answers in the files' order.
    let present: Vec<bool> = futures::stream::iter(back.clone())
        .map(|f| {
            let (store, target) = (txn.table.store.clone(), Arc::clone(&target));
            async move { still_exists(&store, &target, &f).await }
        })
        .buffered(EXISTENCE_CHECKS_IN_FLIGHT)
        .try_collect()
        .await?;
    for (f, exists) in back.into_iter().zip(present) {
        if !exists {
            if spec.ignore_missing_files {
                continue;
            }
            return Err(EngineError::invalid(format!(
                "RESTORE: {} of version {} no longer exists (deleted by VACUUM?); restore a later version or ignore missing files",
                f.path, target.version
            )));
        }
        restored += 1;
        restored_bytes += f.size;
        let mut add = f;
        add.data_change = true;
        txn.add_file(add);
    }
    // The earlier metadata is always staged, even when it equals the read snapshot's: run after a
    // concurrent metadata change, the restore would put the earlier metadata back, so such a
    // winner must abort it (a restore is never re-applied on it: it names no change). An
    // unchanged metadata action costs concurrent writers nothing (they adopt it).
    let mut metadata = target.metadata.clone();
    // The table keeps its identity; only schema, partitioning and properties go back.
    metadata.id = current.metadata.id.clone();
    // Identity values already handed out stay handed out: each identity column keeps the
    // higher of the two high-water marks, so no id is generated twice.
    metadata.schema_string = keep_identity_marks(&target.schema, &current.schema)?;
    txn.actions.push(Action::Metadata(metadata));
    txn.change_data.file_actions_are_changes = true;
    let after: usize = current.files.len() + restored as usize - removed as usize;
    txn.metrics = crate::operation_metrics::OperationMetrics::Restore(
        crate::operation_metrics::RestoreMetrics {
            removed_files: removed as i64,
            restored_files: restored as i64,
            removed_bytes,
            restored_bytes,
            files_after: after as i64,
        },
    );
    Ok(txn)
}

/// Existence checks of files to add back in flight at once.
const EXISTENCE_CHECKS_IN_FLIGHT: usize = 16;

/// Whether a file of `target` (and its deletion vector file) is still in the store.
async fn still_exists(
    store: &delta_rlc_storage::TableStore,
    target: &Snapshot,
    f: &delta_rlc_protocol::actions::Add,
) -> Result<bool> {
    if !store.exists(&target.root.resolve(&f.path)?).await? {
        return Ok(false);
    }
    let dv_path = match f
        .deletion_vector
        .as_ref()
        .map(|d| d.location())
        .transpose()?
    {
        Some(DvLocation::Relative { path, .. }) => Some(target.root.resolve(&path)?),
        Some(DvLocation::Absolute { uri, .. }) => Some(target.root.resolve(&uri)?),
        _ => None,
    };
    match dv_path {
        Some(p) => Ok(store.exists(&p).await?),
        None => Ok(true),
    }
}

/// `restored`'s schema JSON with each identity column's `delta.identity.highWaterMark` raised to
/// `current`'s where that is higher (the mark only grows).
fn keep_identity_marks(
    restored: &delta_rlc_protocol::schema::StructType,
    current: &delta_rlc_protocol::schema::StructType,
) -> Result<String> {
    const MARK: &str = "delta.identity.highWaterMark";
    let mut schema = restored.clone();
    for f in &mut schema.fields {
        let now = current
            .field(&f.name)
            .and_then(|c| c.metadata.get(MARK))
            .and_then(|v| v.as_i64());
        let then = f.metadata.get(MARK).and_then(|v| v.as_i64());
        let step = f
            .metadata
            .get("delta.identity.step")
            .and_then(|v| v.as_i64())
            .unwrap_or(1);
        if let Some(now) = now {
            let keep = match then {
                // The mark moves in the step's direction.
                Some(then) if step < 0 => then.min(now),
                Some(then) => then.max(now),
                None => now,
            };
            f.metadata.insert(MARK.into(), serde_json::json!(keep));
        }
    }
    Ok(schema.to_schema_string())
}
