//! Malformed tables: each gives a typed error naming what is wrong, never a panic.

use delta_rlc_engine::scan::scan;
use delta_rlc_engine::{ErrorKind, Snapshot};
use delta_rlc_storage::TableStore;

use crate::common::{golden_dir, rt};

/// Copies a golden table into a temp dir so it can be damaged.
fn copy_table(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&golden_dir().join(name), tmp.path());
    tmp
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn load_and_scan(dir: &std::path::Path) -> Result<usize, delta_rlc_engine::EngineError> {
    rt().block_on(async {
        let store = TableStore::open_existing(dir.to_str().unwrap())?;
        let snap = Snapshot::load(&store, None).await?;
        let b = scan(&store, &snap, None).await?;
        Ok(b.iter().map(|b| b.num_rows()).sum())
    })
}

fn log_file(dir: &std::path::Path, v: u64) -> std::path::PathBuf {
    dir.join("_delta_log").join(format!("{v:020}.json"))
}

#[test]
fn truncated_commit_names_the_version() {
    let t = copy_table("table-with-dv-small");
    let p = log_file(t.path(), 1);
    let text = std::fs::read(&p).unwrap();
    std::fs::write(&p, &text[..text.len() / 2]).unwrap();
    let e = load_and_scan(t.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptTable);
    assert!(e.to_string().contains("commit 1"), "{e}");
}

#[test]
fn non_json_line_names_version_and_line() {
    let t = copy_table("table-with-dv-small");
    let p = log_file(t.path(), 1);
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("this is not json\n");
    std::fs::write(&p, text).unwrap();
    let e = load_and_scan(t.path()).unwrap_err();
    assert!(e.to_string().contains("commit 1: line"), "{e}");
}

fn dv_file(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("deletion_vector_")
        })
        .unwrap()
}

#[test]
fn dv_with_wrong_checksum_is_rejected() {
    let t = copy_table("table-with-dv-small");
    let p = dv_file(t.path());
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&p, bytes).unwrap();
    let e = load_and_scan(t.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptTable);
    assert!(e.to_string().contains("checksum"), "{e}");
}

fn rewrite_commit(dir: &std::path::Path, v: u64, from: &str, to: &str) {
    let p = log_file(dir, v);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{from} not in commit {v}");
    std::fs::write(&p, text.replace(from, to)).unwrap();
}

#[test]
fn dv_offset_past_end_is_rejected() {
    let t = copy_table("table-with-dv-small");
    rewrite_commit(t.path(), 1, "\"offset\":1", "\"offset\":4000");
    let e = load_and_scan(t.path()).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
}

#[test]
fn dv_cardinality_mismatch_is_rejected() {
    let t = copy_table("table-with-dv-small");
    rewrite_commit(t.path(), 1, "\"cardinality\":2", "\"cardinality\":3");
    let e = load_and_scan(t.path()).unwrap_err();
    assert!(e.to_string().contains("cardinality mismatch"), "{e}");
}

#[test]
fn dv_row_index_beyond_num_records_is_rejected() {
    let t = copy_table("table-with-dv-small");
    rewrite_commit(t.path(), 1, "\\\"numRecords\\\":10", "\\\"numRecords\\\":5");
    let e = load_and_scan(t.path()).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
}

#[test]
fn unknown_reader_feature_is_named() {
    let t = copy_table("table-with-dv-small");
    rewrite_commit(
        t.path(),
        0,
        "\"readerFeatures\":[\"deletionVectors\"]",
        "\"readerFeatures\":[\"deletionVectors\",\"quantumColumns\"]",
    );
    let e = load_and_scan(t.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.to_string().contains("quantumColumns"), "{e}");
}

#[test]
fn escaping_paths_are_rejected() {
    for bad in [
        "../outside.parquet",
        "%2e%2e/outside.parquet",
        "a//b.parquet",
        "/etc/passwd",
        "file:///etc/passwd",
        "s3://bucket/x.parquet",
    ] {
        let t = copy_table("table-with-dv-small");
        let p = log_file(t.path(), 0);
        let text = std::fs::read_to_string(&p).unwrap();
        let start = text.find("\"path\":\"").unwrap() + 8;
        let end = start + text[start..].find('"').unwrap();
        let damaged = format!("{}{}{}", &text[..start], bad, &text[end..]);
        std::fs::write(&p, damaged).unwrap();
        let e = load_and_scan(t.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptTable, "{bad}: {e}");
        assert!(
            e.to_string().contains("escapes the table root"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn missing_table_is_not_found() {
    let t = tempfile::tempdir().unwrap();
    let e = load_and_scan(&t.path().join("nope")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    std::fs::create_dir_all(t.path().join("empty/_delta_log")).unwrap();
    let e = load_and_scan(&t.path().join("empty")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[test]
fn empty_latest_commit_fails_the_load_with_its_version() {
    let t = copy_table("table-with-dv-small");
    std::fs::write(log_file(t.path(), 1), b"").unwrap();
    let e = load_and_scan(t.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptTable, "{e}");
    assert!(e.to_string().contains("commit 1"), "{e}");
    assert!(e.to_string().contains("empty"), "{e}");
    // Whitespace only is just as empty.
    std::fs::write(log_file(t.path(), 1), b"\n \n").unwrap();
    assert_eq!(
        load_and_scan(t.path()).unwrap_err().kind(),
        ErrorKind::CorruptTable
    );
}

#[test]
fn negative_sizes_and_counts_are_corrupt() {
    for (from, to) in [
        ("\"size\":", "\"size\":-"),
        ("\"cardinality\":", "\"cardinality\":-"),
        // Inside the stats string, where the quotes are escaped.
        ("\\\"numRecords\\\":", "\\\"numRecords\\\":-"),
        (
            "\\\"numRecords\\\":",
            "\\\"numRecords\\\":18446744073709551610",
        ),
    ] {
        let t = copy_table("table-with-dv-small");
        let p = log_file(t.path(), 1);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(from), "{from}");
        // Replace the value's first digit run after `from` (keeps the JSON valid).
        let damaged = if to.ends_with('-') {
            text.replacen(from, to, 1)
        } else {
            let i = text.find(from).unwrap() + from.len();
            let end = i + text[i..].find(|c: char| !c.is_ascii_digit()).unwrap();
            format!("{}{}{}", &text[..i], &to[from.len()..], &text[end..])
        };
        std::fs::write(&p, damaged).unwrap();
        let e = load_and_scan(t.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptTable, "{to}: {e}");
    }
}

#[test]
fn dv_cardinality_above_num_records_is_corrupt() {
    let t = copy_table("table-with-dv-small");
    rewrite_commit(t.path(), 1, "\\\"numRecords\\\":10", "\\\"numRecords\\\":1");
    let e = load_and_scan(t.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptTable, "{e}");
    let snap = rt().block_on(async {
        let store = TableStore::open_existing(t.path().to_str().unwrap()).unwrap();
        Snapshot::load(&store, None).await.unwrap()
    });
    assert_eq!(
        snap.num_rows(),
        None,
        "no total from a DV larger than its file"
    );
}
