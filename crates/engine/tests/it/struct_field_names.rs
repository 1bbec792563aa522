//! A struct's field is found without regard to case, as Spark finds it (`spark::field_case`):
//! DataFusion alone read `s.userId` as the field `userid` and refused the statement.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;

use crate::common::{rt, sorted_rows};

/// A session with table `t` under `memory://{prefix}/t` (memory stores are process-wide).
fn session(prefix: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(5), ConflictConfig::default());
    s.register("t", &format!("memory://{prefix}/t"));
    for sql in [
        "CREATE TABLE t (id INT, s STRUCT<userId: INT, Name: STRING, Inner: STRUCT<Deep: INT>>, \
         m MAP<STRING, INT>)",
        "INSERT INTO t VALUES \
         (1, named_struct('userId', 1, 'Name', 'x', 'Inner', named_struct('Deep', 10)), map('Key', 1)), \
         (2, named_struct('userId', 2, 'Name', 'y', 'Inner', named_struct('Deep', 20)), map('Key', 2))",
    ] {
        rt().block_on(s.execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    s
}

fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    let out = rt().block_on(s.execute(sql));
    sorted_rows(&out.unwrap_or_else(|e| panic!("{sql}: {e}")).batches)
}

#[test]
fn struct_fields_are_found_without_regard_to_case() {
    let s = session("struct-field-names");
    for (sql, want) in [
        (
            "SELECT id, s.userId, s.USERID, s.Inner.deep FROM t",
            &["1|1|1|10", "2|2|2|20"][..],
        ),
        ("SELECT id FROM t WHERE s.userid = 2", &["2"][..]),
        (
            "SELECT s['USERID'], s.inner['DEEP'] FROM t",
            &["1|10", "2|20"][..],
        ),
        ("SELECT t.S.name FROM t WHERE t.s.NAME = 'x'", &["x"][..]),
        // A map's key is a value: compared exactly, as before.
        (
            "SELECT m['Key'], m['key'] FROM t WHERE id = 1",
            &["1|NULL"][..],
        ),
    ] {
        assert_eq!(rows(&s, sql), want, "{sql}");
    }
    // DML plans its expressions the same way: the rows it changes are the ones named.
    for sql in [
        "UPDATE t SET id = id + 10 WHERE s.USERID = 1",
        "DELETE FROM t WHERE s.inner.DEEP = 20",
    ] {
        rt().block_on(s.execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(rows(&s, "SELECT id, s.userId FROM t"), ["11|1"]);
}

#[test]
fn a_field_name_two_fields_match_is_refused_or_exact() {
    let s = session("struct-field-names-ambiguous");
    // Spark: ambiguous reference to fields. A subscript is refused with one line.
    let e = rt()
        .block_on(s.execute("SELECT named_struct('b', 1, 'B', 2)['b']"))
        .expect_err("ambiguous")
        .to_string();
    assert!(
        e.contains("ambiguous reference to fields") && !e.contains('\n'),
        "{e}"
    );
    // A name no field has is still refused.
    let e = rt()
        .block_on(s.execute("SELECT s.nope FROM t"))
        .expect_err("no field")
        .to_string();
    assert!(e.contains("nope"), "{e}");
}
