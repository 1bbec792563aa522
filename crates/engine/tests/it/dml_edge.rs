//! Spark-semantics edge cases of DELETE / UPDATE / MERGE, and bad input leaving nothing committed.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{rt, sorted_rows};

fn session(name: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(11), ConflictConfig::default());
    s.register("t", &format!("memory://dml-edge-{name}/t"));
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, v STRING, n INT)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, 'a', 10), (2, NULL, 20), (3, 'c', NULL), (NULL, 'd', 40)",
        )
        .await
        .unwrap();
    });
    s
}

fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    rt().block_on(async { sorted_rows(&s.execute(sql).await.unwrap().batches) })
}

fn run(s: &SqlSession, sql: &str) -> Option<u64> {
    rt().block_on(async {
        s.execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .commit
            .and_then(|c| c.affected_rows)
    })
}

#[test]
fn nulls_in_predicates_never_match() {
    let s = session("nulls");
    assert_eq!(
        run(&s, "DELETE FROM t WHERE v <> 'a'"),
        Some(2),
        "NULL v is not deleted"
    );
    assert_eq!(rows(&s, "SELECT id, v FROM t"), vec!["1|a", "2|NULL"]);
    assert_eq!(run(&s, "UPDATE t SET n = 0 WHERE n > 5"), Some(2));
    assert_eq!(rows(&s, "SELECT id, n FROM t"), vec!["1|0", "2|0"]);
}

#[test]
fn merge_null_keys_never_match_and_insert() {
    let s = session("nullkeys");
    run(&s, "MERGE INTO t USING (SELECT CAST(NULL AS BIGINT) AS id, 'z' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)");
    assert_eq!(
        rows(&s, "SELECT count(*) FROM t WHERE id IS NULL"),
        vec!["2"]
    );
    assert_eq!(rows(&s, "SELECT count(*) FROM t WHERE v = 'z'"), vec!["1"]);
}

