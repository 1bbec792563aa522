//! The change data feed: DELETE / UPDATE / MERGE / REPLACE WHERE write change files, appends and
//! whole-file deletes are read from their file actions, `table_changes` returns every change with
//! its version; the same answer on every layout (DVs on or off, partitioned or not, column mapping);
//! Databricks' table read exactly as delta-rs reads it; reconciled commits keep their change rows,
//! and the true conflict still aborts.

use delta_rlc_engine::conflict::{ConflictConfig, ConflictKind};
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession};
use delta_rlc_engine::EngineError;

use crate::common::{golden_dir, latest_snapshot, rt, sorted_rows};

fn session(loc: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(31), ConflictConfig::default());
    s.register("t", loc);
    s
}

async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(&s.execute(sql).await.unwrap().batches)
}

async fn exec_version(s: &SqlSession, loc: &str, sql: &str) -> u64 {
    s.execute(sql).await.unwrap();
    latest_snapshot(loc).await.version
}

/// Number of `cdc` actions in the commit of `version`.
async fn cdc_actions(loc: &str, version: u64) -> usize {
    let table = delta_rlc_engine::DeltaTable::open(loc).unwrap();
    let bytes = table
        .store
        .get(&format!("_delta_log/{version:020}.json"))
        .await
        .unwrap();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| l.starts_with("{\"cdc\""))
        .count()
}

/// One history of every statement kind; its change feed must be the same on every layout.
#[test]
fn every_statement_records_its_changes_on_every_layout() {
    for (i, (dvs, partitioned, mapping)) in [
        (true, false, "none"),
        (false, false, "none"),
        (true, true, "none"),
        (false, true, "name"),
        (true, false, "name"),
    ]
    .into_iter()
    .enumerate()
    {
        let loc = format!("memory://cdf-layouts-{i}/t");
        let s = session(&loc);
        rt().block_on(async {
            let part = if partitioned { "PARTITIONED BY (p)" } else { "" };
            s.execute(&format!(
                "CREATE TABLE t (id BIGINT, v STRING, p STRING) {part} TBLPROPERTIES \
                 ('delta.enableChangeDataFeed' = 'true', 'delta.enableDeletionVectors' = '{dvs}', \
                 'delta.columnMapping.mode' = '{mapping}')"
            ))
            .await
            .unwrap();
            let v_ins = exec_version(
                &s,
                &loc,
                "INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y'), (4, 'd', 'y'), (5, 'e', 'x')",
            )
            .await;
            let v_del = exec_version(&s, &loc, "DELETE FROM t WHERE id = 2").await;
            let v_upd = exec_version(&s, &loc, "UPDATE t SET v = 'C' WHERE id = 3").await;
            let v_merge = exec_version(
                &s,
                &loc,
                "MERGE INTO t USING (SELECT * FROM (VALUES (4, 'D', 'y'), (5, NULL, 'x'), (7, 'g', 'y')) AS s(id, v, p)) s \
                 ON t.id = s.id WHEN MATCHED AND s.v IS NULL THEN DELETE \
                 WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
            )
            .await;
            s.execute("OPTIMIZE t").await.unwrap();
            let v_part = exec_version(&s, &loc, "DELETE FROM t WHERE p = 'y'").await;
            let v_app = exec_version(&s, &loc, "INSERT INTO t VALUES (8, 'h', 'x')").await;
            let mut expected: Vec<String> = [
                (1, "a", "x", "insert", v_ins),
                (2, "b", "x", "insert", v_ins),
                (3, "c", "y", "insert", v_ins),
                (4, "d", "y", "insert", v_ins),
                (5, "e", "x", "insert", v_ins),
                (2, "b", "x", "delete", v_del),
                (3, "c", "y", "update_preimage", v_upd),
                (3, "C", "y", "update_postimage", v_upd),
                (4, "d", "y", "update_preimage", v_merge),
                (4, "D", "y", "update_postimage", v_merge),
                (5, "e", "x", "delete", v_merge),
                (7, "g", "y", "insert", v_merge),
                (3, "C", "y", "delete", v_part),
                (4, "D", "y", "delete", v_part),
                (7, "g", "y", "delete", v_part),
                (8, "h", "x", "insert", v_app),
            ]
            .iter()
            .map(|(id, v, p, c, ver)| format!("{id}|{v}|{p}|{c}|{ver}"))
            .collect();
            expected.sort();
            let layout = format!("dvs={dvs} partitioned={partitioned} mapping={mapping}");
            assert_eq!(
                rows(
                    &s,
                    "SELECT id, v, p, _change_type, _commit_version FROM table_changes('t', 1)"
                )
                .await,
                expected,
                "{layout}"
            );
            // Appends need no change files; DELETE, UPDATE and MERGE write them; a whole-file
            // (partition) delete is read from its removes.
            assert_eq!(cdc_actions(&loc, v_ins).await, 0, "{layout}");
            assert_eq!(cdc_actions(&loc, v_app).await, 0, "{layout}");
            for v in [v_del, v_upd, v_merge] {
                assert!(cdc_actions(&loc, v).await > 0, "{layout}: version {v}");
            }
            assert_eq!(
                cdc_actions(&loc, v_part).await > 0,
                !partitioned,
                "{layout}"
            );
            // A sub-range, and the table's rows unaffected by reading its changes.
            assert_eq!(
                rows(
                    &s,
                    &format!("SELECT id, _change_type FROM table_changes('t', {v_upd}, {v_upd})")
                )
                .await,
                vec!["3|update_postimage", "3|update_preimage"],
                "{layout}"
            );
            assert_eq!(
                rows(&s, "SELECT id, v, p FROM t").await,
                vec!["1|a|x", "8|h|x"],
                "{layout}"
            );
        });
    }
}

