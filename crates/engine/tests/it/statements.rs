//! A statement means exactly what it says: quotes survive every re-assembly of statement text,
//! scripts split only at top-level `;`, COPY never writes into a table, MERGE refuses unknown
//! columns, a folder with a `_delta_log` is always a table, and ADD COLUMNS cannot add an identity.
//! Each case below lost or corrupted data before (issue: "A statement means exactly what it says").

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{split_statements, statement_complete, SqlSession};

use crate::common::{rt, sorted_rows};

pub(crate) fn session() -> SqlSession {
    SqlSession::new(Env::deterministic(44), ConflictConfig::default())
}

pub(crate) async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(
        &s.execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .batches,
    )
}

pub(crate) async fn err(s: &SqlSession, sql: &str) -> String {
    let e = s.execute(sql).await.expect_err(sql).to_string();
    assert!(!e.contains('\n'), "{sql}: {e}");
    e
}

/// A table of strings, each row's literal chosen to break a parser that loses quotes.
async fn names_table(s: &SqlSession, path: &str) {
    s.execute(&format!("CREATE TABLE '{path}' (id BIGINT, name STRING)"))
        .await
        .unwrap();
    s.execute(&format!(
        "INSERT INTO '{path}' VALUES (1, 'x'), (2, 'it''s'), (3, ' OR ''1''=''1'), (4, 'a;b'), (5, '-- c'), (6, 'é' || chr(92) || 'n')"
    ))
    .await
    .unwrap();
}

#[test]
fn quoted_literals_mean_what_they_say() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("d").to_string_lossy().to_string();
    let s = session();
    rt().block_on(async {
        names_table(&s, &path).await;
        // The injection: one string literal, equal to no row.
        let out = s
            .execute(&format!(
                "DELETE FROM '{path}' WHERE name = 'x'' OR ''1''=''1'"
            ))
            .await
            .unwrap();
        assert_eq!(out.commit.and_then(|c| c.affected_rows).unwrap_or(0), 0);
        assert_eq!(
            rows(&s, &format!("SELECT count(*) FROM '{path}'")).await,
            vec!["6"]
        );
        assert_eq!(rows(&s, "SELECT 'it''s'").await, vec!["it's"]);
        assert_eq!(
            rows(&s, &format!("SELECT id FROM '{path}' WHERE name = 'it''s'")).await,
            vec!["2"]
        );
        // UPDATE: a value and a predicate with quotes, semicolons and comment markers inside.
        s.execute(&format!(
            "UPDATE '{path}' SET name = 'o''k; -- still a string' WHERE name = ' OR ''1''=''1'"
        ))
        .await
        .unwrap();
        assert_eq!(
            rows(
                &s,
                &format!("SELECT id, name FROM '{path}' WHERE id IN (1, 3)")
            )
            .await,
            vec!["1|x", "3|o'k; -- still a string"]
        );
        // A CHECK constraint with a doubled quote is refused: Spark, which reads the log too,
        // has no doubled-quote escape and would read `'x'' OR …'` as adjacent literals joined.
        let e = err(
            &s,
            &format!(
                "ALTER TABLE '{path}' ADD CONSTRAINT no_quote CHECK (name <> 'x'' OR ''1''=''1')"
            ),
        )
        .await;
        assert!(
            e.contains("a quote doubled inside the string literal"),
            "{e}"
        );
        // One both read alike is saved to the log as written, and means what it says.
        s.execute(&format!(
            "ALTER TABLE '{path}' ADD CONSTRAINT no_or CHECK (name <> 'x; -- OR 1=1')"
        ))
        .await
        .unwrap();
        let e = err(
            &s,
            &format!("INSERT INTO '{path}' VALUES (7, 'x; -- OR 1=1')"),
        )
        .await;
        assert!(e.contains("no_or"), "{e}");
        s.execute(&format!("INSERT INTO '{path}' VALUES (8, 'x')"))
            .await
            .unwrap();
        let props = rows(&s, &format!("SHOW TBLPROPERTIES '{path}'")).await;
        assert!(
            props
                .iter()
                .any(|p| p.contains("delta.constraints.no_or") && p.contains("'x; -- OR 1=1'")),
            "{props:?}"
        );
        // A quoted identifier with a doubled quote inside.
        assert_eq!(rows(&s, "SELECT 1 AS `a``b`").await, vec!["1"]);
        // Literals ending in doubled quotes, through MERGE's source query, condition and values
        // (sqlparser prints 'a''''' as 'a''': a statement is never re-printed).
        s.execute(&format!(
            "MERGE INTO '{path}' t USING (SELECT 1 AS id, 'q''''' AS name) s ON t.id = s.id \
             WHEN MATCHED AND s.name = 'q''''' THEN UPDATE SET name = s.name || ''''"
        ))
        .await
        .unwrap();
        assert_eq!(
            rows(&s, &format!("SELECT name FROM '{path}' WHERE id = 1")).await,
            vec!["q'''"]
        );
        s.execute(&format!(
            "UPDATE '{path}' SET name = 'z''' WHERE name = 'q'''''''"
        ))
        .await
        .unwrap();
        assert_eq!(
            rows(&s, &format!("SELECT name FROM '{path}' WHERE id = 1")).await,
            vec!["z'"]
        );
    });
}