#[test]
fn merge_duplicate_source_keys_is_an_error_unless_unconditional_delete() {
    let s = session("dups");
    let e = rt()
        .block_on(s.execute("MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'x'"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("multiple source rows"), "{e}");
    assert_eq!(run(&s, "MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id WHEN MATCHED THEN DELETE"), Some(1));
    assert_eq!(rows(&s, "SELECT count(*) FROM t"), vec!["3"]);
}

#[test]
fn merge_conditional_clauses_first_match_wins() {
    let s = session("cond");
    run(
        &s,
        "MERGE INTO t USING (SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'w'), (9, 'new')) AS x(id, v)) s ON t.id = s.id \
         WHEN MATCHED AND s.v = 'x' THEN DELETE \
         WHEN MATCHED AND t.n >= 20 THEN UPDATE SET v = concat(s.v, '!') \
         WHEN MATCHED THEN UPDATE SET n = -1 \
         WHEN NOT MATCHED AND s.id > 5 THEN INSERT (id, v, n) VALUES (s.id, s.v, 0)",
    );
    assert_eq!(
        rows(&s, "SELECT id, v, n FROM t WHERE id IS NOT NULL"),
        vec!["2|y!|20", "3|c|-1", "9|new|0"]
    );
}

#[test]
fn merge_not_matched_by_source_and_star_forms() {
    let s = session("nmbs");
    run(
        &s,
        "MERGE INTO t USING (SELECT * FROM (VALUES (1, 'A', 100)) AS x(id, v, n)) s ON t.id = s.id \
         WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED BY SOURCE AND t.n >= 20 THEN DELETE WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 'orphan'",
    );
    assert_eq!(
        rows(&s, "SELECT id, v, n FROM t"),
        vec!["1|A|100", "3|orphan|NULL"]
    );
    run(&s, "MERGE INTO t USING (SELECT 7 AS id, 'seven' AS v, 7 AS n) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *");
    assert_eq!(rows(&s, "SELECT v FROM t WHERE id = 7"), vec!["seven"]);
}

/// `UPDATE SET *` and `INSERT *` find each target column's source column without regard to case,
/// as Spark resolves them: a source spelling `ID`, `V`, `N` sets `id`, `v`, `n` (it was refused,
/// "No field named s.id"; found by the simulator's added-column histories). Two source columns
/// of one name are ambiguous and refused, committing nothing.
#[test]
fn merge_star_takes_source_columns_without_regard_to_case() {
    let s = session("star-case");
    let affected = run(
        &s,
        "MERGE INTO t USING (SELECT * FROM (VALUES (1, 'one', 11), (8, 'eight', 88)) AS x(ID, V, N)) s \
         ON t.id = s.ID WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    );
    assert_eq!(affected, Some(2));
    assert_eq!(
        rows(&s, "SELECT id, v, n FROM t WHERE id IN (1, 8)"),
        vec!["1|one|11", "8|eight|88"]
    );
    let before = rows(&s, "SELECT id, v, n FROM t");
    let err = rt()
        .block_on(s.execute(
            "MERGE INTO t USING (SELECT 9 AS id, 'x' AS v, 'y' AS V, 1 AS n) s ON t.id = s.id \
             WHEN NOT MATCHED THEN INSERT *",
        ))
        .expect_err("two source columns named v");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(rows(&s, "SELECT id, v, n FROM t"), before);
}

#[test]
fn assignments_are_cast_to_the_column_type() {
    let s = session("casts");
    run(&s, "UPDATE t SET n = 7.0, id = '5' WHERE v = 'a'");
    assert_eq!(rows(&s, "SELECT id, n FROM t WHERE v = 'a'"), vec!["5|7"]);
    run(&s, "MERGE INTO t USING (SELECT '8' AS id) s ON t.id = CAST(s.id AS BIGINT) WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id, '3')");
    assert_eq!(rows(&s, "SELECT id, n FROM t WHERE id = 8"), vec!["8|3"]);
}

#[test]
fn bad_dml_is_one_clear_error_and_commits_nothing() {
    let s = session("bad");
    let before = rows(&s, "SELECT count(*) FROM delta_files('t')");
    for bad in [
        "UPDATE t SET nope = 1",
        "UPDATE t SET n = 'abc' WHERE id = 1",
        "DELETE FROM t WHERE nope = 1",
        "MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'x'",
        "MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN INSERT *",
        "MERGE INTO t USING (SELECT 1 AS id) s ON t.nope = s.id WHEN MATCHED THEN DELETE",
        "DELETE FROM t WHERE",
    ] {
        let e = rt().block_on(s.execute(bad)).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::InvalidArgument), "{bad}: {:?} {e}", e.kind());
        assert!(!e.to_string().contains('\n'), "{bad}: multi-line error");
    }
    assert_eq!(rows(&s, "SELECT count(*) FROM delta_files('t')"), before);
    let hist = rows(&s, "DESCRIBE HISTORY t");
    assert_eq!(hist.len(), 2, "only CREATE and INSERT were committed");
}

