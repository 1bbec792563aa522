//! What one statement costs on an object store, counted by the statement's request meter: requests
//! by kind and the critical-path depth (the longest chain of requests each of which waited on the
//! previous). On a store with ~30–60 ms per request the depth, not this machine's CPU, is the
//! statement's latency, so a change that turns concurrent reads serial fails here — on the counts,
//! not on a time.
//!
//! The table is the shape of issue #51's benchmark, scaled down: 20 files with deletion vectors
//! on, in an in-memory object store (the engine reads it as it reads S3: no local-disk shortcuts).

use std::sync::Arc;

use delta_rlc::arrow::array::{Int64Array, RecordBatch};
use delta_rlc::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use delta_rlc::{col, lit, RequestCounts, Table, TableOptions};

const FILES: i64 = 20;
const ROWS_PER_FILE: i64 = 500;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn batch(ids: impl Iterator<Item = i64>) -> RecordBatch {
    let ids: Vec<i64> = ids.collect();
    let v: Vec<i64> = ids.iter().map(|i| i * 10).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(Int64Array::from(v)),
        ],
    )
    .unwrap()
}

/// A table of FILES files, file f holding ids f*ROWS_PER_FILE ..: one append each.
async fn table(name: &str) -> Table {
    let loc = format!("memory://request-cost-{name}/t");
    let t = Table::create(&loc)
        .options(options())
        .columns_from(&schema())
        .property("delta.enableDeletionVectors", "true")
        .await
        .unwrap();
    for f in 0..FILES {
        let lo = f * ROWS_PER_FILE;
        t.write([batch(lo..lo + ROWS_PER_FILE)]).await.unwrap();
    }
    Table::open_with(&loc, options()).await.unwrap()
}

/// Every request waits 10 ms: requests issued together overlap, so the depth the meter sees is
/// the statement's real chain of round trips (on a store without latency, a "concurrent" read
/// may finish before the next one starts).
fn options() -> TableOptions {
    TableOptions::default().storage_option("delta_rlc_latency_profile", "fixed:10")
}

async fn sum_v(t: &Table) -> (usize, i64) {
    let mut rows = 0;
    let mut sum = 0;
    for b in t.scan().columns(["v"]).collect().await.unwrap() {
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        rows += a.len();
        sum += a.values().iter().sum::<i64>();
    }
    (rows, sum)
}

fn show(r: &RequestCounts) -> String {
    r.to_string()
}

/// Distinct DV files the table's live files point to.
async fn dv_files(t: &Table) -> usize {
    let snap = t.snapshot(delta_rlc::At::Latest).await.unwrap();
    let mut files: Vec<String> = snap
        .add_actions()
        .into_iter()
        .filter_map(|a| a.deletion_vector.map(|dv| dv.path_or_inline_dv))
        .collect();
    files.sort();
    files.dedup();
    files.len()
}

// Each statement below is "the table is open; run one statement", the cost a long-running writer
// pays. Its snapshot is the table's checkpoint (version 20) and one commit: 1 LIST and 3 GETs
// (`_last_checkpoint`, then the checkpoint and its commit together).

/// A MERGE of 50 keys spread over all 20 files: the 20 files are fetched in one concurrent stage
/// (by the key probe; the join reads them again from the statement's cache, not the store), the
/// 20 new DVs go into one DV file uploaded while the updated rows' file is written, then the
/// commit. Depth 6: `_last_checkpoint`, the log listing, the log files, the data files, the
/// writes, the commit (issue #51's bound; it was 46 with files read two at a time, each twice, and
/// 20 DV files written one after another).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_of_scattered_keys_reads_each_file_once_in_one_stage() {
    let t = table("merge").await;
    let keys: Vec<i64> = (0..50)
        .map(|i| i * (FILES * ROWS_PER_FILE / 50) + 7)
        .collect();
    let done = merge_minus_one(&t, &keys).await;
    let r = done.requests.unwrap();
    assert_eq!(
        (r.list, r.get, r.put, r.head, r.delete),
        (1, 3 + FILES as u64, 3, 0, 0),
        "{}",
        show(&r)
    );
    assert!(r.critical_path_depth <= 6, "{}", show(&r));
    assert_eq!(done.metrics.get("numScannedFiles"), Some(FILES));
    assert_eq!(done.metrics.get("numDeletionVectorsAdded"), Some(FILES));
    assert_eq!(done.metrics.get("numTargetRowsUpdated"), Some(50));
    assert_eq!(dv_files(&t).await, 1, "one DV file for the statement");
    let (rows, sum) = sum_v(&t).await;
    assert_eq!(rows as i64, FILES * ROWS_PER_FILE);
    let all: i64 = (0..FILES * ROWS_PER_FILE).map(|i| i * 10).sum();
    let replaced: i64 = keys.iter().map(|k| k * 10 + 1).sum();
    assert_eq!(sum, all - replaced, "the 50 keys now hold -1");
}

