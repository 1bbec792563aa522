//! The write path: CREATE / INSERT / CTAS through SQL, stats, partitions, row tracking, clustering,
//! checkpoints, VACUUM, and bad input leaving nothing visible.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::{DeltaTable, ErrorKind};
use delta_rlc_protocol::stats::FileStats;

use crate::common::{rt, sorted_rows};

fn session() -> SqlSession {
    SqlSession::new(Env::deterministic(7), ConflictConfig::default())
}

fn q(s: &SqlSession, sql: &str) -> Vec<String> {
    rt().block_on(async { sorted_rows(&s.execute(sql).await.unwrap().batches) })
}

fn exec(s: &SqlSession, sql: &str) -> Option<u64> {
    rt().block_on(async { s.execute(sql).await.unwrap().commit.and_then(|c| c.version) })
}

#[test]
fn create_insert_select_with_partitions_and_stats() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    assert_eq!(
        exec(
            &s,
            &format!("CREATE TABLE '{t}' (id BIGINT NOT NULL, p STRING, x INT) PARTITIONED BY (p)")
        ),
        Some(0)
    );
    assert_eq!(
        exec(&s, &format!("INSERT INTO '{t}' SELECT value, CASE WHEN value < 5 THEN 'a:b' ELSE 'c d' END, CAST(value * 2 AS INT) FROM range(0, 10)")),
        Some(1)
    );
    assert_eq!(q(&s, &format!("SELECT count(*) FROM '{t}'")), vec!["10"]);
    assert_eq!(
        q(&s, &format!("SELECT count(*) FROM '{t}' WHERE p = 'a:b'")),
        vec!["5"]
    );
    assert_eq!(
        q(&s, &format!("SELECT sum(x) FROM '{t}' WHERE id >= 8")),
        vec!["34"]
    );
    rt().block_on(async {
        let table = DeltaTable::open_existing(&t).unwrap();
        let snap = table.snapshot(None).await.unwrap();
        assert_eq!(snap.files.len(), 2, "one file per partition");
        let f = snap
            .files
            .iter()
            .find(|f| f.partition_values.get("p") == Some(&Some("a:b".into())))
            .unwrap();
        assert!(f.path.starts_with("p=a%3Ab/"), "{}", f.path);
        let st = FileStats::parse(f.stats.as_deref().unwrap()).unwrap();
        assert_eq!(st.num_records, Some(5));
        assert_eq!(st.min(&["id"]).unwrap().as_i64(), Some(0));
        assert_eq!(st.max(&["x"]).unwrap().as_i64(), Some(8));
        assert_eq!(st.informative_null_count(&["x"]), Some(0));
        assert!(snap.protocol.has_reader_feature("deletionVectors"));
        assert!(snap.deletion_vectors_enabled());
        // The raw log spells the escaped directory URI-encoded (Spark's double encoding).
        let raw =
            std::fs::read_to_string(dir.path().join("t/_delta_log/00000000000000000001.json"))
                .unwrap();
        assert!(raw.contains("p=a%253Ab/"), "{raw}");
        assert!(raw.lines().next().unwrap().starts_with("{\"commitInfo\""));
    });
}

#[test]
fn insert_column_list_ctas_and_time_travel() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let u = dir.path().join("u").display().to_string();
    let s = session();
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT, name STRING)"));
    exec(
        &s,
        &format!("INSERT INTO '{t}' (name, id) VALUES ('a', 1), ('b', 2)"),
    );
    exec(&s, &format!("INSERT INTO '{t}' (id) VALUES (3)"));
    assert_eq!(
        q(&s, &format!("SELECT * FROM '{t}'")),
        vec!["1|a", "2|b", "3|NULL"]
    );
    assert_eq!(
        q(&s, &format!("SELECT count(*) FROM '{t}' VERSION AS OF 1")),
        vec!["2"]
    );
    assert_eq!(
        exec(
            &s,
            &format!("CREATE TABLE '{u}' AS SELECT id * 10 AS k FROM '{t}' WHERE id > 1")
        ),
        Some(0)
    );
    assert_eq!(q(&s, &format!("SELECT k FROM '{u}'")), vec!["20", "30"]);
    exec(&s, &format!("INSERT OVERWRITE '{u}' VALUES (7)"));
    assert_eq!(q(&s, &format!("SELECT k FROM '{u}'")), vec!["7"]);
    let hist = q(&s, &format!("DESCRIBE HISTORY '{u}'"));
    assert_eq!(hist.len(), 2);
}

