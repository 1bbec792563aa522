//! CHECK constraints, NOT NULL and column invariants on every write path: a violating statement
//! fails with one line naming the rule and an offending row, and nothing is committed.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{latest_snapshot, rt, sorted_rows};

fn session(loc: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(22), ConflictConfig::default());
    s.register("t", loc);
    s
}

async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(&s.execute(sql).await.unwrap().batches)
}

/// Runs `sql`, expects a bad-input error containing every `needles`, and no new version.
async fn refused(s: &SqlSession, loc: &str, sql: &str, needles: &[&str]) {
    let before = latest_snapshot(loc).await.version;
    let err = s.execute(sql).await.expect_err(sql);
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{sql}: {err}");
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{sql}: one line: {msg}");
    for n in needles {
        assert!(msg.contains(n), "{sql}: {msg:?} lacks {n:?}");
    }
    assert_eq!(
        latest_snapshot(loc).await.version,
        before,
        "{sql}: nothing committed"
    );
}

#[test]
fn check_constraints_hold_on_every_write_path() {
    for dvs in [true, false] {
        let loc = format!("memory://constraints-{dvs}/t");
        let loc = loc.as_str();
        let s = session(loc);
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (id BIGINT, v BIGINT, name STRING) \
                 TBLPROPERTIES ('delta.enableDeletionVectors' = '{dvs}')"
            ))
            .await
            .unwrap();
            s.execute("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')")
                .await
                .unwrap();
            // Existing rows are checked: a rule one of them breaks is refused, naming that row.
            refused(
                &s,
                loc,
                "ALTER TABLE t ADD CONSTRAINT small CHECK (v < 15)",
                &["small", "v: 20"],
            )
            .await;
            s.execute("ALTER TABLE t ADD CONSTRAINT Positive CHECK (v > 0 AND length(name) < 5)")
                .await
                .unwrap();
            let snap = latest_snapshot(loc).await;
            // Stored as written (Delta Spark stores the constraint's own text too).
            assert_eq!(
                snap.config("delta.constraints.positive"),
                Some("v > 0 AND length(name) < 5")
            );
            assert!(snap.protocol.has_writer_feature("checkConstraints"));
            refused(
                &s,
                loc,
                "ALTER TABLE t ADD CONSTRAINT positive CHECK (v > 1)",
                &["already exists"],
            )
            .await;

            // Every write path, with a violating row among good ones.
            for (sql, shown) in [
                ("INSERT INTO t VALUES (3, 30, 'c'), (4, -4, 'd')", "v: -4"),
                // NULL is a violation (Delta's rule, not SQL's).
                ("INSERT INTO t VALUES (5, NULL, 'e')", "v: NULL"),
                ("INSERT INTO t VALUES (6, 60, 'toolong')", "name: 'toolong'"),
                ("UPDATE t SET v = v - 15 WHERE id <= 2", "v: -5"),
                (
                    "MERGE INTO t USING (SELECT 2 AS id, -2 AS v) s ON t.id = s.id \
                     WHEN MATCHED THEN UPDATE SET v = s.v",
                    "v: -2",
                ),
                (
                    "MERGE INTO t USING (SELECT 9 AS id, -9 AS v) s ON t.id = s.id \
                     WHEN NOT MATCHED THEN INSERT (id, v, name) VALUES (s.id, s.v, 'z')",
                    "v: -9",
                ),
            ] {
                refused(&s, loc, sql, &["CHECK constraint positive", shown]).await;
            }
            // Good rows pass on each path.
            s.execute("INSERT INTO t VALUES (3, 30, 'c')")
                .await
                .unwrap();
            s.execute("UPDATE t SET v = v + 1 WHERE id = 1")
                .await
                .unwrap();
            s.execute(
                "MERGE INTO t USING (SELECT 4 AS id, 40 AS v) s ON t.id = s.id \
                 WHEN NOT MATCHED THEN INSERT (id, v, name) VALUES (s.id, s.v, 'd')",
            )
            .await
            .unwrap();
            // A DELETE writes no new rows (or, copy-on-write, rows that already passed).
            s.execute("DELETE FROM t WHERE id = 2").await.unwrap();
            assert_eq!(
                rows(&s, "SELECT id, v, name FROM t").await,
                vec!["1|11|a", "3|30|c", "4|40|d"]
            );
            // DROP CONSTRAINT: the rule no longer applies; IF EXISTS; an unknown name is refused.
            refused(
                &s,
                loc,
                "ALTER TABLE t DROP CONSTRAINT nope",
                &["no constraint nope"],
            )
            .await;
            s.execute("ALTER TABLE t DROP CONSTRAINT IF EXISTS nope")
                .await
                .unwrap();
            s.execute("ALTER TABLE t DROP CONSTRAINT POSITIVE")
                .await
                .unwrap();
            s.execute("INSERT INTO t VALUES (7, -7, 'g')")
                .await
                .unwrap();
            assert_eq!(
                rows(&s, "SELECT count(*) FROM t WHERE v < 0").await,
                vec!["1"]
            );
            // Constraint keys change only through ADD / DROP CONSTRAINT.
            refused(
                &s,
                loc,
                "ALTER TABLE t SET TBLPROPERTIES ('delta.constraints.x' = 'id > 0')",
                &["ADD CONSTRAINT"],
            )
            .await;
        });
    }
}