#[test]
fn scripts_split_only_at_top_level_semicolons() {
    let script = "DELETE FROM './sh' -- remove the test row;\nWHERE id = 1;\nSELECT 'a;b' /* ; */;";
    assert_eq!(
        split_statements(script).unwrap(),
        vec![
            "DELETE FROM './sh' -- remove the test row;\nWHERE id = 1",
            "SELECT 'a;b' /* ; */"
        ]
    );
    for (text, complete) in [
        ("DELETE FROM t -- remove the test row;\n", false),
        (
            "DELETE FROM t -- remove the test row;\nWHERE id = 1;\n",
            true,
        ),
        ("SELECT 'a;\n", false),
        ("SELECT 'a;\nb';\n", true),
        ("SELECT 1 /* ;\n", false),
        ("SELECT 1; -- done\n", true),
        ("SELECT \"a;\n", false),
    ] {
        assert_eq!(statement_complete(text), complete, "{text:?}");
    }
}

#[test]
fn copy_never_writes_into_a_table() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path().join("t").to_string_lossy().to_string();
    let s = session();
    rt().block_on(async {
        names_table(&s, &table).await;
        let log_before: Vec<_> = std::fs::read_dir(format!("{table}/_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let files_before = std::fs::read_dir(&table).unwrap().count();
        for target in [
            format!("{table}/_delta_log/00000000000000000001.json"),
            format!("{table}/_delta_log/00000000000000000009.json"),
            format!("{table}/part-0000.parquet"),
            format!("{table}/sub/out.csv"),
            table.clone(),
        ] {
            let e = err(
                &s,
                &format!("COPY (SELECT 1 AS x) TO '{target}' STORED AS CSV"),
            )
            .await;
            assert!(e.contains("inside the Delta table"), "{target}: {e}");
        }
        let log_after: Vec<_> = std::fs::read_dir(format!("{table}/_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(log_before.len(), log_after.len());
        assert_eq!(std::fs::read_dir(&table).unwrap().count(), files_before);
        assert_eq!(
            rows(&s, &format!("SELECT count(*) FROM '{table}'")).await,
            vec!["6"]
        );
        let e = err(
            &s,
            &format!(
                "COPY (SELECT 1 AS x) TO '{}' STORED AS NOSUCH",
                tmp.path().join("o.x").display()
            ),
        )
        .await;
        assert!(e.contains("unknown format"), "{e}");
        assert!(!tmp.path().join("o.x").exists());
        // Outside every table it writes.
        let out = tmp.path().join("out.csv").to_string_lossy().to_string();
        s.execute(&format!(
            "COPY (SELECT id FROM '{table}' WHERE id < 3) TO '{out}' STORED AS CSV"
        ))
        .await
        .unwrap();
        assert!(std::path::Path::new(&out).exists());
    });
}

#[test]
fn merge_refuses_unknown_and_repeated_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("m").to_string_lossy().to_string();
    let s = session();
    rt().block_on(async {
        names_table(&s, &path).await;
        for (sql, says) in [
            (
                "WHEN MATCHED THEN UPDATE SET nosuch = 1",
                "unknown column nosuch",
            ),
            (
                "WHEN MATCHED THEN UPDATE SET name = 'a', name = 'b'",
                "more than once",
            ),
            (
                "WHEN NOT MATCHED THEN INSERT (id, nosuch) VALUES (s.id, 1)",
                "unknown column nosuch",
            ),
        ] {
            let e = err(
                &s,
                &format!("MERGE INTO '{path}' t USING (SELECT 1 AS id) s ON t.id = s.id {sql}"),
            )
            .await;
            assert!(e.contains(says), "{sql}: {e}");
        }
        assert_eq!(
            rows(&s, &format!("SELECT name FROM '{path}' WHERE id = 1")).await,
            vec!["x"]
        );
    });
}

#[test]
fn a_folder_with_a_delta_log_is_a_table_whatever_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tp.parquet").to_string_lossy().to_string();
    let s = session();
    rt().block_on(async {
        names_table(&s, &path).await;
        s.execute(&format!("DELETE FROM '{path}' WHERE id > 2"))
            .await
            .unwrap();
        s.execute(&format!("UPDATE '{path}' SET name = 'y' WHERE id = 1"))
            .await
            .unwrap();
        assert_eq!(
            rows(&s, &format!("SELECT id, name FROM '{path}'")).await,
            vec!["1|y", "2|it's"]
        );
        assert_eq!(
            rows(&s, &format!("SELECT count(*) FROM read_parquet('{path}')")).await,
            vec!["2"]
        );
    });
}

/// A long-lived session (the shell, a Python handle) lists a folder of files anew for every
/// statement: DataFusion's listing cache would otherwise keep the first listing forever.
#[test]
fn a_session_lists_a_folder_of_files_anew_for_each_statement() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("files").to_string_lossy().to_string();
    std::fs::create_dir_all(&dir).unwrap();
    let s = session();
    rt().block_on(async {
        let count = format!("SELECT count(*) FROM read_parquet('{dir}/*.parquet')");
        s.execute(&format!("COPY (SELECT 1 AS id) TO '{dir}/a.parquet'"))
            .await
            .unwrap();
        assert_eq!(rows(&s, &count).await, vec!["1"]);
        s.execute(&format!("COPY (SELECT 2 AS id) TO '{dir}/b.parquet'"))
            .await
            .unwrap();
        assert_eq!(rows(&s, &count).await, vec!["2"]);
    });
}