#[test]
fn row_ids_survive_dv_update_and_delete_and_show_in_delta_rows() {
    let mut s = SqlSession::new(Env::deterministic(12), ConflictConfig::default());
    s.register("r", "memory://dml-edge-rowids/r");
    run(&s, "CREATE TABLE r (id BIGINT, p STRING, v BIGINT) PARTITIONED BY (p) TBLPROPERTIES ('delta.enableRowTracking' = 'true')");
    run(&s, "INSERT INTO r SELECT value, CASE WHEN value % 2 = 0 THEN 'e' ELSE 'o' END, 0 FROM range(0, 40)");
    run(&s, "INSERT INTO r SELECT value, 'e', 0 FROM range(40, 50)");
    let ids = |s: &SqlSession| rows(s, "SELECT id, _row_id FROM delta_rows('r')");
    let before = ids(&s);
    assert_eq!(before.len(), 50);
    let distinct: std::collections::BTreeSet<&str> =
        before.iter().filter_map(|r| r.split('|').nth(1)).collect();
    assert_eq!(distinct.len(), 50, "row ids are unique");
    // A partition column and a data column in the predicate: 0, 10, 20, 30, 40, 45.
    assert_eq!(
        run(&s, "UPDATE r SET v = v + 1 WHERE p = 'e' AND id % 5 = 0"),
        Some(6)
    );
    assert_eq!(ids(&s), before, "UPDATE keeps every row id");
    assert_eq!(
        rows(
            &s,
            "SELECT id FROM delta_rows('r') WHERE _row_commit_version = 3"
        ),
        vec!["0", "10", "20", "30", "40", "45"],
        "updated rows get the UPDATE's commit version"
    );
    assert_eq!(
        rows(
            &s,
            "SELECT count(*) FROM delta_rows('r') WHERE _row_commit_version IN (1, 2)"
        ),
        vec!["44"]
    );
    // The old rows went into deletion vectors, not rewrites.
    assert_eq!(
        rows(&s, "SELECT sum(dv_cardinality) FROM delta_files('r')"),
        vec!["6"]
    );
    assert_eq!(run(&s, "DELETE FROM r WHERE v = 1 AND id > 20"), Some(3));
    let after = ids(&s);
    let kept: Vec<String> = before
        .into_iter()
        .filter(|r| !["30|", "40|", "45|"].iter().any(|d| r.starts_with(d)))
        .collect();
    assert_eq!(after, kept, "DELETE keeps the other rows' ids");
    assert_eq!(rows(&s, "SELECT sum(v), count(*) FROM r"), vec!["3|47"]);
    let plain = session("rowids-plain");
    let err = rt()
        .block_on(plain.execute("SELECT * FROM delta_rows('t')"))
        .unwrap_err();
    assert!(
        err.to_string().contains("row tracking is not enabled"),
        "{err}"
    );
}

#[test]
fn update_whose_predicate_names_every_column_reuses_the_matched_values() {
    // Pass two has nothing left to decode: the new images come from the matching pass's values.
    let s = session("allcols");
    assert_eq!(
        run(
            &s,
            "UPDATE t SET n = coalesce(n, 0) + 1 WHERE id IS NOT NULL OR v = 'd' OR n IS NULL"
        ),
        Some(4)
    );
    assert_eq!(
        rows(&s, "SELECT id, v, n FROM t"),
        vec!["1|a|11", "2|NULL|21", "3|c|1", "NULL|d|41"]
    );
    assert_eq!(
        run(&s, "UPDATE t SET v = 'z' WHERE n = 21 AND v IS NULL"),
        Some(1)
    );
    assert_eq!(
        rows(&s, "SELECT id, v, n FROM t"),
        vec!["1|a|11", "2|z|21", "3|c|1", "NULL|d|41"]
    );
}

/// Generated SQL: a 100,000-term OR chain and an IN list of 1,000,000 values plan and run (on a
/// statement thread with the CLI's stack size), with the same rows as their short forms.
#[test]
fn huge_or_chains_and_in_lists_run() {
    let worker = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(|| {
            let mut s = SqlSession::new(Env::deterministic(12), ConflictConfig::default());
            s.register("t", "memory://dml-edge-huge/t");
            rt().block_on(async {
                s.execute("CREATE TABLE t (id BIGINT, v BIGINT)")
                    .await
                    .unwrap();
                s.execute("INSERT INTO t SELECT value, value FROM range(0, 300000)")
                    .await
                    .unwrap();
                // Every third id among the first 300,000 (100,000 terms), plus one other column.
                let terms: Vec<String> = (0..100_000).map(|i| format!("id = {}", i * 3)).collect();
                let del = format!("DELETE FROM t WHERE {} OR v = -1", terms.join(" OR "));
                let out = s.execute(&del).await.unwrap();
                assert_eq!(out.commit.unwrap().affected_rows, Some(100_000));
                let list: Vec<String> = (0..1_000_000).map(|i| (i * 3 + 1).to_string()).collect();
                let upd = format!("UPDATE t SET v = -v WHERE id IN ({})", list.join(", "));
                let out = s.execute(&upd).await.unwrap();
                assert_eq!(out.commit.unwrap().affected_rows, Some(100_000));
                let terms: Vec<String> = (0..4000).map(|_| "1".to_string()).collect();
                let sum = format!("SELECT {} AS n", terms.join("+"));
                assert_eq!(
                    sorted_rows(&s.execute(&sum).await.unwrap().batches),
                    vec!["4000"]
                );
                let counts = s
                    .execute("SELECT count(*), count(*) FILTER (WHERE v < 0) FROM t")
                    .await
                    .unwrap();
                assert_eq!(sorted_rows(&counts.batches), vec!["200000|100000"]);
            });
        })
        .unwrap();
    worker.join().unwrap();
}