#[test]
fn set_not_null_checks_existing_rows_and_then_every_write() {
    let loc = "memory://constraints-nn/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, v STRING, s STRUCT<a: BIGINT NOT NULL>)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, NULL, named_struct('a', 1)), (2, 'b', named_struct('a', 2))",
        )
        .await
        .unwrap();
        // A NOT NULL field inside a struct is violated by a NULL struct above it too, as Delta
        // Spark checks `s.a IS NOT NULL` (DELTA_NOT_NULL_CONSTRAINT_VIOLATED, checked on Spark 4).
        refused(
            &s,
            loc,
            "INSERT INTO t VALUES (2, 'b', NULL)",
            &["NOT NULL", "s.a"],
        )
        .await;
        refused(
            &s,
            loc,
            "INSERT INTO t VALUES (3, 'c', named_struct('a', CAST(NULL AS BIGINT)))",
            &["NOT NULL", "s.a"],
        )
        .await;
        refused(
            &s,
            loc,
            "ALTER TABLE t ALTER COLUMN v SET NOT NULL",
            &["NOT NULL", "column v", "id: 1"],
        )
        .await;
        s.execute("UPDATE t SET v = 'a' WHERE v IS NULL")
            .await
            .unwrap();
        s.execute("ALTER TABLE t CHANGE COLUMN v SET NOT NULL")
            .await
            .unwrap();
        let snap = latest_snapshot(loc).await;
        assert!(!snap.schema.field("v").unwrap().nullable);
        refused(
            &s,
            loc,
            "INSERT INTO t VALUES (4, NULL, NULL)",
            &["NOT NULL", "v"],
        )
        .await;
        refused(
            &s,
            loc,
            "UPDATE t SET v = NULL WHERE id = 2",
            &["NOT NULL", "v"],
        )
        .await;
        refused(
            &s,
            loc,
            "MERGE INTO t USING (SELECT 1 AS id) src ON t.id = src.id \
             WHEN MATCHED THEN UPDATE SET v = NULL",
            &["NOT NULL", "v"],
        )
        .await;
        s.execute("ALTER TABLE t ALTER COLUMN v DROP NOT NULL")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (4, NULL, named_struct('a', 4))")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, v FROM t").await,
            vec!["1|a", "2|b", "4|NULL"]
        );
    });
}

#[test]
fn a_constraint_this_engine_cannot_plan_refuses_the_write() {
    let loc = "memory://constraints-unplannable/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT)").await.unwrap();
        s.execute("ALTER TABLE t ADD CONSTRAINT pos CHECK (id > 0)")
            .await
            .unwrap();
        // As if another engine had written a rule in a dialect we do not parse.
        let mut txn = delta_rlc_engine::Transaction::new(
            &delta_rlc_engine::DeltaTable::open(loc).unwrap(),
            Some(latest_snapshot(loc).await),
            delta_rlc_engine::txn::Operation::SetTableProperties,
        );
        let mut m = txn.snapshot().unwrap().metadata.clone();
        m.configuration.insert(
            "delta.constraints.odd".into(),
            "id <=> frobnicate(id)".into(),
        );
        txn.actions
            .push(delta_rlc_protocol::actions::Action::Metadata(m));
        txn.commit().await.unwrap();
        let before = latest_snapshot(loc).await.version;
        let err = s.execute("INSERT INTO t VALUES (1)").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(
            err.to_string()
                .contains("cannot enforce CHECK constraint odd"),
            "{err}"
        );
        assert_eq!(latest_snapshot(loc).await.version, before);
    });
}

