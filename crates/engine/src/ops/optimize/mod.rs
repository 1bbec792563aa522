//! OPTIMIZE: bin-packing compaction (and Z-order / clustering rewrites).
//!
//! Compaction: per partition, runs of small files (below the target size) adjacent in write order
//! are packed greedily into bins up to the target size; a bin is rewritten when it holds at least `minFileCount` files or one file
//! with a deletion vector. Each bin becomes exactly one output file, written source by source in
//! order with DVs applied, so every source lands as one contiguous run: the capture records, on each
//! source's `remove`, `compactedInto` = [output] and `compactionInfo` = [{rowOffsetInTarget,
//! sourceNumPhysicalRecords}] (Databricks' layout), which lets Case 4 remap concurrent deletions.
//! ZORDER BY / clustering OPTIMIZE reorders rows along a Z-order curve; its outputs carry no
//! compaction tags (rows move, so Case 4 cannot remap them). An explicit ZORDER BY tags each
//! output `ZCUBE_ZORDER_BY` with the columns (physical, as a JSON array) and rewrites every file of
//! a partition not so tagged or carrying a deletion vector, one file included: a file ordered by
//! other columns is not ordered by these. Files already z-ordered by the same columns are skipped.
//! On a clustered table (no explicit ZORDER BY) clustering is incremental, as Delta's liquid
//! clustering: its outputs carry `clusteringProvider` and a `clusteredBy` tag naming the columns
//! (physical), and such a file is settled while the table's clustering columns are the same. Only
//! the unsettled files are reordered; a settled file with a deletion vector is purged alone as a
//! tagged compaction (its row order, hence its clustering, kept: Case 4 applies); a settled file
//! without one is left alone. So a second OPTIMIZE with nothing new commits nothing, and a table
//! larger than one output is not rewritten, nor read into memory, on every run.
//! Both sides are dataChange=false; row ids and row commit versions are materialized so they stay
//! stable; an OPTIMIZE with nothing to do commits nothing.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::{concat_batches, take_record_batch};
use datafusion::logical_expr::Expr;
use delta_rlc_protocol::actions::{Add, PartitionValues};
use serde_json::json;

use self::layout::{
    clustered_by, clustering_physical_columns, zorder_permutation, zorder_tag_value, zordered_by,
    CLUSTERED_BY_TAG, CLUSTERING_PROVIDER, ZORDER_BY_TAG,
};
use super::dml::without_row_index;
use crate::error::{EngineError, Result};
use crate::operation_metrics::{OperationMetrics, OptimizeMetrics};
use crate::read_set::split_predicate;
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::{candidate_files, read_file, FileReadOptions};
use crate::snapshot::Snapshot;
use crate::txn::Transaction;
use crate::write::{encode_log_path, FileWriter, DEFAULT_TARGET_FILE_SIZE};

mod layout;

pub(crate) use layout::clustering_columns;

#[derive(Debug, Clone, Default)]
pub struct OptimizeSpec {
    pub predicate: Option<Expr>,
    pub zorder_by: Vec<String>,
    pub target_file_size: Option<u64>,
    pub min_file_count: Option<usize>,
    /// Record composition tags on compaction tombstones (Case 4). Benchmarks turn it off to
    /// measure its overhead.
    pub skip_capture: bool,
    /// Commit the bins rewritten so far once this long has passed since the last commit
    /// (deltalake's `min_commit_interval`): a long OPTIMIZE then lands in several commits, each
    /// with its own bins, and `Some(0)` gives every bin a commit of its own. `None`: one commit.
    pub min_commit_interval_ms: Option<u64>,
}

/// Rows per batch handed to the writer by a reordering bin (the granularity of its output cuts).
const REORDER_CHUNK_ROWS: usize = 65_536;

/// How a bin is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinKind {
    /// Sources written one after another with DVs applied, into one output: a pure compaction,
    /// tagged with each source's run (Case 4).
    Compact,
    /// Rows reordered along the Z-order curve of the ZORDER / clustering columns: never tagged.
    Reorder,
}

fn partition_key(pv: &PartitionValues) -> String {
    serde_json::to_string(pv).unwrap_or_default()
}