/// `USING (VALUES …) AS s(id, v)`: the alias's column list names the source columns, as in SELECT.
#[test]
fn merge_source_values_with_a_column_list() {
    let s = session("merge-values-alias");
    run(
        &s,
        "MERGE INTO t USING (VALUES (1, 'x'), (9, 'new')) AS s(id, v) ON t.id = s.id \
         WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
    );
    assert_eq!(
        rows(&s, "SELECT id, v FROM t WHERE id IN (1, 9)"),
        vec!["1|x", "9|new"]
    );
}

/// An UPDATE matching more rows than one round holds (`UPDATE_CHUNK_ROWS`) rewrites them in
/// several rounds: every row once, the same result as one round.
#[test]
fn update_in_rounds_rewrites_every_row_once() {
    let mut s = SqlSession::new(Env::deterministic(13), ConflictConfig::default());
    s.register("t", "memory://dml-edge-rounds/t");
    let per_file = 400_000u64;
    assert!(3 * per_file > delta_rlc_engine::ops::update::UPDATE_CHUNK_ROWS);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, v BIGINT)").await.unwrap();
        for f in 0..3 {
            s.execute(&format!(
                "INSERT INTO t SELECT value, 0 FROM range({}, {})",
                f * per_file,
                (f + 1) * per_file
            ))
            .await
            .unwrap();
        }
        let out = s
            .execute("UPDATE t SET v = id % 7 WHERE id % 2 = 0 OR id >= 100")
            .await
            .unwrap();
        let expected = (0..3 * per_file).filter(|i| i % 2 == 0 || *i >= 100).count() as u64;
        assert_eq!(out.commit.unwrap().affected_rows, Some(expected));
        let check = s
            .execute("SELECT count(*), count(DISTINCT id), sum(v), sum(CASE WHEN (id % 2 = 0 OR id >= 100) THEN id % 7 ELSE 0 END) FROM t")
            .await
            .unwrap();
        let row = sorted_rows(&check.batches);
        let parts: Vec<&str> = row[0].split('|').collect();
        assert_eq!(parts[0], (3 * per_file).to_string());
        assert_eq!(parts[1], (3 * per_file).to_string(), "no row twice");
        assert_eq!(parts[2], parts[3], "every matched row updated, no other");
    });
}

/// A DELETE or REPLACE WHERE whose predicate reads only partition columns removes whole files:
/// only those whose partition values make the predicate true. Pruning cannot reason about
/// `g / 2 = 0` and keeps every file, which removed every partition (found by the simulator's
/// integer-division predicates). NULL partitions never match.
#[test]
fn partition_only_predicates_remove_exactly_the_matching_partitions() {
    let mut s = SqlSession::new(Env::deterministic(11), ConflictConfig::default());
    s.register("p", "memory://dml-edge-partition-only/p");
    s.register("q", "memory://dml-edge-partition-only/q");
    rt().block_on(async {
        for t in ["p", "q"] {
            s.execute(&format!(
                "CREATE TABLE {t} (k BIGINT, g INT) PARTITIONED BY (g)"
            ))
            .await
            .unwrap();
            s.execute(&format!(
                "INSERT INTO {t} VALUES (1, 0), (2, 1), (3, 2), (4, 3), (5, NULL)"
            ))
            .await
            .unwrap();
        }
    });
    // Spark's `/` is DOUBLE division: g / 2 = 0 holds for g = 0 only.
    assert_eq!(run(&s, "DELETE FROM p WHERE g / 2 = 0"), Some(1));
    assert_eq!(
        rows(&s, "SELECT k, g FROM p"),
        vec!["2|1", "3|2", "4|3", "5|NULL"]
    );
    assert_eq!(
        run(&s, "DELETE FROM p WHERE g % 2 = 1 OR g IS NULL"),
        Some(3)
    );
    assert_eq!(rows(&s, "SELECT k, g FROM p"), vec!["3|2"]);
    run(&s, "INSERT INTO q REPLACE WHERE g / 2 = 1 SELECT 9, 2");
    assert_eq!(
        rows(&s, "SELECT k, g FROM q"),
        vec!["1|0", "2|1", "4|3", "5|NULL", "9|2"]
    );
}

