//! Every golden table written by Spark / Databricks reads with exactly the verified row counts at
//! every version, and with the known contents (tests/data/golden/README.md).

use std::path::Path;

use arrow::array::RecordBatch;
use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::scan::scan;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::Snapshot;
use delta_rlc_storage::TableStore;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::common::{count_rows, golden_dir, rt, sorted_rows};

async fn read(table: &Path, version: Option<u64>) -> (u64, Vec<RecordBatch>) {
    let store = TableStore::open_existing(table.to_str().unwrap()).unwrap();
    let snap = Snapshot::load(&store, version).await.unwrap();
    let batches = scan(&store, &snap, None).await.unwrap();
    (snap.version, batches)
}

fn check_counts(table: &str, counts: &[usize]) {
    let dir = golden_dir().join(table);
    rt().block_on(async {
        for (v, expected) in counts.iter().enumerate() {
            let (version, batches) = read(&dir, Some(v as u64)).await;
            assert_eq!(version, v as u64);
            assert_eq!(count_rows(&batches), *expected, "{table} at version {v}");
            // SQL count(*) answers from numRecords minus DV cardinalities: the same number.
            let sql = format!("SELECT count(*) FROM '{}' VERSION AS OF {v}", dir.display());
            let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
            let out = sorted_rows(&s.execute(&sql).await.unwrap().batches);
            assert_eq!(out, vec![expected.to_string()], "{sql}");
        }
        let (latest, _) = read(&dir, None).await;
        assert_eq!(latest as usize, counts.len() - 1, "{table} latest version");
    });
}

fn expected_rows(dir: &Path) -> Vec<String> {
    let mut batches = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "parquet") {
            let f = std::fs::File::open(&p).unwrap();
            for b in ParquetRecordBatchReaderBuilder::try_new(f)
                .unwrap()
                .build()
                .unwrap()
            {
                batches.push(b.unwrap());
            }
        }
    }
    sorted_rows(&batches)
}

fn column_values(batches: &[RecordBatch], name: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for b in batches {
        let col = arrow::compute::cast(
            b.column_by_name(name).unwrap(),
            &arrow::datatypes::DataType::Int64,
        )
        .unwrap();
        let col = col
            .as_any()
            .downcast_ref::<arrow::array::Int64Array>()
            .unwrap();
        out.extend(col.iter().map(|v| v.unwrap()));
    }
    out.sort();
    out
}

#[test]
fn golden_table_with_dv_small_counts_and_values() {
    check_counts("table-with-dv-small", &[10, 8]);
    rt().block_on(async {
        let (_, b) = read(&golden_dir().join("table-with-dv-small"), None).await;
        assert_eq!(column_values(&b, "value"), (1..=8).collect::<Vec<_>>());
    });
}

#[test]
fn golden_dv_partitioned_with_checkpoint_matches_expected() {
    let counts: Vec<usize> = (0..=15).map(|v| 50 - v).collect();
    check_counts("dv-partitioned-with-checkpoint/delta", &counts);
    rt().block_on(async {
        let root = golden_dir().join("dv-partitioned-with-checkpoint");
        let (_, b) = read(&root.join("delta"), None).await;
        // Expected files have columns (part, col1, col2); the table schema is in the same order.
        let names: Vec<String> = b[0]
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, vec!["part", "col1", "col2"]);
        assert_eq!(sorted_rows(&b), expected_rows(&root.join("expected")));
    });
}

#[test]
fn golden_log_replay_dv_key_cases_matches_expected() {
    check_counts("log-replay-dv-key-cases/delta", &[50, 49, 48, 47]);
    rt().block_on(async {
        let root = golden_dir().join("log-replay-dv-key-cases");
        let (_, b) = read(&root.join("delta"), None).await;
        assert_eq!(sorted_rows(&b), expected_rows(&root.join("expected")));
        let expected: Vec<i64> = (0..50).filter(|i| ![0, 7, 14].contains(i)).collect();
        assert_eq!(column_values(&b, "id"), expected);
    });
}

#[test]
fn golden_table_with_deletion_logs_counts_and_ids() {
    let mut counts = vec![100, 100, 100, 99];
    counts.extend(std::iter::repeat_n(98, 17));
    check_counts("table_with_deletion_logs", &counts);
    rt().block_on(async {
        let (_, b) = read(&golden_dir().join("table_with_deletion_logs"), None).await;
        let expected: Vec<i64> = (10..110).filter(|i| *i != 12 && *i != 89).collect();
        assert_eq!(column_values(&b, "id"), expected);
    });
}

#[test]
fn golden_cdf_table_with_dvs_counts_and_final_rows() {
    let counts = [
        1, 5, 4, 4, 5, 3, 3, 4, 5, 5, 4, 4, 4, 4, 6, 8, 6, 6, 8, 8, 8, 8, 8, 8, 2, 5,
    ];
    check_counts("cdf-table-with-cdc-and-dvs", &counts);
    rt().block_on(async {
        let (_, b) = read(&golden_dir().join("cdf-table-with-cdc-and-dvs"), None).await;
        assert_eq!(
            sorted_rows(&b),
            vec![
                "0|new",
                "10|merge1-insert",
                "12|merge2-insert",
                "1|after-large-delete",
                "2|"
            ]
        );
    });
}

#[test]
fn golden_liquid_clustering_with_row_tracking() {
    check_counts("table_with_liquid_clustering", &[10]);
    rt().block_on(async {
        let dir = golden_dir().join("table_with_liquid_clustering");
        let (_, b) = read(&dir, None).await;
        assert_eq!(column_values(&b, "id"), (0..10).collect::<Vec<_>>());
        let store = TableStore::open_existing(dir.to_str().unwrap()).unwrap();
        let snap = Snapshot::load(&store, None).await.unwrap();
        assert_eq!(snap.row_id_high_water_mark(), Some(9));
        let mut base_ids: Vec<i64> = snap.files.iter().map(|f| f.base_row_id.unwrap()).collect();
        base_ids.sort();
        assert_eq!(base_ids, (0..10).collect::<Vec<_>>());
    });
}