/// Overwrites are read from their file actions (every old row deleted, every new row inserted);
/// a REPLACE WHERE on data columns writes change files for both its deletes and its inserts.
#[test]
fn overwrite_and_replace_where_changes() {
    let loc = "memory://cdf-overwrite/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'delta.enableDeletionVectors' = 'true')",
        )
        .await
        .unwrap();
        s.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
            .await
            .unwrap();
        let v_rw = exec_version(
            &s,
            loc,
            "INSERT INTO t REPLACE WHERE id >= 2 VALUES (2, 'B'), (4, 'd')",
        )
        .await;
        assert!(cdc_actions(loc, v_rw).await > 0);
        let v_ow = exec_version(&s, loc, "INSERT OVERWRITE t VALUES (9, 'z')").await;
        assert_eq!(cdc_actions(loc, v_ow).await, 0);
        assert_eq!(
            rows(
                &s,
                &format!("SELECT id, v, _change_type, _commit_version FROM table_changes('t', {v_rw})")
            )
            .await,
            vec![
                format!("1|a|delete|{v_ow}"),
                format!("2|B|delete|{v_ow}"),
                format!("2|B|insert|{v_rw}"),
                format!("2|b|delete|{v_rw}"),
                format!("3|c|delete|{v_rw}"),
                format!("4|d|delete|{v_ow}"),
                format!("4|d|insert|{v_rw}"),
                format!("9|z|insert|{v_ow}"),
            ]
        );
    });
}