/// An INSERT of no rows is recorded as a version, from SQL as from the library and Python (as
/// Delta Spark records an empty append): the rule is the operation's, not a front end's.
#[test]
fn an_insert_of_no_rows_commits_a_version_of_its_own() {
    let s = session("empty-insert");
    let versions = |s: &SqlSession| rows(s, "DESCRIBE HISTORY t").len();
    assert_eq!(versions(&s), 2);
    let version = rt().block_on(async {
        s.execute("INSERT INTO t SELECT * FROM t WHERE id > 100")
            .await
            .unwrap()
            .commit
            .map(|c| (c.version, c.affected_rows))
    });
    assert_eq!(version, Some((Some(2), Some(0))));
    assert_eq!(versions(&s), 3);
    assert_eq!(rows(&s, "SELECT count(*) FROM t"), vec!["4"]);
    let hist = rows(&s, "DESCRIBE HISTORY t");
    assert_eq!(
        hist.iter().filter(|r| r.contains("|WRITE|")).count(),
        2,
        "{hist:?}"
    );
}

/// DVs off, a rewritten file's rows are written once, in their order, the changed ones replaced
/// (as Spark rewrites a file): UPDATE writes one file per rewritten file, not survivors and
/// updated rows apart; DELETE's and MERGE's survivors share files with the statement's other new
/// rows. With row tracking, the image keeps every row's id and only the updated rows get the
/// UPDATE's commit version.
#[test]
fn copy_on_write_rewrites_are_one_image_in_row_order() {
    let mut s = SqlSession::new(Env::deterministic(13), ConflictConfig::default());
    s.register("c", "memory://dml-edge-cow/c");
    run(&s, "CREATE TABLE c (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableDeletionVectors' = 'false', 'delta.enableRowTracking' = 'true')");
    run(&s, "INSERT INTO c VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    run(&s, "INSERT INTO c VALUES (4, 'd'), (5, 'e'), (6, 'f')");
    let files = |s: &SqlSession| rows(s, "SELECT count(*) FROM delta_files('c')");
    let ids = |s: &SqlSession| rows(s, "SELECT id, _row_id FROM delta_rows('c')");
    let before = ids(&s);
    assert_eq!(run(&s, "UPDATE c SET v = 'B' WHERE id = 2"), Some(1));
    assert_eq!(files(&s), vec!["2"], "one image replaces the file");
    // One file holds ids 1..3: read alone, its rows come back in the order they were written.
    let in_order: Vec<String> = rt().block_on(async {
        let out = s
            .execute("SELECT id, v FROM c WHERE id <= 3")
            .await
            .unwrap();
        let mut v = Vec::new();
        for b in &out.batches {
            let id = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap();
            let val = b
                .column(1)
                .as_any()
                .downcast_ref::<arrow::array::StringArray>();
            for i in 0..b.num_rows() {
                let text = match val {
                    Some(a) => a.value(i).to_string(),
                    None => arrow::util::display::array_value_to_string(b.column(1), i).unwrap(),
                };
                v.push(format!("{}|{}", id.value(i), text));
            }
        }
        v
    });
    assert_eq!(in_order, vec!["1|a", "2|B", "3|c"]);
    assert_eq!(ids(&s), before, "the rewrite keeps every row id");
    assert_eq!(
        rows(
            &s,
            "SELECT id FROM delta_rows('c') WHERE _row_commit_version = 3"
        ),
        vec!["2"],
        "only the updated row gets the UPDATE's commit version"
    );
    // DELETE rewrites both files; their survivors share one.
    assert_eq!(run(&s, "DELETE FROM c WHERE id IN (1, 5)"), Some(2));
    assert_eq!(files(&s), vec!["1"]);
    // MERGE (DVs off) rewrites that file: its survivors, the updated and the inserted row in one.
    assert_eq!(
        run(&s, "MERGE INTO c USING (SELECT 3 AS id, 'C' AS v UNION ALL SELECT 7, 'g') s ON c.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"),
        Some(2)
    );
    assert_eq!(files(&s), vec!["1"]);
    assert_eq!(
        rows(&s, "SELECT id, v FROM c"),
        vec!["2|B", "3|C", "4|d", "6|f", "7|g"]
    );
    let after = ids(&s);
    let kept: Vec<&String> = before
        .iter()
        .filter(|r| ["2|", "3|", "4|", "6|"].iter().any(|p| r.starts_with(p)))
        .collect();
    assert_eq!(after.len(), 5);
    for r in kept {
        assert!(after.contains(r), "{r} keeps its row id: {after:?}");
    }
}

/// A MERGE whose key types meet only by rounding (DECIMAL(38,18) with DECIMAL(38,2): Spark 4's
/// common type is DECIMAL(38,2), so 1.005 = 1.01) matches as its join does. The key probe of a
/// DV table and the stats pre-filter compared exact values: the probe dropped the file and the
/// MERGE inserted 1.01 beside the 1.005 it matches (red team helper-48). Such key pairs have no
/// shared equality now, so the MERGE reads every target row; a pair that meets without rounding
/// still takes the probe.
#[test]
fn merge_keys_that_meet_by_rounding_match_as_the_join() {
    for (target, dv, stored, source, stored_after) in [
        (
            "DECIMAL(38,18)",
            true,
            "1.005",
            "CAST(1.01 AS DECIMAL(38,2))",
            "1.005000000000000000",
        ),
        (
            "DECIMAL(38,18)",
            false,
            "1.005",
            "CAST(1.01 AS DECIMAL(38,2))",
            "1.005000000000000000",
        ),
        (
            "DECIMAL(10,4)",
            false,
            "1.235",
            "CAST(1.24 AS DECIMAL(38,2))",
            "1.2350",
        ),
        (
            "DECIMAL(10,4)",
            true,
            "1.235",
            "CAST(1.24 AS DECIMAL(38,2))",
            "1.2350",
        ),
    ] {
        let mut s = SqlSession::new(Env::deterministic(11), ConflictConfig::default());
        let name = format!("rounded-{}-{dv}", target.replace([',', '(', ')'], "_"));
        s.register("t", &format!("memory://dml-edge-{name}/t"));
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (k {target}, a INT) TBLPROPERTIES ('delta.enableDeletionVectors' = '{dv}')"
            ))
            .await
            .unwrap();
            s.execute(&format!("INSERT INTO t VALUES (CAST(7 AS {target}), 0)"))
                .await
                .unwrap();
            s.execute(&format!("INSERT INTO t VALUES (CAST({stored} AS {target}), 0)"))
                .await
                .unwrap();
        });
        let affected = run(
            &s,
            &format!(
                "MERGE INTO t USING (SELECT {source} AS k, 9 AS a) s ON t.k = s.k \
                 WHEN MATCHED THEN UPDATE SET a = s.a WHEN NOT MATCHED THEN INSERT (k, a) VALUES (s.k, s.a)"
            ),
        );
        assert_eq!(affected, Some(1), "{target} dv={dv}");
        assert_eq!(
            rows(&s, "SELECT CAST(k AS STRING) AS ks, a FROM t WHERE a = 9"),
            vec![format!("{stored_after}|9")],
            "{target} dv={dv}: the MERGE updates the row its join matches and inserts nothing"
        );
        assert_eq!(
            rows(&s, "SELECT count(*) FROM t"),
            vec!["2"],
            "{target} dv={dv}"
        );
    }
}