#[test]
fn add_columns_cannot_add_an_identity_column() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("i").to_string_lossy().to_string();
    let s = session();
    rt().block_on(async {
        names_table(&s, &path).await;
        for col in [
            "n BIGINT GENERATED ALWAYS AS IDENTITY",
            "n BIGINT GENERATED BY DEFAULT AS IDENTITY (START WITH 10 INCREMENT BY 2)",
        ] {
            let e = err(&s, &format!("ALTER TABLE '{path}' ADD COLUMNS ({col})")).await;
            assert!(e.contains("identity"), "{col}: {e}");
        }
        assert_eq!(
            rows(&s, &format!("SELECT count(*) FROM '{path}'")).await,
            vec!["6"]
        );
    });
}

/// Characters that break a parser that handles statements as text: quotes, `;`, comment markers,
/// backslashes, newlines, unicode.
fn tricky_string() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop::collection::vec(
        prop_oneof![
            Just("'".to_string()),
            Just("''".to_string()),
            Just("\"".to_string()),
            Just(";".to_string()),
            Just("--".to_string()),
            Just("/*".to_string()),
            Just("*/".to_string()),
            Just("\\".to_string()),
            Just("\n".to_string()),
            Just(" OR 1=1".to_string()),
            Just("é".to_string()),
            Just("x".to_string()),
            "[a-c]{1,3}".prop_map(|s| s),
        ],
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

/// `s` as a SQL literal. A backslash cannot be written inside one (Spark reads it as an escape:
/// refused), so each is `chr(92)`, joined to the parts around it.
fn sql_literal(s: &str) -> String {
    let parts: Vec<String> = s
        .split('\\')
        .map(|p| format!("'{}'", p.replace('\'', "''")))
        .collect();
    format!("({})", parts.join(" || chr(92) || "))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
    /// For predicates over arbitrary string literals, `DELETE … WHERE p` removes exactly the rows
    /// that `SELECT … WHERE p` returned just before, and UPDATE writes the literal unchanged.
    #[test]
    fn delete_removes_exactly_what_select_returns(
        values in proptest::collection::vec(tricky_string(), 1..6),
        probe in tricky_string(),
        pick in 0usize..3,
    ) {
        let loc = format!("memory://statements-prop-{}/t", uuid_like(&values, &probe, pick));
        let mut s = session();
        s.register("t", &loc);
        rt().block_on(async {
            s.execute("CREATE TABLE t (id BIGINT, name STRING)").await.unwrap();
            let rows: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("({i}, {})", sql_literal(v)))
                .collect();
            s.execute(&format!("INSERT INTO t VALUES {}", rows.join(", "))).await.unwrap();
            let lit = sql_literal(&probe);
            let pred = match pick {
                0 => format!("name = {lit}"),
                1 => format!("name <> {lit} AND id > 0"),
                _ => format!("name IN ({lit}, 'x') OR id = 0"),
            };
            let before = rows_of(&s, &format!("SELECT id FROM t WHERE {pred}")).await;
            let expected: Vec<usize> = values
                .iter()
                .enumerate()
                .filter(|(i, v)| match pick {
                    0 => **v == probe,
                    1 => **v != probe && *i > 0,
                    _ => **v == probe || v.as_str() == "x" || *i == 0,
                })
                .map(|(i, _)| i)
                .collect();
            let mut expected_rows: Vec<String> = expected.iter().map(|i| i.to_string()).collect();
            expected_rows.sort();
            assert_eq!(before, expected_rows, "SELECT WHERE {pred}");
            s.execute(&format!("UPDATE t SET name = {lit} WHERE id = 0")).await.unwrap();
            assert_eq!(
                rows_of(&s, "SELECT name FROM t WHERE id = 0").await,
                vec![probe.clone()],
                "UPDATE SET name = {lit}"
            );
            let before = rows_of(&s, &format!("SELECT id FROM t WHERE {pred}")).await;
            let all = rows_of(&s, "SELECT id FROM t").await;
            s.execute(&format!("DELETE FROM t WHERE {pred}")).await.unwrap();
            let after = rows_of(&s, "SELECT id FROM t").await;
            let mut want: Vec<String> = all.into_iter().filter(|r| !before.contains(r)).collect();
            want.sort();
            assert_eq!(after, want, "DELETE WHERE {pred}");
        });
    }
}