/// Bad ranges and versions whose changes were never recorded: one clear error each.
#[test]
fn ranges_and_unrecorded_versions_are_refused() {
    let loc = "memory://cdf-ranges/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        )
        .await
        .unwrap();
        s.execute("INSERT INTO t VALUES (1), (2)").await.unwrap();
        let v_on = exec_version(
            &s,
            loc,
            "ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')",
        )
        .await;
        let v_del = exec_version(&s, loc, "DELETE FROM t WHERE id = 1").await;
        // From the version that turned it on: recorded.
        assert_eq!(
            rows(
                &s,
                &format!("SELECT id, _change_type FROM table_changes('t', {v_on})")
            )
            .await,
            vec!["1|delete"]
        );
        // End past the latest version is clamped.
        assert_eq!(
            rows(
                &s,
                &format!("SELECT id FROM table_changes('t', {v_del}, 99)")
            )
            .await,
            vec!["1"]
        );
        for (sql, needle) in [
            (
                "SELECT * FROM table_changes('t', 0)",
                "not recorded for version 1",
            ),
            (
                "SELECT * FROM table_changes('t', 99)",
                "after the latest version",
            ),
            (
                &format!("SELECT * FROM table_changes('t', {v_del}, {v_on})") as &str,
                "before it starts",
            ),
            ("SELECT * FROM table_changes('t')", "takes a table"),
        ] {
            let err = s.execute(sql).await.expect_err(sql).to_string();
            assert!(err.contains(needle), "{sql}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    });
}

/// Databricks' table (DV deletes without change files, UPDATE/MERGE with them, OPTIMIZE): the
/// full feed from version 0 is the 46 rows delta-rs's own test expects.
#[test]
fn databricks_change_feed_with_deletion_vectors_reads_exactly() {
    let loc = golden_dir().join("cdf-table-with-cdc-and-dvs");
    let loc = loc.to_str().unwrap();
    let s = session(loc);
    let expected = [
        "0|new|insert|25",
        "1|after-large-delete|insert|25",
        "1|initial|insert|0",
        "1|initial|update_preimage|9",
        "1|update1|delete|10",
        "1|update1|update_postimage|9",
        "10|merge1-insert|insert|18",
        "11||delete|22",
        "11||update_postimage|20",
        "11|merge1-insert|insert|18",
        "11|merge1-insert|update_preimage|20",
        "12|merge2-insert|insert|22",
        "2||insert|25",
        "2|insert1|insert|1",
        "2|insert1|update_preimage|9",
        "2|update1|update_postimage|9",
        "2|update1|update_preimage|12",
        "2|update2|delete|24",
        "2|update2|update_postimage|12",
        "3|insert1-delete1|delete|2",
        "3|insert1-delete1|insert|1",
        "3|insert1-delete1|insert|4",
        "3|insert1-delete1|update_preimage|9",
        "3|update1|delete|24",
        "3|update1|update_postimage|9",
        "4|insert1-delete2|delete|24",
        "4|insert1-delete2|delete|5",
        "4|insert1-delete2|insert|1",
        "4|insert1-delete2|insert|7",
        "5|insert1-delete2|delete|5",
        "5|insert1-delete2|insert|1",
        "5|insert2|delete|24",
        "5|insert2|insert|8",
        "6|insert3|delete|24",
        "6|insert3|insert|14",
        "7|insert3|delete|16",
        "7|insert3|insert|14",
        "8|insert4|delete|16",
        "8|insert4|insert|15",
        "9|insert4|insert|15",
        "9|insert4|update_preimage|18",
        "9|merge1-update|delete|24",
        "9|merge1-update|update_postimage|18",
    ];
    rt().block_on(async {
        let got = rows(
            &s,
            "SELECT id, coalesce(comment, ''), _change_type, _commit_version FROM table_changes('t', 0)",
        )
        .await;
        let mut want: Vec<String> = expected.iter().map(|r| r.to_string()).collect();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(
            rows(
                &s,
                "SELECT DISTINCT _commit_timestamp FROM table_changes('t', 0, 0)"
            )
            .await,
            vec!["2024-12-13T06:07:53.501Z"]
        );
    });
}

/// Reconciled commits keep their change rows: a DV DELETE that merges its DV with a concurrent
/// DELETE of other rows of the same file, and an UPDATE that does the same, each record exactly
/// their own rows at their own version. The twin: the same row deleted concurrently still aborts,
/// and the feed shows only the winner's change.
#[test]
fn reconciled_commits_keep_their_change_rows_and_true_conflicts_abort() {
    for overlap in [false, true] {
        let loc = format!("memory://cdf-reconcile-{overlap}/t");
        let s = session(&loc);
        rt().block_on(async {
            s.execute(
                "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'delta.enableDeletionVectors' = 'true')",
            )
            .await
            .unwrap();
            s.execute("INSERT INTO t SELECT value, 'x' FROM range(0, 100)")
                .await
                .unwrap();
            let base = latest_snapshot(&loc).await.version;
            let loser_sql = if overlap {
                "UPDATE t SET v = 'u' WHERE id IN (10, 20)"
            } else {
                "UPDATE t SET v = 'u' WHERE id IN (11, 21)"
            };
            let Prepared::Write(loser) = s.prepare(loser_sql).await.unwrap() else {
                panic!("not a write")
            };
            let Prepared::Write(other) = s.prepare("DELETE FROM t WHERE id = 30").await.unwrap()
            else {
                panic!("not a write")
            };
            let v_win = exec_version(&s, &loc, "DELETE FROM t WHERE id IN (10, 20)").await;
            let r = other.commit().await.unwrap();
            assert!(
                r.events
                    .iter()
                    .any(|e| e.name == "delta.rowLevelConcurrency.deletionVectorsMerged"),
                "{:?}",
                r.events
            );
            let v_other = r.version.unwrap();
            let mut want = vec![
                format!("10|x|delete|{v_win}"),
                format!("20|x|delete|{v_win}"),
                format!("30|x|delete|{v_other}"),
            ];
            match loser.commit().await {
                Ok(r) if !overlap => {
                    assert!(
                        r.events
                            .iter()
                            .any(|e| e.name == "delta.rowLevelConcurrency.deletionVectorsMerged"),
                        "{:?}",
                        r.events
                    );
                    let v = r.version.unwrap();
                    for id in [11, 21] {
                        want.push(format!("{id}|u|update_postimage|{v}"));
                        want.push(format!("{id}|x|update_preimage|{v}"));
                    }
                }
                Err(EngineError::Conflict(c)) if overlap => {
                    assert_eq!(c.winning_version, v_win, "{c}");
                    assert!(
                        matches!(
                            c.kind,
                            ConflictKind::ConcurrentDeleteRead | ConflictKind::ConcurrentDeleteDelete
                        ),
                        "{c}"
                    );
                }
                other => panic!("overlap={overlap}: {other:?}"),
            }
            want.sort();
            assert_eq!(
                rows(
                    &s,
                    &format!("SELECT id, v, _change_type, _commit_version FROM table_changes('t', {})", base + 1)
                )
                .await,
                want,
                "overlap={overlap}"
            );
            let live: Vec<String> = rows(&s, "SELECT id FROM t WHERE v = 'u'").await;
            assert_eq!(live.len(), if overlap { 0 } else { 2 });
            assert_eq!(
                rows(&s, "SELECT count(*) FROM t").await,
                vec!["97".to_string()]
            );
        });
    }
}

/// MERGE WITH SCHEMA EVOLUTION adds the source's new columns in the MERGE's own commit; the change
/// feed then carries them (old rows' pre-images NULL), and a column-mapped table gives the new
/// column a physical name. Without the clause, the extra source column is not added.
#[test]
fn merge_with_schema_evolution_adds_columns_in_one_commit() {
    for mapping in ["none", "name"] {
        let loc = format!("memory://merge-evolution-{mapping}/t");
        let s = session(&loc);
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES \
                 ('delta.enableChangeDataFeed' = 'true', 'delta.columnMapping.mode' = '{mapping}')"
            ))
            .await
            .unwrap();
            s.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
                .await
                .unwrap();
            let source = "(SELECT * FROM (VALUES (2, 'B', 20), (3, 'c', 30)) AS s(id, v, extra)) s";
            s.execute(&format!(
                "MERGE INTO t USING {source} ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            ))
            .await
            .unwrap();
            assert_eq!(latest_snapshot(&loc).await.schema.fields.len(), 2);
            let before = latest_snapshot(&loc).await.version;
            let v = exec_version(
                &s,
                &loc,
                &format!(
                    "MERGE WITH SCHEMA EVOLUTION INTO t USING {source} ON t.id = s.id \
                     WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
                ),
            )
            .await;
            assert_eq!(v, before + 1, "one commit");
            let snap = latest_snapshot(&loc).await;
            let extra = snap.schema.field("extra").expect("column added");
            assert_eq!(
                extra.metadata.contains_key("delta.columnMapping.physicalName"),
                mapping == "name"
            );
            assert_eq!(
                rows(&s, "SELECT id, v, extra FROM t").await,
                vec!["1|a|NULL", "2|B|20", "3|c|30"],
                "mapping={mapping}"
            );
            assert_eq!(
                rows(
                    &s,
                    &format!("SELECT id, v, extra, _change_type FROM table_changes('t', {v})")
                )
                .await,
                vec!["2|B|20|update_postimage", "2|B|NULL|update_preimage", "3|c|30|update_postimage", "3|c|NULL|update_preimage"],
                "mapping={mapping}"
            );
        });
    }
}

