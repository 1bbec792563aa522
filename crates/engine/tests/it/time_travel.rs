//! `TIMESTAMP AS OF '…'` names the latest version committed at or before the timestamp.

use arrow::array::{Array, Int64Array, TimestampMillisecondArray};
use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{rt, sorted_rows};

fn fmt(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap()
        .format("%Y-%m-%d %H:%M:%S%.3f")
        .to_string()
}

/// `DESCRIBE HISTORY t`, newest first, as (version, timestamp in ms); every timestamp is set.
async fn history(s: &SqlSession) -> Vec<(i64, i64)> {
    let h = s.execute("DESCRIBE HISTORY t").await.unwrap().batches;
    let b = &h[0];
    let versions = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let times = b
        .column(1)
        .as_any()
        .downcast_ref::<TimestampMillisecondArray>()
        .unwrap();
    assert_eq!(times.null_count(), 0);
    (0..b.num_rows())
        .map(|r| (versions.value(r), times.value(r)))
        .collect()
}

#[test]
fn timestamp_as_of_resolves_to_the_version_committed_by_then() {
    let mut s = SqlSession::new(Env::deterministic(3), ConflictConfig::default());
    s.register("t", "memory://time-travel/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT)").await.unwrap();
        for i in 0..3 {
            s.execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
        }
        let h = history(&s).await;
        for (r, &(v, ts)) in h.iter().enumerate() {
            let at = |ms: i64| {
                let sql = format!("SELECT count(*) FROM t TIMESTAMP AS OF '{}'", fmt(ms));
                let s = &s;
                async move { sorted_rows(&s.execute(&sql).await.unwrap().batches) }
            };
            // Exactly at the commit, and just after it (before the next one), it is that version.
            assert_eq!(at(ts).await, vec![v.to_string()], "at version {v}");
            if r > 0 {
                assert_eq!(at(ts).await, at(h[r - 1].1 - 1).await);
            }
        }
        let first = h.last().unwrap().1;
        let e = s
            .execute(&format!(
                "SELECT * FROM t TIMESTAMP AS OF '{}'",
                fmt(first - 1000)
            ))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        let e = s
            .execute("SELECT * FROM t TIMESTAMP AS OF 'not a time'")
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    });
}

/// Delta Spark's `RESTORE [TABLE] t [TO] VERSION AS OF n | TIMESTAMP AS OF '…'`: the rows of that
/// version come back as a new version, in every spelling; the current version, a missing one and
/// a statement without a version are refused and commit nothing.
#[test]
fn restore_statement_brings_back_an_earlier_version() {
    let mut s = SqlSession::new(Env::deterministic(5), ConflictConfig::default());
    s.register("t", "memory://restore-sql/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT)").await.unwrap(); // v0
        s.execute("INSERT INTO t VALUES (1), (2)").await.unwrap(); // v1
        s.execute("INSERT INTO t VALUES (3)").await.unwrap(); // v2
        s.execute("DELETE FROM t WHERE id = 1").await.unwrap(); // v3
        async fn ids(s: &SqlSession) -> Vec<String> {
            let out = s.execute("SELECT id FROM t ORDER BY id").await.unwrap();
            sorted_rows(&out.batches)
        }
        s.execute("RESTORE TABLE t TO VERSION AS OF 1")
            .await
            .unwrap(); // v4
        assert_eq!(ids(&s).await, vec!["1", "2"]);
        s.execute("restore t version as of 2").await.unwrap(); // v5
        assert_eq!(ids(&s).await, vec!["1", "2", "3"]);
        let h = s
            .execute("DESCRIBE HISTORY t LIMIT 1")
            .await
            .unwrap()
            .batches;
        let ops = arrow::util::pretty::pretty_format_batches(&h)
            .unwrap()
            .to_string();
        assert!(ops.contains("RESTORE"), "{ops}");
        // By timestamp: v3's commit time names v3 (id 1 deleted).
        let (_, v3_ms) = *history(&s).await.iter().find(|(v, _)| *v == 3).unwrap();
        s.execute(&format!(
            "RESTORE TABLE t TO TIMESTAMP AS OF '{}'",
            fmt(v3_ms)
        ))
        .await
        .unwrap(); // v6
        assert_eq!(ids(&s).await, vec!["2", "3"]);
        for (sql, kind) in [
            (
                "RESTORE TABLE t TO VERSION AS OF 6",
                ErrorKind::InvalidArgument,
            ),
            ("RESTORE TABLE t TO VERSION AS OF 60", ErrorKind::NotFound),
            ("RESTORE TABLE t", ErrorKind::InvalidArgument),
            (
                "RESTORE TABLE t TO VERSION AS OF 1 extra",
                ErrorKind::InvalidArgument,
            ),
        ] {
            let e = s.execute(sql).await.unwrap_err();
            assert_eq!(e.kind(), kind, "{sql}: {e}");
        }
        assert_eq!(ids(&s).await, vec!["2", "3"]);
        let h = s
            .execute("DESCRIBE HISTORY t LIMIT 1")
            .await
            .unwrap()
            .batches;
        assert_eq!(
            h[0].column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .value(0),
            6,
            "a refused RESTORE committed"
        );
    });
}