/// Names of three parts read as Spark reads them (`spark::compound_names`): in `t.s.id` with `t`
/// an alias in scope, `s` is that table's struct column and `id` its field. DataFusion matched a
/// qualifier `(t, s)` to the source aliased `s`, so `ON t.s.id = s.id` compared the source with
/// itself and the MERGE updated every target row; `zzz.s.id` was the source's `id` too. And a
/// name both sides hold, unqualified in a value, is ambiguous (red team helper-49).
#[test]
fn merge_names_of_three_parts_and_ambiguous_names_mean_what_spark_reads() {
    let mut s = SqlSession::new(Env::deterministic(11), ConflictConfig::default());
    s.register("t", "memory://dml-edge-three-parts/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id INT, v STRING, s STRUCT<id: INT>)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, 'a', named_struct('id', 3)), (2, 'b', named_struct('id', 1)), \
             (3, 'c', named_struct('id', 2))",
        )
        .await
        .unwrap();
    });
    let affected = run(
        &s,
        "MERGE INTO t USING (SELECT 2 AS id, 'NEW' AS v) s ON t.s.id = s.id \
         WHEN MATCHED THEN UPDATE SET v = s.v",
    );
    assert_eq!(affected, Some(1));
    assert_eq!(rows(&s, "SELECT id, v FROM t"), vec!["1|a", "2|b", "3|NEW"]);
    assert_eq!(
        rows(&s, "SELECT x.s.id, x.id FROM t AS x WHERE x.s.id > 1"),
        vec!["2|3", "3|1"]
    );
    let before = rows(&s, "SELECT id, v FROM t");
    for refused in [
        "MERGE INTO t USING (SELECT 2 AS id, 'S2' AS v) s ON t.id = zzz.s.id WHEN MATCHED THEN UPDATE SET v = 'x'",
        "MERGE INTO t USING (SELECT 2 AS id, 'S2' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = v",
    ] {
        let err = rt().block_on(s.execute(refused)).expect_err(refused);
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{refused}: {err}");
    }
    assert_eq!(rows(&s, "SELECT id, v FROM t"), before);
}

