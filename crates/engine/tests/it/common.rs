//! Helpers shared by integration tests.

use std::path::PathBuf;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// The golden tables in the repository's test data, `tests/data/golden` (see its README and NOTICE).
pub fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

/// Every row as one string `a|b|c` in column order, sorted.
pub fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            rows.push(
                fmts.iter()
                    .map(|f| f.value(r).to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            );
        }
    }
    rows.sort();
    rows
}

/// The first column of `batches` (BIGINT), in order.
pub fn first_i64s(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .expect("a BIGINT column")
                .values()
                .to_vec()
        })
        .collect()
}

pub fn count_rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The latest snapshot of the table at `loc`.
pub async fn latest_snapshot(loc: &str) -> std::sync::Arc<delta_rlc_engine::Snapshot> {
    delta_rlc_engine::DeltaTable::open(loc)
        .unwrap()
        .snapshot(None)
        .await
        .unwrap()
}

/// Sets the modification time of the file at `path` to `hours` hours ago.
pub fn age_file(path: &std::path::Path, hours: u64) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(hours * 3600);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(old)
        .unwrap();
}