#[test]
fn replace_where_on_partition() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    exec(
        &s,
        &format!("CREATE TABLE '{t}' (id BIGINT, p INT) PARTITIONED BY (p)"),
    );
    exec(
        &s,
        &format!("INSERT INTO '{t}' VALUES (1, 1), (2, 2), (3, 3)"),
    );
    exec(
        &s,
        &format!("INSERT INTO '{t}' REPLACE WHERE p = 2 SELECT 20, 2"),
    );
    assert_eq!(
        q(&s, &format!("SELECT * FROM '{t}'")),
        vec!["1|1", "20|2", "3|3"]
    );
    let err = rt()
        .block_on(s.execute(&format!(
            "INSERT INTO '{t}' REPLACE WHERE p = 2 SELECT 30, 3"
        )))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn checkpoint_every_interval_and_replay_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    exec(
        &s,
        &format!("CREATE TABLE '{t}' (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '5')"),
    );
    for i in 0..11 {
        exec(&s, &format!("INSERT INTO '{t}' VALUES ({i})"));
    }
    let log = dir.path().join("t/_delta_log");
    assert!(log.join("00000000000000000005.checkpoint.parquet").exists());
    assert!(log.join("00000000000000000010.checkpoint.parquet").exists());
    let last: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(log.join("_last_checkpoint")).unwrap())
            .unwrap();
    assert_eq!(last["version"], 10);
    rt().block_on(async {
        let table = DeltaTable::open_existing(&t).unwrap();
        let from_cp = table.snapshot(None).await.unwrap();
        assert_eq!(from_cp.checkpoint_version, Some(10));
        // Same state from JSON alone: hide the checkpoints.
        let copy = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(dir.path().join("t")).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), copy.path().join(e.file_name())).unwrap();
            }
        }
        std::fs::create_dir(copy.path().join("_delta_log")).unwrap();
        for e in std::fs::read_dir(&log).unwrap() {
            let name = e.unwrap().file_name();
            if name.to_str().unwrap().ends_with(".json") {
                std::fs::copy(log.join(&name), copy.path().join("_delta_log").join(&name)).unwrap();
            }
        }
        let json_only = DeltaTable::open_existing(copy.path().to_str().unwrap())
            .unwrap()
            .snapshot(None)
            .await
            .unwrap();
        assert_eq!(json_only.checkpoint_version, None);
        assert_eq!(json_only.files, from_cp.files);
        assert_eq!(json_only.metadata, from_cp.metadata);
        assert_eq!(json_only.protocol, from_cp.protocol);
    });
    assert_eq!(q(&s, &format!("SELECT count(*) FROM '{t}'")), vec!["11"]);
}

#[test]
fn row_tracking_and_clustering() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT, x INT) CLUSTER BY (id) TBLPROPERTIES ('delta.enableRowTracking' = 'true')"));
    exec(
        &s,
        &format!("INSERT INTO '{t}' SELECT value, 1 FROM range(0, 7)"),
    );
    exec(
        &s,
        &format!("INSERT INTO '{t}' SELECT value, 2 FROM range(0, 3)"),
    );
    rt().block_on(async {
        let snap = DeltaTable::open_existing(&t)
            .unwrap()
            .snapshot(None)
            .await
            .unwrap();
        assert_eq!(snap.row_id_high_water_mark(), Some(9));
        let mut bases: Vec<(i64, i64)> = snap
            .files
            .iter()
            .map(|f| {
                (
                    f.base_row_id.unwrap(),
                    f.default_row_commit_version.unwrap(),
                )
            })
            .collect();
        bases.sort();
        assert_eq!(bases, vec![(0, 1), (7, 2)]);
        assert!(snap.protocol.has_writer_feature("rowTracking"));
        assert!(snap.protocol.has_writer_feature("clustering"));
        assert!(snap
            .config("delta.rowTracking.materializedRowIdColumnName")
            .unwrap()
            .starts_with("_row-id-col-"));
        let clustering = &snap.domains.get("delta.clustering").unwrap().configuration;
        assert_eq!(clustering, r#"{"clusteringColumns":[["id"]]}"#);
    });
}