/// UPDATE and DELETE of 50 contiguous ids (one file): the file read once (matching and rewriting
/// both use the statement's copy); UPDATE's DV file and new rows are written together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_and_delete_read_the_touched_file_once() {
    let t = table("dml").await;
    let done = t
        .update()
        .set("v", lit(-1i64))
        .filter(
            col("id")
                .gt_eq(lit(1000i64))
                .and(col("id").lt(lit(1050i64))),
        )
        .await
        .unwrap();
    let r = done.requests.unwrap();
    assert_eq!((r.list, r.get, r.put), (1, 3 + 1, 3), "{}", show(&r));
    assert!(r.critical_path_depth <= 6, "{}", show(&r));
    // The handle holds version 21 as its UPDATE committed it (nothing read back): the DELETE
    // lists the log tail, finds nothing newer, and reads only the data file.
    let done = t
        .delete()
        .filter(
            col("id")
                .gt_eq(lit(3000i64))
                .and(col("id").lt(lit(3050i64))),
        )
        .await
        .unwrap();
    let r = done.requests.unwrap();
    assert_eq!((r.list, r.get, r.put), (1, 1, 2), "{}", show(&r));
    assert!(r.critical_path_depth <= 4, "{}", show(&r));
    let (rows, sum) = sum_v(&t).await;
    assert_eq!(rows as i64, FILES * ROWS_PER_FILE - 50);
    let all: i64 = (0..FILES * ROWS_PER_FILE).map(|i| i * 10).sum();
    let updated: i64 = (1000..1050).map(|i| i * 10 + 1).sum();
    let deleted: i64 = (3000..3050).map(|i| i * 10).sum();
    assert_eq!(sum, all - updated - deleted);
}

async fn merge_minus_one(t: &Table, keys: &[i64]) -> delta_rlc::CommitOutcome {
    let source = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(keys.to_vec())),
            Arc::new(Int64Array::from(vec![-1i64; keys.len()])),
        ],
    )
    .unwrap();
    t.merge(vec![source], "t.id = s.id")
        .source_alias("s")
        .target_alias("t")
        .when_matched_update(|u| u.set("v", "s.v"))
        .await
        .unwrap()
}

/// A handle that stays open keeps the data and DV files its statements read or wrote (they never
/// change): a second MERGE over the same 20 files reads none of them again, only the log tail. A
/// handle opened afresh (the twin) reads every file, and both see the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lived_handle_reads_each_data_file_once() {
    let t = table("kept").await;
    let first: Vec<i64> = (0..50)
        .map(|i| i * (FILES * ROWS_PER_FILE / 50) + 7)
        .collect();
    let second: Vec<i64> = first.iter().map(|k| k + 1).collect();
    let r = merge_minus_one(&t, &first).await.requests.unwrap();
    assert_eq!(r.get, 3 + FILES as u64, "{}", show(&r));
    let done = merge_minus_one(&t, &second).await;
    let r = done.requests.unwrap();
    // One listing and no read: the handle holds the table as its first MERGE committed it, and
    // keeps the 20 data files, the DV file and the updated rows' file. Depth 3: the listing, the
    // writes, the commit.
    assert_eq!((r.list, r.get, r.put), (1, 0, 3), "{}", show(&r));
    assert_eq!(r.critical_path_depth, 3, "{}", show(&r));
    assert_eq!(done.metrics.get("numTargetRowsUpdated"), Some(50));
    assert_eq!(done.metrics.get("numScannedFiles"), Some(FILES + 1));

    // The twin: a fresh handle keeps nothing yet, so it reads the files.
    let fresh = Table::open_with(t.uri(), options()).await.unwrap();
    let third: Vec<i64> = first.iter().map(|k| k + 2).collect();
    let r = merge_minus_one(&fresh, &third).await.requests.unwrap();
    assert!(r.get >= FILES as u64 + 2, "{}", show(&r));

    let all: i64 = (0..FILES * ROWS_PER_FILE).map(|i| i * 10).sum();
    let replaced: i64 = first
        .iter()
        .chain(&second)
        .chain(&third)
        .map(|k| k * 10 + 1)
        .sum();
    for handle in [&t, &fresh] {
        let (rows, sum) = sum_v(handle).await;
        assert_eq!(rows as i64, FILES * ROWS_PER_FILE);
        assert_eq!(sum, all - replaced, "150 keys now hold -1");
    }
}

