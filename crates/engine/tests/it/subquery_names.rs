//! A name inside a subquery is the subquery's own column before an outer query's, without regard
//! to case (`spark::outer_names`), as Spark reads it. DataFusion alone read `x` as the outer
//! `a.x` when the subquery's table spells it `X`, and a CREATE TABLE AS SELECT stored other rows.
//! Also the FROM-level name rules (`spark::natural_join`, `spark::table_aliases`).

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;

use crate::common::{rt, sorted_rows};

/// A session with `tables` registered under `memory://{prefix}/`, after `setup` ran.
fn session(prefix: &str, tables: &[&str], setup: &[&str]) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(3), ConflictConfig::default());
    for t in tables {
        s.register(t, &format!("memory://{prefix}/{t}"));
    }
    for sql in setup {
        rt().block_on(s.execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    s
}

fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    let out = rt().block_on(s.execute(sql));
    sorted_rows(&out.unwrap_or_else(|e| panic!("{sql}: {e}")).batches)
}

/// Each statement is refused with `needle` in its one-line message.
fn refused(s: &SqlSession, statements: &[&str], needle: &str) {
    for sql in statements {
        let e = rt().block_on(s.execute(sql)).expect_err(sql).to_string();
        assert!(e.contains(needle) && !e.contains('\n'), "{sql}: {e}");
    }
}

#[test]
fn a_subquerys_name_is_its_own_column_before_an_outer_one() {
    let s = session(
        "subquery-names",
        &["a", "b", "c"],
        &[
            "CREATE TABLE a (x INT)",
            "CREATE TABLE b (X INT)",
            "INSERT INTO a VALUES (1), (2)",
            "INSERT INTO b VALUES (5)",
        ],
    );
    let cases: [(&str, &[&str]); 7] = [
        // Both names are b's `X` (red team helper-53: refused).
        (
            "SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE X <= x)",
            &["2"],
        ),
        // `x` is b's `X`: every row of a (DataFusion alone: none).
        (
            "SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE x = 5)",
            &["2"],
        ),
        (
            "SELECT count(*) FROM a WHERE 5 IN (SELECT x FROM b)",
            &["2"],
        ),
        // Left of IN, `x` is a's; inside, b's.
        (
            "SELECT count(*) FROM a WHERE x IN (SELECT x FROM b)",
            &["0"],
        ),
        (
            "SELECT (SELECT max(x) FROM b) AS m, x FROM a",
            &["5|1", "5|2"],
        ),
        // Qualified, the outer column by choice.
        (
            "SELECT count(*) FROM a AS aa WHERE EXISTS (SELECT 1 FROM b WHERE aa.x = 1)",
            &["1"],
        ),
        // Exact in the subquery's own scope: its own column.
        (
            "SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE X = 5)",
            &["2"],
        ),
    ];
    for (sql, want) in cases {
        assert_eq!(rows(&s, sql), want.to_vec(), "{sql}");
    }
    // `a.x` beside the subquery's own struct column `A`: Spark reads the struct's field; refused.
    refused(
        &s,
        &["SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM (SELECT named_struct('x', 5) AS A) WHERE a.x = 5)"],
        "struct column",
    );
    // What a write stores: the rows Spark selects.
    rows(
        &s,
        "CREATE TABLE c AS SELECT x FROM a WHERE EXISTS (SELECT 1 FROM b WHERE x = 5)",
    );
    assert_eq!(rows(&s, "SELECT x FROM c"), ["1", "2"]);
}