/// The system clock, `ahead_ms` in the future: VACUUM compares file modification times with the
/// clock, so files written now look that old.
#[derive(Debug)]
struct AheadClock(i64);

impl delta_rlc_engine::env::Clock for AheadClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis() + self.0
    }
}

/// A session whose clock runs `ahead_ms` ahead, with the retention check off (RETAIN 0 HOURS).
fn vacuum_session(ahead_ms: i64) -> SqlSession {
    let env = Env {
        clock: std::sync::Arc::new(AheadClock(ahead_ms)),
        ..Env::default()
    };
    let mut conf = ConflictConfig::default();
    conf.set("retentionDurationCheck", "false").unwrap();
    SqlSession::new(env, conf)
}

#[test]
fn vacuum_keeps_referenced_files_and_respects_retention() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    // Eight hours ahead: past VACUUM's 7-hour floor for in-flight writers.
    let s = vacuum_session(8 * 3_600_000);
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT)"));
    exec(&s, &format!("INSERT INTO '{t}' VALUES (1)"));
    exec(&s, &format!("INSERT OVERWRITE '{t}' VALUES (2)"));
    // An orphan (as left by a failed writer) and a file outside the table.
    std::fs::write(dir.path().join("t/orphan.parquet"), b"x").unwrap();
    std::fs::write(dir.path().join("outside.parquet"), b"x").unwrap();
    // Default retention: the removed file is recent, so nothing goes.
    let out = q(&s, &format!("VACUUM '{t}' DRY RUN"));
    assert!(out.is_empty(), "{out:?}");
    // The file the first INSERT added, which INSERT OVERWRITE removed.
    let log = dir.path().join("t/_delta_log");
    let v1: serde_json::Value = std::fs::read_to_string(log.join("00000000000000000001.json"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|a| a.get("add").is_some())
        .unwrap();
    let removed = vec![v1["add"]["path"].as_str().unwrap().to_string()];
    // LITE: only what the log's tombstones name, so not the orphan; zero retention with the check
    // off: the file INSERT OVERWRITE removed goes at once (as in Delta Spark).
    let out = q(&s, &format!("VACUUM '{t}' LITE RETAIN 0 HOURS DRY RUN"));
    assert_eq!(out, removed);
    // Full: the orphan goes too (written "8 hours ago", past the floor for writers in flight).
    let out = q(&s, &format!("VACUUM '{t}' RETAIN 0 HOURS"));
    let mut want = vec!["orphan.parquet".to_string(), removed[0].clone()];
    want.sort();
    assert_eq!(out, want);
    // Recorded as VACUUM START and VACUUM END, each a commitInfo alone.
    for (v, op, metric) in [
        (3, "VACUUM START", "numFilesToDelete"),
        (4, "VACUUM END", "numDeletedFiles"),
    ] {
        let text = std::fs::read_to_string(log.join(format!("{v:020}.json"))).unwrap();
        let actions: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(actions.len(), 1, "{text}");
        assert_eq!(actions[0]["commitInfo"]["operation"], op);
        assert_eq!(actions[0]["commitInfo"]["operationMetrics"][metric], "2");
    }
    assert!(dir.path().join("outside.parquet").exists());
    assert!(dir
        .path()
        .join("t/_delta_log/00000000000000000000.json")
        .exists());
    assert_eq!(q(&s, &format!("SELECT * FROM '{t}'")), vec!["2"]);
}

