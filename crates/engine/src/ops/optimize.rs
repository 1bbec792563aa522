//! OPTIMIZE: bin-packing compaction (and Z-order / clustering rewrites).
//!
//! Compaction: per partition, small files (below the target size) are packed greedily into bins up
//! to the target size; a bin is rewritten when it holds at least `minFileCount` files or one file
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

use arrow::array::{Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch};
use datafusion::logical_expr::Expr;
use delta_rlc_protocol::actions::{Add, PartitionValues};
use serde_json::json;

use super::dml::without_row_index;
use crate::dv_io::load_file_dv;
use crate::error::{EngineError, Result};
use crate::read_set::split_predicate;
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::{candidate_files, read_file, FileReadOptions};
use crate::snapshot::Snapshot;
use crate::txn::Transaction;
use crate::write::{encode_log_path, FileWriter, DEFAULT_TARGET_FILE_SIZE};

#[derive(Debug, Clone, Default)]
pub struct OptimizeSpec {
    pub predicate: Option<Expr>,
    pub zorder_by: Vec<String>,
    pub target_file_size: Option<u64>,
    pub min_file_count: Option<usize>,
    /// Record composition tags on compaction tombstones (Case 4). Benchmarks turn it off to
    /// measure its overhead.
    pub skip_capture: bool,
}

/// The table's clustering columns by logical name (the domain metadata holds physical paths).
pub(crate) fn clustering_columns(snapshot: &Snapshot) -> Vec<String> {
    let mode = snapshot.column_mapping_mode();
    clustering_physical_columns(snapshot)
        .into_iter()
        .map(|p| {
            snapshot
                .schema
                .fields
                .iter()
                .find(|f| {
                    delta_rlc_protocol::column_mapping::physical_name(f, mode).is_ok_and(|n| n == p)
                })
                .map_or(p.clone(), |f| f.name.clone())
        })
        .collect()
}