/// A source that lacks a target column: `UPDATE SET *` / `INSERT *` are refused without schema
/// evolution (nothing commits), and with it the column is kept by UPDATE and NULL for INSERT
/// (Delta Spark's rule), the source's new column added in the same commit.
#[test]
fn merge_star_with_a_source_lacking_a_target_column() {
    for mapping in ["none", "name"] {
        let loc = format!("memory://merge-star-lacking-{mapping}/t");
        let s = session(&loc);
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (id BIGINT, v STRING, w INT) TBLPROPERTIES \
                 ('delta.columnMapping.mode' = '{mapping}')"
            ))
            .await
            .unwrap();
            s.execute("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20)")
                .await
                .unwrap();
            let source =
                "(SELECT * FROM (VALUES (2, 200, 'x2'), (3, 300, 'x3')) AS s(id, w, extra)) s";
            let clauses = "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *";
            let before = latest_snapshot(&loc).await.version;
            let err = s
                .execute(&format!(
                    "MERGE INTO t USING {source} ON t.id = s.id {clauses}"
                ))
                .await
                .unwrap_err();
            assert!(err.to_string().contains("need source column v"), "{err}");
            assert_eq!(
                latest_snapshot(&loc).await.version,
                before,
                "nothing committed"
            );
            let v = exec_version(
                &s,
                &loc,
                &format!(
                    "MERGE WITH SCHEMA EVOLUTION INTO t USING {source} ON t.id = s.id {clauses}"
                ),
            )
            .await;
            assert_eq!(v, before + 1);
            assert_eq!(
                rows(&s, "SELECT id, v, w, extra FROM t ORDER BY id").await,
                vec!["1|a|10|NULL", "2|b|200|x2", "3|NULL|300|x3"],
                "mapping={mapping}"
            );
        });
    }
}