/// Generated columns: computed where a write does not give them (INSERT omitting them, UPDATE and
/// MERGE recomputing from new values), a given value must equal the expression's, and Spark's
/// rule (`value <=> expression`) holds for every row written.
#[test]
fn generated_columns_are_computed_and_checked_on_every_write_path() {
    let loc = "memory://constraints-generated/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, v BIGINT, double_v BIGINT GENERATED ALWAYS AS (v * 2), \
             tag STRING GENERATED ALWAYS AS (concat('k', CAST(id AS STRING))))",
        )
        .await
        .unwrap();
        let snap = latest_snapshot(loc).await;
        assert!(snap.protocol.has_writer_feature("generatedColumns"));
        assert_eq!(
            snap.schema
                .field("double_v")
                .unwrap()
                .metadata
                .get("delta.generationExpression"),
            Some(&serde_json::json!("v * 2"))
        );
        s.execute("INSERT INTO t (id, v) VALUES (1, 10), (2, NULL)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (3, 30, 60, 'k3')").await.unwrap();
        refused(&s, loc, "INSERT INTO t VALUES (4, 40, 81, 'k4')", &[
            "generated column double_v",
            "double_v: 81",
        ])
        .await;
        s.execute("UPDATE t SET v = v + 1 WHERE id = 1").await.unwrap();
        s.execute(
            "MERGE INTO t USING (SELECT 3 AS id, 5 AS v UNION ALL SELECT 9 AS id, 7 AS v) src \
             ON t.id = src.id WHEN MATCHED THEN UPDATE SET v = src.v \
             WHEN NOT MATCHED THEN INSERT (id, v) VALUES (src.id, src.v)",
        )
        .await
        .unwrap();
        refused(&s, loc, "UPDATE t SET double_v = 0 WHERE id = 1", &[
            "generated column double_v",
        ])
        .await;
        assert_eq!(
            rows(&s, "SELECT id, v, double_v, tag FROM t").await,
            vec!["1|11|22|k1", "2|NULL|NULL|k2", "3|5|10|k3", "9|7|14|k9"]
        );
        // An expression over another generated column, or one that cannot be planned, is refused
        // at CREATE.
        for bad in [
            "CREATE TABLE 'memory://constraints-generated-bad/g2' (a BIGINT, b BIGINT GENERATED ALWAYS AS (a + 1), c BIGINT GENERATED ALWAYS AS (b + 1))",
            "CREATE TABLE 'memory://constraints-generated-bad/g3' (a BIGINT, b BIGINT GENERATED ALWAYS AS (frobnicate(a)))",
        ] {
            let err = s.execute(bad).await.expect_err(bad);
            assert!(!err.to_string().contains('\n'), "{bad}: {err}");
        }
    });
}

/// A NOT NULL generated or identity column that a write leaves out is computed, then checked:
/// the write commits with the computed values (it failed as "NOT NULL violated" before the value
/// was computed), and a generation that yields NULL is still refused.
#[test]
fn not_null_generated_and_identity_columns_are_computed_before_the_check() {
    let loc = "memory://constraints-not-null-generated/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT NOT NULL GENERATED ALWAYS AS IDENTITY, v BIGINT, \
             g BIGINT NOT NULL GENERATED ALWAYS AS (v * 2))",
        )
        .await
        .unwrap();
        s.execute("INSERT INTO t (v) VALUES (1), (5)")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, v, g FROM t").await,
            vec!["1|1|2", "2|5|10"]
        );
        refused(
            &s,
            loc,
            "INSERT INTO t (v) VALUES (NULL)",
            &["NOT NULL", "g"],
        )
        .await;
        assert_eq!(rows(&s, "SELECT count(*) FROM t").await, vec!["2"]);
        // MERGE: `*` from a source without the generated (or identity) column computes it, on
        // update and insert alike.
        s.execute(
            "MERGE INTO t USING (SELECT * FROM (VALUES (5, 7), (9, 4)) AS x(k, v)) s \
             ON t.v = s.k WHEN MATCHED THEN UPDATE SET * \
             WHEN NOT MATCHED THEN INSERT *",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, v, g FROM t").await,
            vec!["1|1|2", "2|7|14", "3|4|8"]
        );
    });
}

/// `delta.appendOnly`: no statement removes or changes rows (with or without deletion vectors);
/// appends and compaction still commit.
#[test]
fn append_only_refuses_every_statement_that_removes_rows() {
    for dvs in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let loc = dir.path().join("t").display().to_string();
        let s = session(&loc);
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (id BIGINT NOT NULL, v BIGINT) TBLPROPERTIES ('delta.appendOnly' = 'true', 'delta.enableDeletionVectors' = '{dvs}')"
            ))
            .await
            .unwrap();
            s.execute("INSERT INTO t VALUES (1, 10), (2, 20)").await.unwrap();
            s.execute("INSERT INTO t VALUES (3, 30)").await.unwrap();
            for sql in [
                "DELETE FROM t WHERE id = 1",
                "UPDATE t SET v = 0 WHERE id = 2",
                "MERGE INTO t USING (SELECT 3 AS id, 0 AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
                "MERGE INTO t USING (SELECT 3 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",
            ] {
                refused(&s, &loc, sql, &["append-only"]).await;
            }
            s.execute("OPTIMIZE t").await.unwrap();
            s.execute("INSERT INTO t VALUES (4, 40)").await.unwrap();
            assert_eq!(
                rows(&s, "SELECT id, v FROM t").await,
                rows(&s, "SELECT * FROM (VALUES (1, 10), (2, 20), (3, 30), (4, 40)) AS x(id, v)").await,
                "dvs={dvs}"
            );
        });
    }
}