/// A commit's time is what Delta Spark reads: without in-commit timestamps, the commit file's
/// modification time (made increasing), never the writer's clock in `commitInfo.timestamp`; with
/// them, the in-commit timestamp whatever the file's time. `DESCRIBE HISTORY` shows the same.
#[test]
fn a_commits_time_is_its_files_time_or_its_in_commit_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t");
    // The writer's clock says 2023 (a deterministic clock); the files will say 2020.
    let mut s = SqlSession::new(Env::deterministic(9), ConflictConfig::default());
    s.register("t", loc.to_str().unwrap());
    let set_mtime = |v: u64, ms: i64| {
        let p = loc.join(format!("_delta_log/{v:020}.json"));
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64))
            .unwrap();
    };
    const DAY: i64 = 86_400_000;
    let may_2020 = 1_588_291_200_000; // 2020-05-01 00:00 UTC
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT)").await.unwrap(); // v0
        s.execute("INSERT INTO t VALUES (1)").await.unwrap(); // v1
        s.execute("INSERT INTO t VALUES (2)").await.unwrap(); // v2
        s.execute("INSERT INTO t VALUES (3)").await.unwrap(); // v3
        set_mtime(0, may_2020);
        set_mtime(1, may_2020 + DAY);
        // v2's file is older than v1's: it counts as 1 ms after v1.
        set_mtime(2, may_2020 + DAY / 2);
        set_mtime(3, may_2020 + 3 * DAY);
        // Open again: nothing cached from before the files' times changed.
        let mut s = SqlSession::new(Env::deterministic(9), ConflictConfig::default());
        s.register("t", loc.to_str().unwrap());
        let at = |when: String| {
            let s = &s;
            async move {
                let sql = format!("SELECT count(*) FROM t TIMESTAMP AS OF '{when}'");
                sorted_rows(&s.execute(&sql).await.unwrap().batches)
            }
        };
        assert_eq!(at(fmt(may_2020 + DAY / 2)).await, vec!["0"], "v0 at noon");
        assert_eq!(at(fmt(may_2020 + DAY)).await, vec!["1"], "v1 at its file's time");
        assert_eq!(at(fmt(may_2020 + DAY + 1)).await, vec!["2"], "v2, monotonized");
        assert_eq!(at(fmt(may_2020 + 2 * DAY)).await, vec!["2"]);
        assert_eq!(at(fmt(may_2020 + 3 * DAY)).await, vec!["3"]);
        let h = history(&s).await;
        assert_eq!(
            h,
            vec![
                (3, may_2020 + 3 * DAY),
                (2, may_2020 + DAY + 1),
                (1, may_2020 + DAY),
                (0, may_2020)
            ]
        );
        // After the latest commit: refused, as Spark refuses it.
        let e = s
            .execute(&format!(
                "SELECT * FROM t TIMESTAMP AS OF '{}'",
                fmt(may_2020 + 4 * DAY)
            ))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("after the latest commit"), "{e}");
        // A table with in-commit timestamps: each commit's time is its own (the deterministic
        // clock's 2023), whatever its file says.
        let ict = dir.path().join("ict");
        s.register("ict", ict.to_str().unwrap());
        s.execute("CREATE TABLE ict (id BIGINT) TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')")
            .await
            .unwrap(); // v0
        s.execute("INSERT INTO ict VALUES (1)").await.unwrap(); // v1
        for v in 0..2u64 {
            let p = ict.join(format!("_delta_log/{v:020}.json"));
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(may_2020 as u64))
                .unwrap();
        }
        let h = s.execute("DESCRIBE HISTORY ict").await.unwrap().batches;
        let times = h[0]
            .column(1)
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .unwrap();
        let t1 = times.value(0);
        assert!(t1 > 1_690_000_000_000 && t1 < 1_800_000_000_000, "{t1}");
        let sql = format!("SELECT count(*) FROM ict TIMESTAMP AS OF '{}'", fmt(t1));
        assert_eq!(sorted_rows(&s.execute(&sql).await.unwrap().batches), vec!["1"]);
    });
}