fn clustering_physical_columns(snapshot: &Snapshot) -> Vec<String> {
    let Some(d) = snapshot.domains.get("delta.clustering") else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&d.configuration) else {
        return Vec::new();
    };
    v.get("clusteringColumns")
        .and_then(|c| c.as_array())
        .map(|cols| {
            cols.iter()
                .filter_map(|c| match c {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Array(p) => {
                        p.last().and_then(|x| x.as_str()).map(str::to_string)
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Z-order permutation of `batch` over `cols`: per column, the dense rank of each value (nulls
/// first) scaled to 16 bits, bits interleaved; ties keep their input order.
fn zorder_permutation(batch: &RecordBatch, cols: &[String]) -> Result<UInt32Array> {
    let n = batch.num_rows();
    let mut ranks: Vec<Vec<u64>> = Vec::new();
    for c in cols {
        let arr = batch
            .column_by_name(c)
            .ok_or_else(|| EngineError::invalid(format!("ZORDER BY: unknown column {c}")))?;
        let sorted = arrow::compute::sort_to_indices(arr, None, None)?;
        let mut rank = vec![0u64; n];
        let mut r = 0u64;
        for (pos, idx) in sorted.values().iter().enumerate() {
            if pos > 0 {
                let prev = sorted.value(pos - 1) as usize;
                let same = arrow::compute::kernels::cmp::eq(
                    &arr.slice(prev, 1),
                    &arr.slice(*idx as usize, 1),
                )?;
                let eq = (arr.is_null(prev) && arr.is_null(*idx as usize))
                    || (same.is_valid(0) && same.value(0));
                if !eq {
                    r += 1;
                }
            }
            rank[*idx as usize] = r;
        }
        let max = r.max(1);
        ranks.push(rank.into_iter().map(|x| x * 0xFFFF / max).collect());
    }
    let mut keys: Vec<(u128, u32)> = (0..n)
        .map(|i| {
            let mut z: u128 = 0;
            for bit in (0..16).rev() {
                for r in &ranks {
                    z = (z << 1) | u128::from((r[i] >> bit) & 1);
                }
            }
            (z, i as u32)
        })
        .collect();
    keys.sort();
    Ok(UInt32Array::from(
        keys.into_iter().map(|(_, i)| i).collect::<Vec<_>>(),
    ))
}

/// Rows per batch handed to the writer by a reordering bin (the granularity of its output cuts).
const REORDER_CHUNK_ROWS: usize = 65_536;

/// The provider name written on clustered outputs (Delta's liquid clustering).
const CLUSTERING_PROVIDER: &str = "liquid";
/// The add tag naming the (physical) clustering columns an output was clustered by.
const CLUSTERED_BY_TAG: &str = "clusteredBy";

/// How a bin is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinKind {
    /// Sources written one after another with DVs applied, into one output: a pure compaction,
    /// tagged with each source's run (Case 4).
    Compact,
    /// Rows reordered along the Z-order curve of the ZORDER / clustering columns: never tagged.
    Reorder,
}

/// Whether `f` is already clustered by `columns` (physical): written by a clustering OPTIMIZE,
/// and, when it names the columns it was clustered by, by these. A file from another engine's
/// liquid clustering names none and counts as clustered, as that engine's OPTIMIZE treats it.
fn clustered_by(f: &Add, columns: &str) -> bool {
    f.clustering_provider.is_some()
        && f.tags
            .as_ref()
            .and_then(|t| t.get(CLUSTERED_BY_TAG))
            .is_none_or(|c| c.as_deref() == Some(columns))
}

/// The add tag naming the (physical) columns an explicit ZORDER BY ordered a file by (Delta's
/// name for it); a file carrying the same columns is not rewritten by the same ZORDER BY.
const ZORDER_BY_TAG: &str = "ZCUBE_ZORDER_BY";

/// The `ZORDER_BY_TAG` value for `columns`: their physical names as a JSON array, so a rename
/// under column mapping keeps the files settled and a dropped-and-re-added name does not.
fn zorder_tag_value(snapshot: &Snapshot, columns: &[String]) -> Result<String> {
    let mode = snapshot.column_mapping_mode();
    let mut physical = Vec::with_capacity(columns.len());
    for c in columns {
        let Some(f) = snapshot.schema.field(c) else {
            return Err(EngineError::invalid(format!(
                "ZORDER BY: unknown column {c}"
            )));
        };
        physical.push(delta_rlc_protocol::column_mapping::physical_name(f, mode)?.to_string());
    }
    Ok(serde_json::to_string(&physical).unwrap_or_default())
}

/// Whether `f` was written by a ZORDER BY of exactly these columns (`tag` from
/// `zorder_tag_value`); an untagged file, or one ordered by other columns, is not.
fn zordered_by(f: &Add, tag: &str) -> bool {
    f.tags
        .as_ref()
        .and_then(|t| t.get(ZORDER_BY_TAG))
        .is_some_and(|c| c.as_deref() == Some(tag))
}

fn partition_key(pv: &PartitionValues) -> String {
    serde_json::to_string(pv).unwrap_or_default()
}

pub async fn optimize_txn(mut txn: Transaction, spec: OptimizeSpec) -> Result<Transaction> {
    let snapshot: Arc<Snapshot> = Arc::clone(txn.snapshot()?);
    let start = txn.table.env.clock.now_ms();
    txn.operation = "OPTIMIZE".into();
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
    // Incremental clustering: the table's own clustering, not an explicit ZORDER BY.
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
    txn.operation_parameters.insert(
        "predicate".into(),
        json!(
            serde_json::to_string(&vec![spec.predicate.as_ref().map(|p| p.to_string())])
                .unwrap_or_default()
        ),
    );
    txn.operation_parameters.insert(
        "zOrderBy".into(),
        json!(serde_json::to_string(&zorder).unwrap_or_default()),
    );
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
                .config("delta.targetFileSize")
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(DEFAULT_TARGET_FILE_SIZE);
    let min_files = spec.min_file_count.unwrap_or(2);
    // What OPTIMIZE reads: its partition predicate and the files it rewrites. It copies rows
    // unchanged (ordering by columns moves rows, it computes no value).
    txn.read_set.used_columns([]);
    match &spec.predicate {
        Some(p) => txn.read_set.add_predicate(split_predicate(
            p,
            &snapshot.metadata.partition_columns,
            p.to_string(),
        )),
        None => txn.read_set.add_predicate(crate::read_set::ReadPredicate {
            partition: None,
            data: None,
            text: "true".into(),
            exact_keys: None,
        }),
    }
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
        files.retain(|f| (f.size as u64) < target || f.deletion_vector.is_some());
        files.sort_by_key(|f| (f.size, f.path.clone()));
        let mut bin: Vec<&Add> = Vec::new();
        let mut size = 0u64;
        for f in files {
            if !bin.is_empty() && size + f.size as u64 > target {
                bins.push((std::mem::take(&mut bin), BinKind::Compact));
                size = 0;
            }
            size += f.size as u64;
            bin.push(f);
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
    let now = txn.table.env.clock.now_ms();
    let extra: Vec<arrow::datatypes::Field> = row_tracking_columns(&snapshot)
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
    let compact_writer = FileWriter {
        target_file_size: u64::MAX,
        parquet: txn.table.parquet.clone(),
        ..FileWriter::for_table(
            &txn.table.store,
            &txn.table.env,
            &snapshot.schema,
            &snapshot.metadata,
        )?
    };
    let reorder_writer = FileWriter {
        target_file_size: target,
        parquet: txn.table.parquet.clone(),
        ..FileWriter::for_table(
            &txn.table.store,
            &txn.table.env,
            &snapshot.schema,
            &snapshot.metadata,
        )?
    };
    let (mut files_removed, mut files_added, mut bytes_removed, mut bytes_added) =
        (0u64, 0u64, 0i64, 0i64);
    let mut staged_adds = Vec::new();
    let mut staged_removes = Vec::new();
    for (bin, kind) in &bins {
        let kind = *kind;
        let mut parts: Vec<RecordBatch> = Vec::new();
        let mut runs: Vec<(&Add, u64, i64)> = Vec::new(); // (source, rowOffsetInTarget, physical records)
        let mut offset = 0u64;
        for f in bin {
            txn.read_set
                .read_file(&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()));
        }
        // The bin's files and DVs are fetched in one stage of concurrent requests (as far as the
        // statement's cache budget allows), then decoded `parallelism` at a time in the bin's
        // order: on an object store one round trip for the bin, not one per file. The bin is
        // held whole in any case (it becomes one output).
        crate::dv_io::prefetch_files(&txn.table.store, &snapshot.root, bin.iter().copied()).await;
        use futures::{StreamExt, TryStreamExt};
        // Each read owns what it uses (a future borrowing across the stream would not be Send).
        let reads: Vec<_> = bin
            .iter()
            .map(|f| {
                let (store, snap, opts) = (
                    txn.table.store.clone(),
                    Arc::clone(&snapshot),
                    read_opts.clone(),
                );
                let f: Add = (*f).clone();
                async move {
                    let batches = read_file(&store, &snap, &f, &opts).await?;
                    let dv = load_file_dv(&store, &snap.root, &f).await?;
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
                let b = stabilize_row_tracking(&snapshot, f, &b, false)?;
                parts.push(without_row_index(&b)?);
            }
        }
        let adds = match parts.first() {
            None => Vec::new(),
            Some(first) => {
                let all = concat_batches(&first.schema(), &parts)?;
                match kind {
                    BinKind::Compact => compact_writer.write(&[all], false).await?,
                    BinKind::Reorder => {
                        // Taken in chunks that own their buffers, so the writer can cut outputs
                        // at the target size (it cuts between batches, sized in memory).
                        let order = zorder_permutation(&all, &zorder)?;
                        let chunks = (0..order.len())
                            .step_by(REORDER_CHUNK_ROWS)
                            .map(|start| {
                                let len = REORDER_CHUNK_ROWS.min(order.len() - start);
                                take_record_batch(&all, &order.slice(start, len))
                            })
                            .collect::<std::result::Result<Vec<_>, _>>()?;
                        drop(all);
                        reorder_writer.write(&chunks, false).await?
                    }
                }
            }
        };
        // On a clustered table every output is clustered: a reordered bin by the current
        // columns, a purged settled file as its source was (its rows keep their order).
        let adds: Vec<Add> = adds
            .into_iter()
            .map(|mut a| {
                if kind == BinKind::Reorder && !incremental {
                    a.tags
                        .get_or_insert_with(Default::default)
                        .insert(ZORDER_BY_TAG.into(), Some(zorder_tag.clone()));
                }
                if incremental {
                    a.clustering_provider = Some(CLUSTERING_PROVIDER.into());
                    a.tags
                        .get_or_insert_with(Default::default)
                        .insert(CLUSTERED_BY_TAG.into(), Some(clustered_by_columns.clone()));
                }
                a
            })
            .collect();
        if kind == BinKind::Compact && adds.len() > 1 {
            return Err(EngineError::Internal(
                "a compaction bin produced more than one output".into(),
            ));
        }
        for (src, off, physical) in runs {
            let mut rm = src.to_remove(now, false);
            rm.stats = None;
            if kind == BinKind::Compact && !spec.skip_capture {
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
            bytes_removed += src.size;
            files_removed += 1;
            staged_removes.push(rm);
        }
        for a in adds {
            bytes_added += a.size;
            files_added += 1;
            staged_adds.push(a);
        }
    }
    // Spark's `partitionsOptimized`: the partitions whose files were rewritten.
    let partitions_optimized = staged_removes
        .iter()
        .map(|r| &r.partition_values)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    for r in staged_removes {
        txn.remove_file(r);
    }
    for a in staged_adds {
        txn.add_file(a);
    }
    let elapsed = txn.table.env.clock.now_ms() - start;
    let m = &mut txn.operation_metrics;
    m.insert("numFilesAdded".into(), json!(files_added.to_string()));
    m.insert("numFilesRemoved".into(), json!(files_removed.to_string()));
    m.insert("numAddedBytes".into(), json!(bytes_added.to_string()));
    m.insert("numRemovedBytes".into(), json!(bytes_removed.to_string()));
    m.insert("numBins".into(), json!(bins.len().to_string()));
    m.insert(
        "partitionsOptimized".into(),
        json!(partitions_optimized.to_string()),
    );
    m.insert("executionTimeMs".into(), json!(elapsed.max(0).to_string()));
    txn.affected_rows = Some(files_removed);
    Ok(txn)
}
