//! A statement means exactly what it says: quotes survive every re-assembly of statement text,
//! scripts split only at top-level `;`, COPY never writes into a table, MERGE refuses unknown
//! columns, a folder with a `_delta_log` is always a table, and ADD COLUMNS cannot add an identity.
//! Each case below lost or corrupted data before (issue: "A statement means exactly what it says").

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{split_statements, statement_complete, SqlSession};

use crate::common::{rt, sorted_rows};

fn session() -> SqlSession {
    SqlSession::new(Env::deterministic(44), ConflictConfig::default())
}

async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(
        &s.execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .batches,
    )
}

async fn err(s: &SqlSession, sql: &str) -> String {
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
        "INSERT INTO '{path}' VALUES (1, 'x'), (2, 'it''s'), (3, ' OR ''1''=''1'), (4, 'a;b'), (5, '-- c'), (6, 'é\\n')"
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
            .execute(&format!("DELETE FROM '{path}' WHERE name = 'x'' OR ''1''=''1'"))
            .await
            .unwrap();
        assert_eq!(out.commit.and_then(|c| c.affected_rows).unwrap_or(0), 0);
        assert_eq!(rows(&s, &format!("SELECT count(*) FROM '{path}'")).await, vec!["6"]);
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
            rows(&s, &format!("SELECT id, name FROM '{path}' WHERE id IN (1, 3)")).await,
            vec!["1|x", "3|o'k; -- still a string"]
        );
        // A CHECK constraint is saved to the log with its quotes, and means what it says.
        s.execute(&format!(
            "ALTER TABLE '{path}' ADD CONSTRAINT no_quote CHECK (name <> 'x'' OR ''1''=''1')"
        ))
        .await
        .unwrap();
        let e = err(
            &s,
            &format!("INSERT INTO '{path}' VALUES (7, 'x'' OR ''1''=''1')"),
        )
        .await;
        assert!(e.contains("no_quote"), "{e}");
        s.execute(&format!("INSERT INTO '{path}' VALUES (8, 'x')"))
            .await
            .unwrap();
        let props = rows(&s, &format!("SHOW TBLPROPERTIES '{path}'")).await;
        assert!(
            props
                .iter()
                .any(|p| p.contains("delta.constraints.no_quote") && p.contains("'x'' OR ''1''=''1'")),
            "{props:?}"
        );
        // A quoted identifier with a doubled quote inside.
        assert_eq!(rows(&s, "SELECT 1 AS \"a\"\"b\"").await, vec!["1"]);
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
        ("DELETE FROM t -- remove the test row;\nWHERE id = 1;\n", true),
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
        assert_eq!(rows(&s, &format!("SELECT count(*) FROM '{table}'")).await, vec!["6"]);
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
            ("WHEN MATCHED THEN UPDATE SET nosuch = 1", "unknown column nosuch"),
            ("WHEN MATCHED THEN UPDATE SET name = 'a', name = 'b'", "more than once"),
            ("WHEN NOT MATCHED THEN INSERT (id, nosuch) VALUES (s.id, 1)", "unknown column nosuch"),
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