#[test]
fn bad_input_is_one_clear_error_and_nothing_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    let missing = rt()
        .block_on(s.execute(&format!(
            "SELECT * FROM '{}'",
            dir.path().join("none").display()
        )))
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound, "{missing}");
    let syntax = rt().block_on(s.execute("SELEC 1")).unwrap_err();
    assert_eq!(syntax.kind(), ErrorKind::InvalidArgument, "{syntax}");
    exec(
        &s,
        &format!("CREATE TABLE '{t}' (id BIGINT NOT NULL, d DATE)"),
    );
    for bad in [
        format!("INSERT INTO '{t}' VALUES ('abc', DATE '2020-01-01')"),
        format!("INSERT INTO '{t}' VALUES (1)"),
        format!("INSERT INTO '{t}' VALUES (NULL, DATE '2020-01-01')"),
        format!("INSERT INTO '{t}' (nope) VALUES (1)"),
    ] {
        let e = rt().block_on(s.execute(&bad)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}: {e}");
        assert!(!e.to_string().contains('\n'));
    }
    let e = rt()
        .block_on(s.execute(&format!("CREATE TABLE '{t}' (id BIGINT)")))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        !dir.path()
            .join("t/_delta_log/00000000000000000001.json")
            .exists(),
        "nothing committed"
    );
    // A table with a writer feature we do not implement refuses writes, naming it.
    let log0 = dir.path().join("t/_delta_log/00000000000000000000.json");
    let text = std::fs::read_to_string(&log0).unwrap();
    std::fs::write(
        &log0,
        text.replace(
            "\"writerFeatures\":[",
            "\"writerFeatures\":[\"allowColumnDefaults\",",
        ),
    )
    .unwrap();
    let e = rt()
        .block_on(s.execute(&format!("INSERT INTO '{t}' VALUES (1, DATE '2020-01-01')")))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("allowColumnDefaults"), "{e}");
    assert!(!dir
        .path()
        .join("t/_delta_log/00000000000000000001.json")
        .exists());
    assert_eq!(q(&s, &format!("SELECT count(*) FROM '{t}'")), vec!["0"]);
}

/// A RESTORE planned while a VACUUM has announced itself (VACUUM START) and not ended may check
/// that files exist which that VACUUM is about to delete: it is refused (a retryable conflict)
/// until the VACUUM END, then runs (red team helper-24).
#[test]
fn a_restore_waits_for_a_vacuum_still_deleting() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT)"));
    exec(&s, &format!("INSERT INTO '{t}' VALUES (1), (2)"));
    exec(&s, &format!("DELETE FROM '{t}' WHERE id = 1"));
    let log = dir.path().join("t/_delta_log");
    let announce = |v: u64, op: &str, engine: &str, params: serde_json::Value| {
        let line = serde_json::json!({"commitInfo": {"timestamp": 1, "operation": op, "operationParameters": params, "engineInfo": engine}});
        std::fs::write(log.join(format!("{v:020}.json")), format!("{line}\n")).unwrap();
    };
    let restore = || rt().block_on(s.execute(&format!("RESTORE TABLE '{t}' TO VERSION AS OF 1")));
    // Another engine's VACUUM: its END (naming no START) closes it.
    announce(
        3,
        "VACUUM START",
        "Apache-Spark/3.5.3 Delta-Lake/3.3.0",
        serde_json::json!({}),
    );
    let e = restore().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.to_string().contains("VACUUM"), "{e}");
    // This engine's VACUUM: an END naming no START (another engine's, e.g. of a run that began
    // long ago) does not close it (red team helper-25); only its own END does.
    announce(4, "VACUUM START", "delta-rlc/0.1.0", serde_json::json!({}));
    announce(
        5,
        "VACUUM END",
        "Apache-Spark/3.5.3 Delta-Lake/3.3.0",
        serde_json::json!({"status": "COMPLETED"}),
    );
    let e = restore().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.to_string().contains("version 4"), "{e}");
    assert!(!log.join(format!("{:020}.json", 6)).exists());
    announce(
        6,
        "VACUUM END",
        "delta-rlc/0.1.0",
        serde_json::json!({"status": "COMPLETED", "startVersion": "4"}),
    );
    assert_eq!(
        exec(&s, &format!("RESTORE TABLE '{t}' TO VERSION AS OF 1")),
        Some(7)
    );
    assert_eq!(q(&s, &format!("SELECT id FROM '{t}'")), vec!["1", "2"]);
}