/// OPTIMIZE in one transaction: [`plan_optimize`], then every bin into `txn`.
pub async fn optimize_txn(txn: Transaction, spec: OptimizeSpec) -> Result<Transaction> {
    let snapshot = Arc::clone(txn.snapshot()?);
    let mut plan = plan_optimize(
        snapshot,
        OptimizeSpec {
            min_commit_interval_ms: None,
            ..spec
        },
    )?;
    match plan.next_transaction(txn).await? {
        Some(txn) => Ok(txn),
        None => Err(EngineError::Internal(
            "an OPTIMIZE plan gave no first transaction".into(),
        )),
    }
}

/// OPTIMIZE planned from its read snapshot: the bins to rewrite, in order, and how. Every
/// transaction it fills reads that snapshot, so a later one's commit checks the earlier ones
/// (and any concurrent writer) as winners, as for any other writer: their files are disjoint.
#[derive(Debug)]
pub struct OptimizePlan {
    snapshot: Arc<Snapshot>,
    spec: OptimizeSpec,
    /// ZORDER BY columns as the table spells them (the clustering columns when incremental).
    zorder: Vec<String>,
    zorder_tag: String,
    /// Incremental clustering: the table's own clustering, not an explicit ZORDER BY.
    incremental: bool,
    clustered_by_columns: String,
    target: u64,
    bins: Vec<(Vec<Add>, BinKind)>,
    next_bin: usize,
    transactions: usize,
}

