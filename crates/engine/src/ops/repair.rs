//! REPAIR (deltalake's FSCK): removes the live files whose data file is missing from storage, so
//! the table reads again after files were deleted outside Delta. Each missing file's remove is
//! dataChange=true (its rows are gone). The files are existence-checked concurrently. A concurrent
//! commit that removed the same file makes this abort (delete/delete), as any two removes of one
//! file.

use std::sync::Arc;

use futures::{stream, StreamExt, TryStreamExt};

use crate::error::Result;
use crate::txn::Transaction;

/// How many existence checks are in flight at once.
const CONCURRENT_CHECKS: usize = 32;

/// Stages removes for the missing files; returns their logged paths (nothing staged when none).
pub async fn repair_txn(mut txn: Transaction) -> Result<(Transaction, Vec<String>)> {
    let snapshot = Arc::clone(txn.snapshot()?);
    snapshot.protocol.check_writable()?;
    txn.operation = crate::txn::Operation::Fsck;
    // Owned (index, path) pairs: the checks hold no borrow of the snapshot across awaits.
    let mut targets = Vec::with_capacity(snapshot.files.len());
    for (i, f) in snapshot.files.iter().enumerate() {
        targets.push((i, snapshot.root.resolve(&f.path)?));
    }
    let store = txn.table.store.clone();
    let checks: Vec<(usize, bool)> = stream::iter(targets)
        .map(|(i, rel)| {
            let store = store.clone();
            async move { Ok::<_, crate::error::EngineError>((i, store.exists(&rel).await?)) }
        })
        .buffered(CONCURRENT_CHECKS)
        .try_collect()
        .await?;
    let now = txn.table.env.clock.now_ms();
    let mut missing = Vec::new();
    for (i, exists) in checks {
        let Some(f) = snapshot.files.get(i) else {
            continue;
        };
        if !exists {
            txn.read_set
                .read_file(&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()));
            txn.remove_file(f.to_remove(now, true));
            missing.push(f.path.clone());
        }
    }
    txn.change_data.file_actions_are_changes = true;
    txn.metrics = crate::operation_metrics::OperationMetrics::Repair(
        crate::operation_metrics::RepairMetrics {
            files_removed: missing.len() as u64,
        },
    );
    Ok((txn, missing))
}