#[test]
fn a_table_partitioned_by_all_of_its_columns_is_refused() {
    // Its data files would hold no column to count rows by: they would read back empty.
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    let e = rt()
        .block_on(s.execute(&format!("CREATE TABLE '{t}' (p BIGINT) PARTITIONED BY (p)")))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.to_string().contains("partitioned by all of its columns"),
        "{e}"
    );
    assert!(!dir.path().join("t/_delta_log").exists());
    exec(&s, &format!("CREATE TABLE '{t}' (p BIGINT, v BIGINT) PARTITIONED BY (p) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"));
    exec(&s, &format!("INSERT INTO '{t}' VALUES (1, 10)"));
    let e = rt()
        .block_on(s.execute(&format!("ALTER TABLE '{t}' DROP COLUMN v")))
        .unwrap_err();
    assert!(
        e.to_string().contains("partitioned by all of its columns"),
        "{e}"
    );
    assert_eq!(q(&s, &format!("SELECT p, v FROM '{t}'")), vec!["1|10"]);
}

#[test]
fn vacuum_cleans_expired_log_files_before_the_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = vacuum_session(8 * 3_600_000);
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '3', 'delta.logRetentionDuration' = 'interval 0 seconds')"));
    for i in 0..7 {
        exec(&s, &format!("INSERT INTO '{t}' VALUES ({i})"));
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let log = dir.path().join("t/_delta_log");
    assert!(log.join("00000000000000000006.checkpoint.parquet").exists());
    // VACUUM START (8) and END (9) come first; END's commit writes checkpoint 9; the cleanup
    // then runs ("eight hours later": every file is past the floor).
    q(&s, &format!("VACUUM '{t}' RETAIN 0 HOURS"));
    assert!(log.join("00000000000000000009.checkpoint.parquet").exists());
    for gone in [
        "00000000000000000000.json",
        "00000000000000000003.checkpoint.parquet",
        "00000000000000000006.checkpoint.parquet",
        "00000000000000000008.json",
    ] {
        assert!(
            !log.join(gone).exists(),
            "{gone}: expired, before the checkpoint"
        );
    }
    assert!(
        log.join("00000000000000000009.json").exists(),
        "the checkpoint version's commit stays"
    );
    assert_eq!(q(&s, &format!("SELECT count(*) FROM '{t}'")), vec!["7"]);
    let e = rt()
        .block_on(s.execute(&format!("SELECT count(*) FROM '{t}' VERSION AS OF 2")))
        .unwrap_err();
    assert!(
        e.to_string().contains("cannot be reconstructed") || e.to_string().contains("missing"),
        "{e}"
    );
}

#[test]
fn vacuum_refuses_short_retention_and_keeps_files_of_writers_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    // The retention check: below delta.deletedFileRetentionDuration is refused by default.
    let strict = SqlSession::new(Env::default(), ConflictConfig::default());
    exec(&strict, &format!("CREATE TABLE '{t}' (id BIGINT)"));
    let e = rt()
        .block_on(strict.execute(&format!("VACUUM '{t}' RETAIN 0 HOURS")))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("retentionDurationCheck"), "{e}");
    // With the check off, an uncommitted writer's file younger than the floor survives RETAIN 0.
    let loose = vacuum_session(0);
    let Ok(delta_rlc_engine::sql::Prepared::Write(txn)) =
        rt().block_on(strict.prepare(&format!("INSERT INTO '{t}' VALUES (1), (2)")))
    else {
        panic!("an INSERT prepares a write");
    };
    let written: Vec<String> = txn.adds().map(|a| a.path.clone()).collect();
    assert_eq!(written.len(), 1);
    let deleted = q(&loose, &format!("VACUUM '{t}' RETAIN 0 HOURS"));
    assert!(deleted.is_empty(), "{deleted:?}");
    assert!(dir.path().join("t").join(&written[0]).exists());
    // After the VACUUM START (1) and VACUUM END (2) commits, which hold no action to conflict.
    let v = rt().block_on(txn.commit()).unwrap().version;
    assert_eq!(v, Some(3));
    assert_eq!(
        q(&strict, &format!("SELECT count(*) FROM '{t}'")),
        vec!["2"]
    );
}

