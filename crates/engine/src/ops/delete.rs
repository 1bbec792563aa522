//! DELETE FROM t [WHERE p]. Without a predicate, or with a partition-only predicate, whole files are
//! removed without reading them; otherwise matched rows go into each file's deletion vector (or the
//! file is rewritten when DVs are off, or removed when every live row matches).

use std::sync::Arc;

use datafusion::logical_expr::Expr;
use serde_json::json;

use super::dml::{
    eval_mask, match_candidates, stage_dv_removals, stage_row_removal, DmlMetrics, ExprContext,
    NewRows, REWRITE_CHUNK_BYTES,
};
use crate::error::Result;
use crate::read_set::split_predicate;
use crate::scan::candidate_files;
use crate::snapshot::Snapshot;
use crate::txn::change_data::{self, ChangeType};
use crate::txn::Transaction;
use arrow::compute::filter_record_batch;

/// Records the matched rows of `matches` as deleted (change data feed), decoding only those rows,
/// a few files at a time.
async fn record_deleted_rows(
    txn: &mut Transaction,
    snapshot: &Arc<Snapshot>,
    matches: &[crate::scan::FileMatch],
) -> Result<()> {
    if !change_data::enabled(txn) {
        return Ok(());
    }
    let opts = super::dml::dml_read_options(snapshot);
    let parallelism = txn.table.env.parallelism.max(1);
    for part in matches.chunks(parallelism * 4) {
        let rows =
            crate::scan::read_matched_rows(&txn.table.store, snapshot, &opts, part, parallelism)
                .await?;
        for batch in rows.iter().flatten() {
            change_data::record(txn, ChangeType::Delete, batch).await?;
        }
    }
    Ok(())
}

/// The live rows of a file removed without reading it: numRecords less its DV's cardinality, or
/// None when the file has no stats (the count is then unknown, and not reported as 0).
fn logical_rows(add: &delta_rlc_protocol::actions::Add) -> Option<u64> {
    let n = add.num_records()?;
    let d = add
        .deletion_vector
        .as_ref()
        .map(|d| d.cardinality)
        .unwrap_or(0);
    u64::try_from(n.saturating_sub(d)).ok()
}

/// Counts `add`'s live rows as deleted, or marks the count unknown.
fn count_removed(metrics: &mut DmlMetrics, add: &delta_rlc_protocol::actions::Add) {
    match logical_rows(add) {
        Some(n) => metrics.deleted_rows += n,
        None => metrics.deleted_rows_unknown = true,
    }
}

pub async fn delete_txn(mut txn: Transaction, predicate: Option<Expr>) -> Result<Transaction> {
    // A DELETE evaluates nothing but its predicate (a read predicate); rows it rewrites are copied.
    txn.read_set.used_columns([]);
    // Its names reach the target's existing columns only (one table, no `*`).
    txn.read_set.names_columns([]);
    let snapshot: Arc<Snapshot> = Arc::clone(txn.snapshot()?);
    let start = txn.table.env.clock.now_ms();
    txn.operation = crate::txn::Operation::Delete;
    txn.operation_parameters.insert(
        "predicate".into(),
        json!(serde_json::to_string(&vec![predicate
            .as_ref()
            .map(|p| p.to_string())
            .unwrap_or_else(|| "true".into())])
        .unwrap_or_default()),
    );
    let mut metrics = DmlMetrics::default();
    let now = txn.table.env.clock.now_ms();
    let partition_only = predicate.as_ref().is_some_and(|p| {
        let cols = p.column_refs();
        !cols.is_empty()
            && cols
                .iter()
                .all(|c| snapshot.metadata.partition_columns.contains(&c.name))
    });
    match &predicate {
        None => {
            txn.read_set.read_whole_table();
            for f in &snapshot.files {
                count_removed(&mut metrics, f);
                metrics.removed_files += 1;
                txn.remove_file(f.to_remove(now, true));
            }
        }
        Some(p) if partition_only => {
            txn.read_set.add_predicate(split_predicate(
                p,
                &snapshot.metadata.partition_columns,
                p.to_string(),
            ));
            for f in crate::scan::files_matching_partition_predicate(&snapshot, p)? {
                txn.read_set
                    .read_file(&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()));
                count_removed(&mut metrics, f);
                metrics.removed_files += 1;
                txn.remove_file(f.to_remove(now, true));
            }
        }
        Some(p) => {
            // With DVs only the predicate's verdict is needed: decode just its columns, several
            // files at once; nothing else of the rows is read.
            let matched = match snapshot.deletion_vectors_enabled() {
                true => match_candidates(&mut txn, &snapshot, p, false).await?,
                false => None,
            };
            if let Some(matches) = matched {
                metrics.scanned_files += matches.len() as u64;
                metrics.deleted_rows += matches.iter().map(|m| m.matched.len()).sum::<u64>();
                record_deleted_rows(&mut txn, &snapshot, &matches).await?;
                stage_dv_removals(&mut txn, &snapshot, &matches, &mut metrics).await?;
            } else {
                // Otherwise full rows are read; files one at a time so memory stays bounded by the
                // largest file.
                // (Change data needs the deleted rows whole.)
                let projection = (snapshot.deletion_vectors_enabled()
                    && !change_data::enabled(&txn))
                .then(|| {
                    p.column_refs()
                        .into_iter()
                        .map(|c| c.name.clone())
                        .collect::<Vec<_>>()
                });
                txn.read_set.add_predicate(split_predicate(
                    p,
                    &snapshot.metadata.partition_columns,
                    p.to_string(),
                ));
                let ectx = ExprContext::new(&snapshot, None)?;
                let phys = ectx.physical(p)?;
                let opts = super::dml::dml_read_options(&snapshot);
                // DVs off, the survivors of the files rewritten share files (one per chunk).
                let mut survivors = NewRows::default();
                for add in candidate_files(&snapshot, Some(p))? {
                    txn.read_set.read_file(
                        &add.path,
                        add.deletion_vector.as_ref().map(|d| d.unique_id()),
                    );
                    metrics.scanned_files += 1;
                    let Some(scan) = super::dml::scan_file(
                        &txn.table.store,
                        &snapshot,
                        add,
                        &opts,
                        projection.as_deref(),
                    )
                    .await?
                    else {
                        continue;
                    };
                    let mask = eval_mask(&phys, &scan.table_rows(ectx.n_cols())?)?;
                    metrics.deleted_rows += mask.true_count() as u64;
                    if change_data::enabled(&txn) {
                        let deleted = filter_record_batch(&scan.rows, &mask)?;
                        change_data::record(&mut txn, ChangeType::Delete, &deleted).await?;
                    }
                    stage_row_removal(
                        &mut txn,
                        &snapshot,
                        &scan,
                        &mask,
                        &mut survivors,
                        &mut metrics,
                    )
                    .await?;
                    if survivors.bytes() >= REWRITE_CHUNK_BYTES {
                        survivors.write(&mut txn, &snapshot, &mut metrics).await?;
                    }
                }
                survivors.write(&mut txn, &snapshot, &mut metrics).await?;
            }
        }
    }
    txn.affected_rows = (!metrics.deleted_rows_unknown).then_some(metrics.deleted_rows);
    let elapsed = txn.table.env.clock.now_ms() - start;
    metrics.execution_time_ms = elapsed;
    txn.metrics = crate::operation_metrics::OperationMetrics::Dml(metrics);
    Ok(txn)
}