/// `Table::sql` starts from the handle's cached snapshot: a DELETE through SQL right after the
/// handle read the table lists the log once and reads no commit again; its twin — the statement
/// through a session without the snapshot — reads the log. The rows are the same either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_on_a_handle_starts_from_its_cached_snapshot() {
    let t = table("sql-cache").await;
    assert_eq!(sum_v(&t).await.0 as i64, FILES * ROWS_PER_FILE);
    let out = t.sql("DELETE FROM t WHERE id = 3").await.unwrap();
    let r = out.commit.unwrap().requests.unwrap();
    // No GET: the snapshot and the candidate file (read by the scan) are the handle's. The two
    // listings are DML's (`open_target`: the target's, then its source's latest).
    assert_eq!((r.get, r.list), (0, 2), "{}", show(&r));

    // The twin: the same statement through a session that holds no snapshot reads the log.
    let cold = delta_rlc::sql(
        &format!("DELETE FROM '{}' WHERE id = 4", t.uri()),
        &options(),
    )
    .await
    .unwrap();
    let r = cold.commit.unwrap().requests.unwrap();
    assert!(
        r.get > 1,
        "a session without the snapshot reads the log: {}",
        show(&r)
    );
    let cold = Table::open_with(t.uri(), options()).await.unwrap();
    for handle in [&t, &cold] {
        assert_eq!(sum_v(handle).await.0 as i64, FILES * ROWS_PER_FILE - 2);
    }
}

/// What an append and an OPTIMIZE send to the store: an append on a handle that holds the table
/// lists the log once (is there a newer commit?), PUTs its data file and its commit, and reads
/// nothing; OPTIMIZE on a fresh handle reads each file it compacts once, all in one stage, and
/// PUTs the compacted file and the commit. The rows are the same before and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_and_optimize_request_counts() {
    let t = table("append-optimize").await;
    let _ = t.version().await.unwrap();
    let out = t
        .write([batch(FILES * ROWS_PER_FILE..FILES * ROWS_PER_FILE + 10)])
        .await
        .unwrap();
    let r = out.requests.unwrap();
    assert_eq!((r.list, r.get, r.put), (1, 0, 2), "append: {}", show(&r));
    assert_eq!(r.critical_path_depth, 3, "append: {}", show(&r));
    let fresh = Table::open_with(t.uri(), options()).await.unwrap();
    let out = fresh.optimize().await.unwrap();
    let r = out.requests.unwrap();
    let files = FILES as u64 + 1;
    assert_eq!(out.metrics.get("numFilesRemoved"), Some(files as i64));
    // Each data file read once (plus the few log reads of a handle that holds no snapshot yet),
    // in one stage of concurrent requests: 6 round trips, where reading the bin file by file
    // took 26 (one per file, and the log).
    assert!(
        r.get >= files && r.get <= files + 3,
        "optimize: {}",
        show(&r)
    );
    assert_eq!(r.put, 2, "optimize: {}", show(&r));
    assert!(r.critical_path_depth <= 6, "optimize: {}", show(&r));
    for handle in [&t, &fresh] {
        assert_eq!(sum_v(handle).await.0 as i64, FILES * ROWS_PER_FILE + 10);
    }
}
