//! A name inside a subquery is the subquery's own column before an outer query's, without regard
//! to case (`spark::outer_names`), as Spark reads it. DataFusion alone read `x` as the outer
//! `a.x` when the subquery's table spells it `X`, and a CREATE TABLE AS SELECT stored other rows.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;

use crate::common::{rt, sorted_rows};

#[test]
fn a_subquerys_name_is_its_own_column_before_an_outer_one() {
    let mut s = SqlSession::new(Env::deterministic(3), ConflictConfig::default());
    for t in ["a", "b", "c"] {
        s.register(t, &format!("memory://subquery-names/{t}"));
    }
    rt().block_on(async {
        for sql in [
            "CREATE TABLE a (x INT)",
            "CREATE TABLE b (X INT)",
            "INSERT INTO a VALUES (1), (2)",
            "INSERT INTO b VALUES (5)",
        ] {
            s.execute(sql).await.unwrap();
        }
        let cases: [(&str, &[&str]); 6] = [
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
            let got = sorted_rows(
                &s.execute(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"))
                    .batches,
            );
            assert_eq!(got, want.to_vec(), "{sql}");
        }
        // What a write stores: the rows Spark selects.
        s.execute("CREATE TABLE c AS SELECT x FROM a WHERE EXISTS (SELECT 1 FROM b WHERE x = 5)")
            .await
            .unwrap();
        let got = sorted_rows(&s.execute("SELECT x FROM c").await.unwrap().batches);
        assert_eq!(got, ["1", "2"]);
    });
}

/// A NATURAL JOIN of `Key` and `key` is refused (`spark::natural_join`): Spark joins on them,
/// DataFusion alone planned a cross join. Spelled alike, it joins.
#[test]
fn a_natural_join_of_columns_spelled_differently_is_refused() {
    let mut s = SqlSession::new(Env::deterministic(4), ConflictConfig::default());
    for t in ["l", "r", "c"] {
        s.register(t, &format!("memory://natural-join/{t}"));
    }
    rt().block_on(async {
        for sql in [
            "CREATE TABLE l (Key INT, a INT)",
            "CREATE TABLE r (key INT, b INT)",
            "INSERT INTO l VALUES (1, 10), (2, 20)",
            "INSERT INTO r VALUES (1, 100), (3, 300)",
        ] {
            s.execute(sql).await.unwrap();
        }
        for sql in [
            "SELECT count(*) FROM l NATURAL JOIN r",
            "CREATE TABLE c AS SELECT a, b FROM l NATURAL JOIN r",
            "SELECT count(*) FROM (SELECT 1 AS z) UNION ALL SELECT count(*) FROM l NATURAL JOIN r",
        ] {
            let e = s.execute(sql).await.expect_err(sql).to_string();
            assert!(e.contains("NATURAL JOIN of columns"), "{sql}: {e}");
        }
        let got = sorted_rows(
            &s.execute("SELECT a, b FROM l NATURAL JOIN (SELECT key AS Key, b FROM r) AS rr")
                .await
                .unwrap()
                .batches,
        );
        assert_eq!(got, ["10|100"]);
    });
}