#[test]
fn a_transaction_open_past_the_limit_cannot_commit() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT)"));
    let Ok(delta_rlc_engine::sql::Prepared::Write(txn)) =
        rt().block_on(s.prepare(&format!("INSERT INTO '{t}' VALUES (1)")))
    else {
        panic!("an INSERT prepares a write");
    };
    let mut late = (*txn).clone();
    late.started_ms -= delta_rlc_engine::vacuum::MAX_TRANSACTION_MS + 1;
    let e = rt().block_on(late.commit()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.to_string().contains("transaction expired"), "{e}");
    assert_eq!(rt().block_on(txn.commit()).unwrap().version, Some(1));
}

#[cfg(unix)]
#[test]
fn vacuum_and_reads_never_follow_symlinks_out_of_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = vacuum_session(8 * 3_600_000);
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT)"));
    exec(&s, &format!("INSERT INTO '{t}' VALUES (1)"));
    // A directory outside the root, linked into it, with an old file; a linked file too.
    let outside = dir.path().join("v");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("old.txt"), b"x").unwrap();
    std::fs::write(dir.path().join("lone.parquet"), b"x").unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("t/archive")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("lone.parquet"),
        dir.path().join("t/lone.parquet"),
    )
    .unwrap();
    let deleted = q(&s, &format!("VACUUM '{t}' RETAIN 0 HOURS"));
    assert!(deleted.is_empty(), "{deleted:?}");
    assert!(outside.join("old.txt").exists());
    assert!(dir.path().join("lone.parquet").exists());
    // A data file replaced by a symlink to a Parquet file outside the root is refused on read.
    let snap = rt().block_on(async { DeltaTable::open(&t).unwrap().snapshot(None).await.unwrap() });
    let data = dir.path().join("t").join(&snap.files[0].path);
    let moved = dir.path().join("moved.parquet");
    std::fs::rename(&data, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &data).unwrap();
    let e = rt()
        .block_on(s.execute(&format!("SELECT * FROM '{t}'")))
        .unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
}

#[test]
fn reads_and_failed_creates_leave_no_directory() {
    let dir = tempfile::tempdir().unwrap();
    let s = session();
    let missing = dir.path().join("nosuch/x").display().to_string();
    let e = rt()
        .block_on(s.execute(&format!("SELECT * FROM '{missing}'")))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let bad = dir.path().join("bad").display().to_string();
    let e = rt()
        .block_on(s.execute(&format!(
            "CREATE TABLE '{bad}' (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '-1')"
        )))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// CONVERT TO DELTA (Delta Spark's grammar) adds the Parquet files in place: hive partition
/// values parsed as the declared type, row counts from the footers; a value that does not parse
/// is refused and leaves no table.
#[test]
fn convert_to_delta_adds_parquet_files_in_place() {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let write = |sub: &str, ids: Vec<i64>| {
        let d = root.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(ids))]).unwrap();
        let file = std::fs::File::create(d.join("part-0.parquet")).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    };
    write("day=1", vec![1, 2]);
    write("day=2", vec![3]);
    write("day=__HIVE_DEFAULT_PARTITION__", vec![4]);
    let t = root.display().to_string();
    let s = session();
    let e = rt()
        .block_on(s.execute(&format!(
            "CONVERT TO DELTA parquet.`{t}` PARTITIONED BY (day DATE)"
        )))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(!root.join("_delta_log").exists());
    let e = rt()
        .block_on(s.execute(&format!("CONVERT TO DELTA parquet.`{t}`")))
        .unwrap_err();
    assert!(e.to_string().contains("schema of partition columns"), "{e}");
    assert_eq!(
        exec(
            &s,
            &format!("CONVERT TO DELTA parquet.`{t}` PARTITIONED BY (day INT)")
        ),
        Some(0)
    );
    assert_eq!(
        q(&s, &format!("SELECT id, day FROM '{t}'")),
        vec!["1|1", "2|1", "3|2", "4|NULL"]
    );
    exec(&s, &format!("DELETE FROM '{t}' WHERE day = 1"));
    assert_eq!(q(&s, &format!("SELECT count(*) FROM '{t}'")), vec!["2"]);
}