/// Checks the statement and groups the snapshot's files into bins (no I/O).
pub fn plan_optimize(snapshot: Arc<Snapshot>, spec: OptimizeSpec) -> Result<OptimizePlan> {
    if let Some(p) = &spec.predicate {
        let only_partition = p
            .column_refs()
            .iter()
            .all(|c| snapshot.metadata.partition_columns.contains(&c.name));
        if !only_partition {
            return Err(EngineError::invalid(
                "OPTIMIZE … WHERE accepts only partition-column predicates",
            ));
        }
        use datafusion::common::tree_node::TreeNode;
        let subquery = p.exists(|e| {
            Ok(matches!(
                e,
                Expr::ScalarSubquery(_) | Expr::InSubquery(_) | Expr::Exists(_)
            ))
        })?;
        if subquery {
            return Err(EngineError::invalid(
                "OPTIMIZE … WHERE takes a predicate over partition values, without subqueries",
            ));
        }
    }
    // Column names as the table spells them (Spark resolves them without regard to case).
    let mut zorder: Vec<String> = spec
        .zorder_by
        .iter()
        .map(|c| {
            let found = snapshot.schema.field(c).or_else(|| {
                let mut same = snapshot
                    .schema
                    .fields
                    .iter()
                    .filter(|f| crate::spark::ident_case::same_ignoring_case(&f.name, c));
                match (same.next(), same.next()) {
                    (Some(f), None) => Some(f),
                    _ => None,
                }
            });
            found
                .map(|f| f.name.clone())
                .ok_or_else(|| EngineError::invalid(format!("ZORDER BY: unknown column {c}")))
        })
        .collect::<Result<_>>()?;
    let clustered = clustering_columns(&snapshot);
    let incremental = zorder.is_empty() && !clustered.is_empty();
    if incremental {
        zorder = clustered;
    }
    let clustered_by_columns =
        serde_json::to_string(&clustering_physical_columns(&snapshot)).unwrap_or_default();
    let zorder_tag = zorder_tag_value(&snapshot, &zorder)?;
    for c in &zorder {
        if snapshot.metadata.partition_columns.contains(c) {
            return Err(EngineError::invalid(format!(
                "ZORDER BY partition column {c} is pointless"
            )));
        }
        if snapshot.schema.field(c).is_none() {
            return Err(EngineError::invalid(format!(
                "ZORDER BY: unknown column {c}"
            )));
        }
    }
    // A file size is a long in the log (`delta.targetFileSize`, `add.size`): a target outside
    // it is refused, from every front end alike.
    if let Some(t) = spec.target_file_size {
        if t == 0 || t > i64::MAX as u64 {
            return Err(EngineError::invalid(format!(
                "target_file_size must be between 1 and {} bytes, got {t}",
                i64::MAX
            )));
        }
    }
    let target = spec
        .target_file_size
        .or_else(|| {
            snapshot
                .property(delta_rlc_protocol::table_properties::TableProperty::TargetFileSize)
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(DEFAULT_TARGET_FILE_SIZE);
    let min_files = spec.min_file_count.unwrap_or(2);
    let mut by_partition: Vec<(String, Vec<&Add>)> = Vec::new();
    // The files whose partition values satisfy the predicate, evaluated exactly (pruning would
    // keep every file it cannot reason about, and OPTIMIZE would rewrite partitions it excludes).
    let files = match &spec.predicate {
        Some(p) => crate::scan::files_matching_partition_predicate(&snapshot, p)?,
        None => candidate_files(&snapshot, None)?,
    };
    for f in files {
        let k = partition_key(&f.partition_values);
        match by_partition.iter_mut().find(|(pk, _)| *pk == k) {
            Some((_, v)) => v.push(f),
            None => by_partition.push((k, vec![f])),
        }
    }
    let mut bins: Vec<(Vec<&Add>, BinKind)> = Vec::new();
    for (_, mut files) in by_partition {
        if incremental {
            let (settled, fresh): (Vec<&Add>, Vec<&Add>) = files
                .into_iter()
                .partition(|f| clustered_by(f, &clustered_by_columns));
            if !fresh.is_empty() {
                bins.push((fresh, BinKind::Reorder));
            }
            for f in settled {
                if f.deletion_vector.is_some() {
                    bins.push((vec![f], BinKind::Compact));
                }
            }
            continue;
        }
        if !zorder.is_empty() {
            // A partition is settled only when every file is already z-ordered by these columns
            // and has no deletion vector; otherwise its unsettled files are reordered together
            // (one file ordered by other columns included).
            let fresh: Vec<&Add> = files
                .into_iter()
                .filter(|f| f.deletion_vector.is_some() || !zordered_by(f, &zorder_tag))
                .collect();
            if !fresh.is_empty() {
                bins.push((fresh, BinKind::Reorder));
            }
            continue;
        }
        // Locality: bins are runs of files adjacent in the order they were written (modification
        // time, then path), so a compacted file holds rows written together and the newest
        // appends are packed with each other and the newest older file, not with the oldest (as
        // deltalake 1.6's `preserveLocality` planner). A file at or above the target size, with
        // no DV, ends the run: packing across it would join rows written apart.
        files.sort_by(|a, b| (a.modification_time, &a.path).cmp(&(b.modification_time, &b.path)));
        let mut bin: Vec<&Add> = Vec::new();
        let mut size = 0u64;
        for f in files {
            let small = (f.size as u64) < target || f.deletion_vector.is_some();
            if !bin.is_empty() && (!small || size + f.size as u64 > target) {
                bins.push((std::mem::take(&mut bin), BinKind::Compact));
                size = 0;
            }
            if small {
                size += f.size as u64;
                bin.push(f);
            }
        }
        if !bin.is_empty() {
            bins.push((bin, BinKind::Compact));
        }
    }
    // A compaction needs enough files to be worth it; a reorder bin already holds only files
    // not yet ordered by its columns, so even one is rewritten.
    bins.retain(|(b, kind)| {
        *kind == BinKind::Reorder
            || b.len() >= min_files
            || b.iter().any(|f| f.deletion_vector.is_some())
    });
    let bins = bins
        .into_iter()
        .map(|(b, kind)| (b.into_iter().cloned().collect(), kind))
        .collect();
    Ok(OptimizePlan {
        snapshot,
        spec,
        zorder,
        zorder_tag,
        incremental,
        clustered_by_columns,
        target,
        bins,
        next_bin: 0,
        transactions: 0,
    })
}

/// What one bin became: the tombstones of its sources and its outputs.
struct RewrittenBin {
    removes: Vec<delta_rlc_protocol::actions::Remove>,
    adds: Vec<Add>,
}

impl OptimizePlan {
    /// Whether every bin has been rewritten into a transaction.
    pub fn is_done(&self) -> bool {
        self.next_bin >= self.bins.len()
    }

    /// Rewrites the next bins into `txn` (which must read the plan's snapshot): all that remain,
    /// or, with a commit interval, those done before the interval passed. The first call always
    /// returns a transaction (one with nothing staged when there is nothing to do, which commits
    /// nothing); later calls return `None` once every bin is done.
    pub async fn next_transaction(&mut self, mut txn: Transaction) -> Result<Option<Transaction>> {
        if self.transactions > 0 && self.next_bin >= self.bins.len() {
            return Ok(None);
        }
        match txn.read_snapshot.as_ref() {
            Some(s) if s.version == self.snapshot.version => {}
            _ => {
                return Err(EngineError::Internal(
                    "an OPTIMIZE transaction must read its plan's snapshot".into(),
                ))
            }
        }
        self.transactions += 1;
        let start = txn.table.env.clock.now_ms();
        txn.operation = crate::txn::Operation::Optimize;
        txn.operation_parameters.insert(
            "predicate".into(),
            json!(serde_json::to_string(&vec![self
                .spec
                .predicate
                .as_ref()
                .map(|p| p.to_string())])
            .unwrap_or_default()),
        );
        txn.operation_parameters.insert(
            "zOrderBy".into(),
            json!(serde_json::to_string(&self.zorder).unwrap_or_default()),
        );
        // What OPTIMIZE reads: its partition predicate and the files it rewrites. It copies rows
        // unchanged (ordering by columns moves rows, it computes no value).
        txn.read_set.used_columns([]);
        txn.read_set.names_columns([]);
        match &self.spec.predicate {
            Some(p) => txn.read_set.add_predicate(split_predicate(
                p,
                &self.snapshot.metadata.partition_columns,
                p.to_string(),
            )),
            None => txn.read_set.add_predicate(crate::read_set::ReadPredicate {
                partition: None,
                data: None,
                text: "true".into(),
                exact_keys: None,
            }),
        }
        let (mut removes, mut adds, mut bins_done) = (Vec::new(), Vec::new(), 0usize);
        let mut max_bin_files = 0usize;
        while self.next_bin < self.bins.len() {
            let (bin, kind) = &self.bins[self.next_bin];
            max_bin_files = max_bin_files.max(bin.len());
            for f in bin {
                txn.read_set
                    .read_file(&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()));
            }
            let done = self.rewrite_bin(&txn, bin, *kind).await?;
            removes.extend(done.removes);
            adds.extend(done.adds);
            self.next_bin += 1;
            bins_done += 1;
            let elapsed = (txn.table.env.clock.now_ms() - start).max(0) as u64;
            if self
                .spec
                .min_commit_interval_ms
                .is_some_and(|iv| elapsed >= iv)
            {
                break;
            }
        }
        let files_removed = removes.len() as u64;
        let bytes_removed: i64 = removes.iter().map(|r| r.size.unwrap_or(0)).sum();
        let (files_added, bytes_added) =
            (adds.len() as u64, adds.iter().map(|a| a.size).sum::<i64>());
        // Spark's `partitionsOptimized`: the partitions whose files were rewritten.
        let partitions_optimized = removes
            .iter()
            .map(|r| &r.partition_values)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        for r in removes {
            txn.remove_file(r);
        }
        for a in adds {
            txn.add_file(a);
        }
        let elapsed = txn.table.env.clock.now_ms() - start;
        txn.metrics = OperationMetrics::Optimize(OptimizeMetrics {
            files_added,
            files_removed,
            bytes_added,
            bytes_removed,
            bins: bins_done as u64,
            reordered: self.bins.iter().any(|(_, k)| *k == BinKind::Reorder),
            max_bin_span_files: max_bin_files as u64,
            partitions_optimized: partitions_optimized as u64,
            execution_time_ms: elapsed,
        });
        txn.affected_rows = Some(files_removed);
        Ok(Some(txn))
    }

    /// Reads one bin's files (with their DVs applied) and writes its outputs.
    async fn rewrite_bin(
        &self,
        txn: &Transaction,
        bin: &[Add],
        kind: BinKind,
    ) -> Result<RewrittenBin> {
        let snapshot = &self.snapshot;
        let now = txn.table.env.clock.now_ms();
        let extra: Vec<arrow::datatypes::Field> = row_tracking_columns(snapshot)
            .map(|(i, v)| {
                vec![
                    arrow::datatypes::Field::new(i, arrow::datatypes::DataType::Int64, true),
                    arrow::datatypes::Field::new(v, arrow::datatypes::DataType::Int64, true),
                ]
            })
            .unwrap_or_default();
        let read_opts = FileReadOptions {
            apply_dv: true,
            with_row_index: true,
            extra_columns: extra,
        };
        // A compaction bin becomes exactly one output; a reordered bin is cut at the target size.
        let writer = FileWriter {
            target_file_size: match kind {
                BinKind::Compact => u64::MAX,
                BinKind::Reorder => self.target,
            },
            parquet: txn.table.parquet.clone(),
            ..FileWriter::for_table(
                &txn.table.store,
                &txn.table.env,
                &snapshot.schema,
                &snapshot.metadata,
            )?
        };
        let mut parts: Vec<RecordBatch> = Vec::new();
        let mut runs: Vec<(&Add, u64, i64)> = Vec::new(); // (source, rowOffsetInTarget, physical records)
        let mut offset = 0u64;
        // The bin's files and DVs are fetched in one stage of concurrent requests (as far as the
        // statement's cache budget allows), then decoded `parallelism` at a time in the bin's
        // order: on an object store one round trip for the bin, not one per file. The bin is
        // held whole in any case (it becomes one output).
        crate::dv_io::prefetch_files(&txn.table.store, &snapshot.root, bin.iter()).await;
        use futures::{StreamExt, TryStreamExt};
        // Each read owns what it uses (a future borrowing across the stream would not be Send).
        let reads: Vec<_> = bin
            .iter()
            .map(|f| {
                let (store, snap, opts) = (
                    txn.table.store.clone(),
                    Arc::clone(snapshot),
                    read_opts.clone(),
                );
                let f: Add = f.clone();
                async move {
                    let batches = read_file(&store, &snap, &f, &opts).await?;
                    let dv = crate::scan::vanished::snapshot_dv(&store, &snap, &f).await?;
                    Ok::<_, EngineError>((batches, dv.len()))
                }
            })
            .collect();
        let loaded: Vec<(Vec<RecordBatch>, u64)> = futures::stream::iter(reads)
            .buffered(txn.table.env.parallelism.max(1))
            .try_collect()
            .await?;
        for (f, (batches, deleted)) in bin.iter().zip(loaded) {
            let live: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
            let physical = live + deleted;
            runs.push((f, offset, physical as i64));
            offset += live;
            for b in batches {
                let b = stabilize_row_tracking(snapshot, f, &b, false)?;
                parts.push(without_row_index(&b)?);
            }
        }
        let adds = match parts.first() {
            None => Vec::new(),
            Some(first) => {
                let all = concat_batches(&first.schema(), &parts)?;
                drop(parts);
                match kind {
                    BinKind::Compact => writer.write(&[all], false).await?,
                    BinKind::Reorder => {
                        // Taken in chunks that own their buffers, so the writer can cut outputs
                        // at the target size (it cuts between batches, sized in memory).
                        let order = zorder_permutation(&all, &self.zorder)?;
                        let chunks = (0..order.len())
                            .step_by(REORDER_CHUNK_ROWS)
                            .map(|start| {
                                let len = REORDER_CHUNK_ROWS.min(order.len() - start);
                                take_record_batch(&all, &order.slice(start, len))
                            })
                            .collect::<std::result::Result<Vec<_>, _>>()?;
                        drop(all);
                        writer.write(&chunks, false).await?
                    }
                }
            }
        };
        // On a clustered table every output is clustered: a reordered bin by the current
        // columns, a purged settled file as its source was (its rows keep their order).
        let adds: Vec<Add> = adds
            .into_iter()
            .map(|mut a| {
                if kind == BinKind::Reorder && !self.incremental {
                    a.tags
                        .get_or_insert_with(Default::default)
                        .insert(ZORDER_BY_TAG.into(), Some(self.zorder_tag.clone()));
                }
                if self.incremental {
                    a.clustering_provider = Some(CLUSTERING_PROVIDER.into());
                    a.tags.get_or_insert_with(Default::default).insert(
                        CLUSTERED_BY_TAG.into(),
                        Some(self.clustered_by_columns.clone()),
                    );
                }
                a
            })
            .collect();
        if kind == BinKind::Compact && adds.len() > 1 {
            return Err(EngineError::Internal(
                "a compaction bin produced more than one output".into(),
            ));
        }
        let mut removes = Vec::with_capacity(runs.len());
        for (src, off, physical) in runs {
            let mut rm = src.to_remove(now, false);
            rm.stats = None;
            if kind == BinKind::Compact && !self.spec.skip_capture {
                if let Some(out) = adds.first() {
                    let mut tags = rm.tags.clone().unwrap_or_default();
                    tags.insert(
                        "compactedInto".into(),
                        Some(
                            serde_json::to_string(&vec![encode_log_path(&out.path)])
                                .unwrap_or_default(),
                        ),
                    );
                    tags.insert(
                        "compactionInfo".into(),
                        Some(
                            json!([{"rowOffsetInTarget": off, "sourceNumPhysicalRecords": physical, "sourceDeletionVector": src.deletion_vector}])
                                .to_string(),
                        ),
                    );
                    rm.tags = Some(tags);
                }
            }
            removes.push(rm);
        }
        Ok(RewrittenBin { removes, adds })
    }
}
