//! The CLI's exit codes, as the README states them (0 ok, 2 bad input, 3 conflict, 4 not found,
//! 5 unsupported), one row per case; every error is one line on stderr, and bad input leaves
//! nothing on disk.

use crate::common;

fn cli(dir: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    common::run(dir, env, args, "")
}

#[test]
fn exit_codes_follow_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(
        cli(d, &[], &["sql", "CREATE TABLE './t' (id BIGINT, a INT)"]).0,
        0
    );
    assert_eq!(
        cli(d, &[], &["sql", "INSERT INTO './t' VALUES (1, 2)"]).0,
        0
    );
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], i32);
    let cases: &[Case] = &[
        (&[], &["sql", "SELECT 1"], 0),
        (&[], &["sql", "SELEC 1"], 2),
        (&[], &["sql", "SELECT nope FROM './t'"], 2),
        (&[], &["sql", "SELECT 1e99999"], 2),
        (&[], &["sql", "SELECT * FROM './t' VERSION AS OF 999"], 4),
        (&[], &["sql", "SELECT * FROM './nosuch/x'"], 4),
        (&[], &["sql", "UPDATE './t' SET a = 1, a = 2"], 2),
        (&[], &["sql", "DROP TABLE './t'"], 2),
        (&[], &["sql", "TRUNCATE TABLE './t'"], 5),
        (&[], &["sql", "ALTER TABLE './t' RENAME TO './u'"], 5),
        (&[], &["sql", "ALTER TABLE './t' ALTER COLUMN a TYPE DOUBLE"], 2),
        (&[], &["sql", "ALTER TABLE './t' ADD CONSTRAINT big CHECK (a > 5)"], 2),
        (&[], &["sql", "VACUUM './t' RETAIN 0 HOURS"], 2),
        (
            &[],
            &["sql", "CREATE TABLE './bad' (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '-1')"],
            2,
        ),
        (&[], &["--conf", "unsoundForTesting=true", "sql", "SELECT 1"], 2),
        (&[], &["--conf", "dataSkiping=false", "sql", "SELECT 1"], 2),
        (&[], &["--retry-on-conflict", "101", "sql", "SELECT 1"], 2),
        (&[], &["--conf", "retryOnConflict=-1", "sql", "SELECT 1"], 2),
        (&[], &["--conf", "reconcile.maxBytes=lots", "sql", "SELECT 1"], 2),
        (&[], &["--conf", "reconcile.maxMillis=-1", "sql", "SELECT 1"], 2),
        (&[], &["--conf", "reconcile.maxMillis=250", "sql", "SELECT 1"], 0),
        (&[], &["sql", "SET rlc.retryOnConflict = 'many'"], 2),
        (&[], &["--retry-on-conflict", "3", "sql", "SET rlc.retryOnConflict = 0"], 0),
        (&[("DELTA_RLC_CONF", "unsoundForTesting=true")], &["sql", "SELECT 1"], 2),
    ];
    for (env, args, code) in cases {
        let (got, _, err) = cli(d, env, args);
        assert_eq!(got, *code, "{args:?}: {err}");
        if got != 0 {
            assert_eq!(err.lines().count(), 1, "{args:?}: one line, got {err:?}");
        }
    }
    // Neither the failed reads nor the refused CREATE left anything behind.
    assert!(!d.join("nosuch").exists());
    assert!(!d.join("bad").exists());
    // A DML that changes nothing says so and commits nothing.
    let (code, out, _) = cli(d, &[], &["sql", "DELETE FROM './t' WHERE id < 0"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("nothing to commit: the table is unchanged at version 1"),
        "{out}"
    );
    assert!(!d.join("t/_delta_log/00000000000000000002.json").exists());
}
