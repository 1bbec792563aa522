//! `sql -f FILE` runs a script's statements in order in one session and stops at the first error
//! with its exit code; `shell` reads statements from standard input and goes on after errors.

use crate::common;

fn run(dir: &std::path::Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    common::run(dir, &[], args, stdin)
}

#[test]
fn scripts_run_in_order_and_stop_at_the_first_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("load.sql"),
        "-- create and fill\nCREATE TABLE './t' (id BIGINT, note STRING);\n\
         INSERT INTO './t' VALUES (1, 'a;b'), (2, 'c'); -- ';' inside a string\n\
         DELETE FROM './t' WHERE id = 2;\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["sql", "-f", "load.sql"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("committed version").count(), 3, "{out}");
    let (code, out, _) = run(
        d,
        &["--format", "csv", "sql", "-f", "-"],
        "SELECT * FROM './t';",
    );
    assert_eq!((code, out.as_str()), (0, "id,note\n1,a;b\n"));
    let (code, out, err) = run(
        d,
        &["--format", "csv", "sql", "-f", "-"],
        "SELECT 1 AS x; SELECT nope FROM './t'; INSERT INTO './t' VALUES (9, 'never');",
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(out, "x\n1\n");
    assert!(err.starts_with("error: statement 2"), "{err}");
    assert_eq!(err.lines().count(), 1);
    assert!(
        !d.join("t/_delta_log/00000000000000000003.json").exists(),
        "statement 3 never ran"
    );
}

#[test]
fn the_shell_goes_on_after_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = "CREATE TABLE './t' (id BIGINT);\nINSERT INTO './t'\n  VALUES (1), (2);\nSELEC 1;\nSELECT count(*) AS n FROM './t';\n.quit\nSELECT 'not run';\n";
    let (code, out, err) = run(dir.path(), &["--format", "csv", "shell"], input);
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with("n\n2\n"), "{out}");
    assert!(!out.contains("not run"));
    assert_eq!(err.lines().count(), 1, "one error line: {err}");
}

#[test]
fn continue_on_error_runs_every_statement_and_exits_with_the_first_code() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run(
        dir.path(),
        &["--format", "csv", "sql", "-f", "-", "--continue-on-error"],
        "SELECT 1 AS a; SELECT * FROM './missing'; SELEC 2; SELECT 3 AS c;",
    );
    assert_eq!(code, 4, "the first error (not found) decides: {err}");
    assert_eq!(out, "a\n1\nc\n3\n");
    assert_eq!(err.lines().count(), 2, "{err}");
}

#[test]
fn views_and_external_tables_live_for_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("codes.txt"), "code;label\n1;one\n2;two\n").unwrap();
    let script = "CREATE TABLE './t' (id BIGINT, code BIGINT);\n\
        INSERT INTO './t' VALUES (1, 1), (2, 2), (3, 2);\n\
        CREATE EXTERNAL TABLE codes STORED AS CSV LOCATION 'codes.txt' OPTIONS ('format.delimiter' ';');\n\
        CREATE VIEW labelled AS SELECT t.id, c.label FROM './t' t JOIN codes c ON t.code = c.code;\n\
        CREATE TEMP VIEW twos AS SELECT * FROM labelled WHERE label = 'two';\n\
        SELECT count(*) AS n FROM twos x;\n";
    let (code, out, err) = run(d, &["--format", "csv", "sql", "-f", "-"], script);
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with("n\n2\n"), "{out}");
    // A view is the session's: a new process does not know it, and nothing was written for it.
    let (code, _, err) = run(d, &["sql", "SELECT * FROM twos"], "");
    assert_ne!(code, 0, "{err}");
    let (code, _, err) = run(
        d,
        &["sql", "-f", "-"],
        "CREATE VIEW v AS SELECT * FROM v; SELECT * FROM v;",
    );
    assert_eq!(code, 2);
    // Refused when it is defined: nothing runs after it.
    assert!(err.contains("a view cannot read itself"), "{err}");
}

#[test]
fn a_failing_statement_in_the_middle_commits_exactly_the_statements_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("job.sql"),
        "CREATE TABLE './t' (id BIGINT);\nINSERT INTO './t' VALUES (1);\n\
         INSERT INTO './t' VALUES ('not a number');\nINSERT INTO './t' VALUES (3);\n",
    )
    .unwrap();
    let (code, _, err) = run(d, &["sql", "-f", "job.sql"], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: statement 3"), "{err}");
    let log = d.join("t/_delta_log");
    assert!(log.join("00000000000000000001.json").exists());
    assert!(!log.join("00000000000000000002.json").exists());
    let (_, out, _) = run(d, &["--format", "csv", "sql", "SELECT id FROM './t'"], "");
    assert_eq!(out, "id\n1\n");
    // VACUUM with nothing to delete says so.
    let (code, out, _) = run(d, &["sql", "VACUUM './t' DRY RUN"], "");
    assert_eq!(code, 0);
    assert!(out.starts_with("VACUUM: nothing would be deleted"), "{out}");
}