/// Red team helper-50: `s.V`, with `s` both the table's alias and a struct column and `V` spelled
/// exactly as a mixed-case column, is the table's column `V` (Spark's reading): unquoted, the
/// planner lower-cased it, missed `V` and read the struct's field `v`, so a DELETE took the other
/// row. And a name a MERGE's target and source hold in different cases (`V`, `v`) is ambiguous.
#[test]
fn alias_columns_in_mixed_case_and_case_variant_names_in_merge() {
    let mut s = SqlSession::new(Env::deterministic(11), ConflictConfig::default());
    s.register("t", "memory://dml-edge-mixed-case/t");
    s.register("u", "memory://dml-edge-mixed-case/u");
    rt().block_on(async {
        for sql in [
            "CREATE TABLE t (id INT, s STRUCT<v: INT>, V INT)",
            "INSERT INTO t VALUES (1, named_struct('v', 5), 6), (2, named_struct('v', 6), 5)",
            "CREATE TABLE u (k INT, v INT)",
            "INSERT INTO u VALUES (1, 11)",
        ] {
            s.execute(sql).await.unwrap();
        }
    });
    assert_eq!(rows(&s, "SELECT id FROM t AS s WHERE s.V = 5"), vec!["2"]);
    assert_eq!(run(&s, "UPDATE t AS s SET V = s.V + 100"), Some(2));
    assert_eq!(rows(&s, "SELECT id, V FROM t"), vec!["1|106", "2|105"]);
    assert_eq!(run(&s, "DELETE FROM t AS s WHERE s.V = 105"), Some(1));
    assert_eq!(rows(&s, "SELECT id FROM t"), vec!["1"]);
    let before = rows(&s, "SELECT id, V FROM t");
    for refused in [
        "MERGE INTO t USING u AS src ON t.id = src.k WHEN MATCHED THEN UPDATE SET V = V + 1",
        "MERGE INTO t USING u AS src ON t.id = src.k WHEN MATCHED THEN UPDATE SET V = v + 1",
        "MERGE INTO t USING u AS src ON t.id = src.k WHEN MATCHED AND v > 10 THEN UPDATE SET V = 0",
    ] {
        let err = rt().block_on(s.execute(refused)).expect_err(refused);
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{refused}: {err}");
    }
    assert_eq!(rows(&s, "SELECT id, V FROM t"), before);
    assert_eq!(
        run(&s, "MERGE INTO t USING u AS src ON t.id = src.k WHEN MATCHED THEN UPDATE SET V = src.v + t.V"),
        Some(1)
    );
    assert_eq!(rows(&s, "SELECT id, V FROM t"), vec!["1|117"]);
}