/// A writer whose read version is old (a handle pinned to it) while log cleanup has removed the
/// commits after it (red team helper-25): its first put at the next version would succeed and
/// rewrite history, so it looks at the log first and meets the later versions as a lost race —
/// here one whose winners can no longer be read, so it fails and nothing is written.
#[test]
fn a_writer_pinned_to_a_cleaned_up_version_never_rewrites_history() {
    use arrow::array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let s = session();
    exec(&s, &format!("CREATE TABLE '{t}' (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '2', 'delta.logRetentionDuration' = 'interval 0 seconds')"));
    for i in 0..4 {
        exec(&s, &format!("INSERT INTO '{t}' VALUES ({i})"));
    }
    // Eight hours later (the files' times are now): the writer and the cleanup.
    let later = vacuum_session(8 * 3_600_000);
    let table = later.table(&t).unwrap();
    let pinned = rt().block_on(table.snapshot(Some(1))).unwrap();
    q(&later, &format!("VACUUM '{t}' RETAIN 0 HOURS"));
    let log = dir.path().join("t/_delta_log");
    assert!(
        !log.join(format!("{:020}.json", 2)).exists(),
        "cleanup removed version 2"
    );
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("id", arrow::datatypes::DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![100]))]).unwrap();
    let result = rt().block_on(async {
        let txn = delta_rlc_engine::Transaction::new(
            &table,
            Some(pinned),
            delta_rlc_engine::txn::Operation::Write,
        );
        let txn = delta_rlc_engine::ops::insert_txn(
            txn,
            &[batch],
            delta_rlc_engine::ops::InsertMode::Append,
        )
        .await
        .unwrap();
        txn.commit().await
    });
    assert!(result.is_err(), "{result:?}");
    assert!(
        !log.join(format!("{:020}.json", 2)).exists(),
        "version 2 not rewritten"
    );
    assert_eq!(q(&s, &format!("SELECT count(*) FROM '{t}'")), vec!["4"]);
}

/// A table below another one (created there, by any engine): the outer table's FULL VACUUM never
/// deletes the inner table's files, however old (red team helper-25), and CONVERT TO DELTA of the
/// outer directory refuses to take them as its own.
#[test]
fn vacuum_and_convert_leave_a_nested_tables_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("t").display().to_string();
    let inner = dir.path().join("t/inner").display().to_string();
    let s = vacuum_session(0);
    exec(&s, &format!("CREATE TABLE '{inner}' (id BIGINT)"));
    exec(&s, &format!("INSERT INTO '{inner}' VALUES (1), (2)"));
    let e = rt()
        .block_on(s.execute(&format!("CONVERT TO DELTA parquet.`{outer}`")))
        .unwrap_err();
    assert!(e.to_string().contains("is a Delta table"), "{e}");
    exec(&s, &format!("CREATE TABLE '{outer}' (id BIGINT)"));
    for entry in std::fs::read_dir(dir.path().join("t/inner")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|x| x == "parquet") {
            crate::common::age_file(&p, 9);
        }
    }
    assert!(q(&s, &format!("VACUUM '{outer}' RETAIN 0 HOURS")).is_empty());
    assert_eq!(q(&s, &format!("SELECT id FROM '{inner}'")), vec!["1", "2"]);
}