async fn rows_of(s: &SqlSession, sql: &str) -> Vec<String> {
    let batches = s
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .batches;
    // Strings as they are (sorted_rows formats them for display).
    let mut out = Vec::new();
    for b in &batches {
        let c = b.column(0);
        use arrow::array::Array;
        let c = arrow::compute::cast(c, &arrow::datatypes::DataType::Utf8).unwrap();
        let c = c
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .unwrap();
        for i in 0..c.len() {
            out.push(c.value(i).to_string());
        }
    }
    out.sort();
    out
}

/// A name for the case's table from its inputs (each case its own table).
fn uuid_like(values: &[String], probe: &str, pick: usize) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (values, probe, pick).hash(&mut h);
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    h.finish() ^ N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
}

/// Second red-team pass: COPY through EXPLAIN ANALYZE, a percent-encoded or `localhost` file URL
/// and a link into a table's subfolder; two statements in one call; a long OR chain whose IN list
/// would have compared BIGINTs as DOUBLE; a quoted column name whose quotes are part of it.
#[test]
fn second_red_team_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let table = format!("{base}/ct");
    let s = session();
    rt().block_on(async {
        names_table(&s, &table).await;
        std::fs::create_dir_all(format!("{table}/sub")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(format!("{table}/sub"), format!("{base}/up")).unwrap();
        let encoded = format!("file://{}", table.replace("/ct", "/%63t"));
        for sql in [
            format!("EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{table}/e1.csv' STORED AS CSV"),
            format!("COPY (SELECT 1 AS a) TO '{encoded}/x7.csv' STORED AS CSV"),
            format!("COPY (SELECT 1 AS a) TO 'file://localhost{table}/e7.csv' STORED AS CSV"),
            format!("COPY (SELECT 1 AS a) TO '{base}/up/x10.csv' STORED AS CSV"),
        ] {
            err(&s, &sql).await;
        }
        let written: Vec<_> = walk(std::path::Path::new(&table))
            .into_iter()
            .filter(|p| p.ends_with(".csv"))
            .collect();
        assert!(written.is_empty(), "{written:?}");
        let e = err(
            &s,
            &format!("CREATE TABLE '{base}/s1' (id BIGINT); INSERT INTO '{base}/s1' VALUES (5)"),
        )
        .await;
        assert!(e.contains("one statement"), "{e}");
        assert!(!std::path::Path::new(&format!("{base}/s1")).exists());
        let big = format!("{base}/big");
        s.execute(&format!("CREATE TABLE '{big}' (id BIGINT)"))
            .await
            .unwrap();
        s.execute(&format!(
            "INSERT INTO '{big}' VALUES (9007199254740992), (9007199254740993)"
        ))
        .await
        .unwrap();
        let pad: Vec<String> = (1..=70).map(|i| format!("id = -{i}")).collect();
        s.execute(&format!(
            "DELETE FROM '{big}' WHERE id = 9007199254740993 OR id = 0.5 OR {}",
            pad.join(" OR ")
        ))
        .await
        .unwrap();
        assert_eq!(
            rows(&s, &format!("SELECT id FROM '{big}'")).await,
            vec!["9007199254740992"]
        );
        let qc = format!("{base}/qc");
        s.execute(&format!("CREATE TABLE '{qc}' (x BIGINT, `\"x\"` BIGINT)"))
            .await
            .unwrap();
        s.execute(&format!("INSERT INTO '{qc}' VALUES (1, 2)"))
            .await
            .unwrap();
        s.execute(&format!("UPDATE '{qc}' SET `\"x\"` = 20"))
            .await
            .unwrap();
        assert_eq!(
            rows(&s, &format!("SELECT * FROM '{qc}'")).await,
            vec!["1|20"]
        );
    });
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else {
            out.push(p.to_string_lossy().to_string());
        }
    }
    out
}