/// A qualified name inside a subquery whose own table has that name too (`q` outside and
/// inside) is the inner table's column, as in Spark, whatever the case of either spelling
/// (red team helper-52: DataFusion read the outer `q` when the inner spelled the column `V`).
#[test]
fn a_qualifier_inside_a_subquery_is_its_own_table_first() {
    let s = session(
        "subquery-qualifiers",
        &["a", "b"],
        &[
            "CREATE TABLE a (x INT, v INT)",
            "CREATE TABLE b (X INT, V INT)",
            "INSERT INTO a VALUES (1, 10), (2, 20)",
            "INSERT INTO b VALUES (5, 700)",
        ],
    );
    let cases: [(&str, &str); 7] = [
        ("SELECT count(*) FROM a q WHERE EXISTS (SELECT 1 FROM b q WHERE q.V = 700)", "2"),
        ("SELECT count(*) FROM a t WHERE EXISTS (SELECT 1 FROM b T WHERE t.V = 700)", "2"),
        ("SELECT count(*) FROM a t WHERE NOT EXISTS (SELECT 1 FROM b T WHERE t.v = 700)", "0"),
        ("SELECT count(*) FROM a Aa WHERE EXISTS (SELECT 1 FROM b aA WHERE aa.x = 5)", "2"),
        ("WITH Q AS (SELECT X, V FROM b) SELECT count(*) FROM a q WHERE EXISTS (SELECT 1 FROM Q WHERE Q.v = 700)", "2"),
        // Another inner name: the outer `q` by choice.
        ("SELECT count(*) FROM a q WHERE EXISTS (SELECT 1 FROM b r WHERE q.v = 10)", "1"),
        ("SELECT count(*) FROM a q WHERE EXISTS (SELECT 1 FROM b r WHERE q.V = 10 AND r.v = 700)", "1"),
    ];
    for (sql, want) in cases {
        assert_eq!(rows(&s, sql), [want], "{sql}");
    }
}

/// A NATURAL JOIN of `Key` and `key` is refused (`spark::natural_join`): Spark joins on them,
/// DataFusion alone planned a cross join. Spelled alike, it joins.
#[test]
fn a_natural_join_of_columns_spelled_differently_is_refused() {
    let s = session(
        "natural-join",
        &["l", "r", "c"],
        &[
            "CREATE TABLE l (Key INT, a INT)",
            "CREATE TABLE r (key INT, b INT)",
            "INSERT INTO l VALUES (1, 10), (2, 20)",
            "INSERT INTO r VALUES (1, 100), (3, 300)",
        ],
    );
    refused(
        &s,
        &[
            "SELECT count(*) FROM l NATURAL JOIN r",
            "CREATE TABLE c AS SELECT a, b FROM l NATURAL JOIN r",
            "SELECT count(*) FROM (SELECT 1 AS z) UNION ALL SELECT count(*) FROM l NATURAL JOIN r",
        ],
        "NATURAL JOIN of columns",
    );
    let sql = "SELECT a, b FROM l NATURAL JOIN (SELECT key AS Key, b FROM r) AS rr";
    assert_eq!(rows(&s, sql), ["10|100"]);
}

/// Two tables of one FROM named alike but for case are refused (`spark::table_aliases`): Spark
/// reads `t.x` through them as ambiguous, DataFusion took the first table.
#[test]
fn table_names_that_differ_only_in_case_in_one_from_are_refused() {
    let s = session(
        "table-aliases",
        &["a", "b"],
        &[
            "CREATE TABLE a (x INT)",
            "CREATE TABLE b (x INT)",
            "INSERT INTO a VALUES (1), (5)",
            "INSERT INTO b VALUES (5)",
        ],
    );
    refused(
        &s,
        &[
            "SELECT count(*) FROM a t JOIN b T ON t.x = T.x",
            "SELECT count(*) FROM a A1 JOIN b a1 ON a1.x = 5",
            "SELECT count(*) FROM a JOIN b A ON a.x = A.x",
        ],
        "without regard to case",
    );
    // Distinct names, and the same alias in a subquery's own FROM, stand.
    let sql = "SELECT count(*) FROM a t JOIN b u ON t.x = u.x WHERE EXISTS (SELECT 1 FROM b t WHERE t.x = 5)";
    assert_eq!(rows(&s, sql), ["1"]);
}
