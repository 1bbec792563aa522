//! Expressions mean what Spark means: our SQL, a table's CHECK constraints and its generated
//! columns are evaluated with Spark 4's semantics (ANSI on). Expected values are Spark's
//! (Spark 4.2 / Delta 4.4); each case failed before the Spark analyzer step existed.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{latest_snapshot, rt, sorted_rows};

fn session(loc: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(49), ConflictConfig::default());
    s.register("t", loc);
    s
}

async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(
        &s.execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .batches,
    )
}

async fn fails(s: &SqlSession, sql: &str, needle: &str) -> String {
    let err = s.execute(sql).await.expect_err(sql).to_string();
    assert!(err.contains(needle), "{sql}: {err:?} lacks {needle:?}");
    assert!(!err.contains('\n'), "{sql}: one line: {err}");
    err
}

/// The three behaviours: a generated column `v / 2`, a CHECK `v / 10 <= 4`, and integer
/// division in a SELECT, each as Spark computes it.
#[test]
fn division_is_spark_division_everywhere() {
    let loc = "memory://spark-div/t";
    let s = session(loc);
    rt().block_on(async {
        assert_eq!(rows(&s, "SELECT 45 / 10, 5 / 2").await, vec!["4.5|2.5"]);
        s.execute("CREATE TABLE t (id BIGINT, v INT, g DOUBLE GENERATED ALWAYS AS (v / 2))")
            .await
            .unwrap();
        s.execute("INSERT INTO t (id, v) VALUES (1, 5), (2, -7)")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, v, g FROM t").await,
            vec!["1|5|2.5", "2|-7|-3.5"]
        );
        // A given value must equal the expression as Spark computes it.
        let err = s
            .execute("INSERT INTO t VALUES (3, 5, 2.0)")
            .await
            .expect_err("2.0 is not 5 / 2");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        s.execute("ALTER TABLE t ADD CONSTRAINT tens CHECK (v / 10 <= 4)")
            .await
            .unwrap();
        let before = latest_snapshot(loc).await.version;
        fails(&s, "INSERT INTO t (id, v) VALUES (4, 45)", "tens").await;
        assert_eq!(
            latest_snapshot(loc).await.version,
            before,
            "nothing committed"
        );
        s.execute("INSERT INTO t (id, v) VALUES (4, 40)")
            .await
            .unwrap();
        // UPDATE computes as Spark does too: 40 / 16 is 2.5, stored into an INT as 2 (ANSI
        // store assignment truncates), and the generated column follows the new v.
        s.execute("UPDATE t SET v = v / 16 WHERE id = 4")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT v, g FROM t WHERE id = 4").await,
            vec!["2|1.0"]
        );
    });
}

/// ANSI arithmetic: integer overflow and a zero divisor raise; `%` is Java's remainder; an
/// integer literal that fits an INT is an INT (so INT arithmetic overflows at 2^31).
#[test]
fn ansi_arithmetic_raises_where_spark_raises() {
    let loc = "memory://spark-ansi/t";
    let s = session(loc);
    rt().block_on(async {
        fails(&s, "SELECT 2147483647 + 1", "ARITHMETIC_OVERFLOW").await;
        fails(&s, "SELECT -2147483647 - 2", "ARITHMETIC_OVERFLOW").await;
        assert_eq!(rows(&s, "SELECT 2147483648 + 1").await, vec!["2147483649"]);
        // Literals as Spark types them: 0.1 + 0.2 is DECIMAL 0.3; -0.0 = 0.0 and NaN = NaN.
        assert_eq!(rows(&s, "SELECT 0.1 + 0.2").await, vec!["0.3"]);
        assert_eq!(
            rows(&s, "SELECT CAST('-0.0' AS DOUBLE) = 0, CAST('NaN' AS DOUBLE) IN (CAST('NaN' AS DOUBLE)), CAST('-0.0' AS DOUBLE) BETWEEN 0 AND 1").await,
            vec!["true|true|true"]
        );
        fails(&s, "SELECT 1 / 0", "DIVIDE_BY_ZERO").await;
        fails(&s, "SELECT CAST(1.5 AS DOUBLE) / 0", "DIVIDE_BY_ZERO").await;
        // A decimal divisor of zero raises too; decimal division takes Spark's result type
        // (scale max(6, s1 + p2 + 1)) and rounds HALF_UP.
        fails(&s, "SELECT 1.5 / 0", "DIVIDE_BY_ZERO").await;
        assert_eq!(rows(&s, "SELECT 1.00 / 3, 2.00 / 3, CAST(1 AS DECIMAL(10,2)) / 7").await, vec!["0.333333|0.666667|0.142857"]);
        fails(&s, "SELECT 7 % 0", "REMAINDER_BY_ZERO").await;
        assert_eq!(rows(&s, "SELECT CAST(NULL AS INT) / 0").await, vec!["NULL"]);
        assert_eq!(rows(&s, "SELECT -7 % 2, 7 % -2, CAST(7.5 AS DOUBLE) % 2").await, vec!["-1|1|1.5"]);
        s.execute("CREATE TABLE t (id BIGINT, v INT)").await.unwrap();
        s.execute("INSERT INTO t VALUES (1, 2000000000), (2, 3)").await.unwrap();
        let before = latest_snapshot(loc).await.version;
        fails(&s, "UPDATE t SET v = v * 2", "ARITHMETIC_OVERFLOW").await;
        fails(&s, "SELECT id FROM t WHERE v + v > 0", "ARITHMETIC_OVERFLOW").await;
        assert_eq!(latest_snapshot(loc).await.version, before, "nothing committed");
        // BIGINT arithmetic where an operand is BIGINT.
        assert_eq!(
            rows(&s, "SELECT CAST(v AS BIGINT) * 2 FROM t").await,
            vec!["4000000000", "6"]
        );
        assert_eq!(rows(&s, "SELECT v FROM t WHERE v / 2 = 1.5").await, vec!["3"]);
        s.execute("DELETE FROM t WHERE v / 2 = 1.5").await.unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t").await, vec!["1"]);
    });
}

/// A stored rule is computed with Spark's literal types: `1.1` is DECIMAL(2,1), so `v * 1.1` is
/// exact, as in the rows Spark already wrote; `concat` is NULL when an argument is NULL.
#[test]
fn stored_rules_use_spark_literals_and_functions() {
    let loc = "memory://spark-rules/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, v INT, name STRING, \
             g DOUBLE GENERATED ALWAYS AS (v * 1.1), \
             k STRING GENERATED ALWAYS AS (concat(name, '-', CAST(id AS STRING))))",
        )
        .await
        .unwrap();
        s.execute("ALTER TABLE t ADD CONSTRAINT eleven CHECK (v * 1.1 <= 11)")
            .await
            .unwrap();
        s.execute("INSERT INTO t (id, v, name) VALUES (1, 3, 'a'), (2, 10, NULL)")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, g, k FROM t").await,
            vec!["1|3.3|a-1", "2|11.0|NULL"]
        );
        fails(
            &s,
            "INSERT INTO t (id, v, name) VALUES (3, 11, 'c')",
            "eleven",
        )
        .await;
    });
}

/// What cannot be evaluated exactly as Spark does is refused at CREATE / ALTER, naming the
/// construct; nothing is committed.
#[test]
fn rules_spark_would_evaluate_differently_are_refused() {
    let loc = "memory://spark-refuse/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, v INT, d DOUBLE, name STRING)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 5, 1.5, 'a')").await.unwrap();
        let before = latest_snapshot(loc).await.version;
        for (rule, construct) in [
            ("regexp_like(name, '^a')", "regexp_like"),
            ("CAST(name AS INT) > 0", "CAST from Utf8"),
            ("name > 5", "comparing"),
            ("CAST(d AS STRING) <> 'x'", "CAST from Float64"),
            ("round(d, 1) > 0", "round"),
        ] {
            let err = fails(
                &s,
                &format!("ALTER TABLE t ADD CONSTRAINT c CHECK ({rule})"),
                construct,
            )
            .await;
            assert!(err.contains("Spark"), "{err}");
        }
        assert_eq!(latest_snapshot(loc).await.version, before, "nothing committed");
        fails(
            &s,
            "CREATE TABLE 'memory://spark-refuse/u' (d DOUBLE, s STRING GENERATED ALWAYS AS (CAST(d AS STRING)))",
            "CAST from Float64",
        )
        .await;
        // Constructs proven equal are accepted.
        s.execute("ALTER TABLE t ADD CONSTRAINT ok CHECK (length(name) > 0 AND abs(v) < 100 AND v % 2 = 1)")
            .await
            .unwrap();
        fails(&s, "INSERT INTO t VALUES (2, 4, 0.0, 'b')", "ok").await;
    });
}

/// The red-team pass on Spark semantics: DOUBLE beside a DECIMAL literal widens to DOUBLE (in
/// VALUES, UNION, COALESCE, CASE, NULLIF) instead of a DECIMAL(30,15) that turned 1e-20 into 0;
/// stored rules with DECIMAL arithmetic past 38 digits or exponent literals are refused.
#[test]
fn double_beside_decimal_is_double_as_in_spark() {
    let loc = "memory://spark-double-decimal/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (k DOUBLE, a INT)").await.unwrap();
        s.execute("INSERT INTO t VALUES (CAST('1e-20' AS DOUBLE), 1), (2.5, 2)").await.unwrap();
        s.execute("INSERT INTO t VALUES (CAST(1 AS DOUBLE) / 3, 3), (2.5, 4)").await.unwrap();
        assert_eq!(
            rows(&s, "SELECT a, k FROM t WHERE a IN (1, 3)").await,
            vec!["1|1e-20", "3|0.3333333333333333"]
        );
        s.execute("UPDATE t SET k = COALESCE(k, 2.5)").await.unwrap();
        assert_eq!(rows(&s, "SELECT a, k FROM t WHERE a = 1").await, vec!["1|1e-20"]);
        assert_eq!(
            rows(&s, "SELECT COALESCE(CAST('1e-20' AS DOUBLE), 2.5), nullif(CAST('1e-20' AS DOUBLE), 0.0), CASE WHEN true THEN CAST('1e-20' AS DOUBLE) ELSE 0.5 END").await,
            vec!["1e-20|1e-20|1e-20"]
        );
        assert_eq!(
            rows(&s, "SELECT CAST(1 AS DOUBLE) / 3 AS x UNION ALL SELECT 2.5").await,
            vec!["0.3333333333333333", "2.5"]
        );
        s.execute(
            "CREATE TABLE 'memory://spark-double-decimal/g' (v DOUBLE, g DOUBLE GENERATED ALWAYS AS (COALESCE(v, 2.5)))",
        )
        .await
        .unwrap();
        s.execute("INSERT INTO 'memory://spark-double-decimal/g' (v) VALUES (CAST('1e-20' AS DOUBLE))")
            .await
            .unwrap();
        assert_eq!(rows(&s, "SELECT v, g FROM 'memory://spark-double-decimal/g'").await, vec!["1e-20|1e-20"]);
        s.execute("CREATE TABLE 'memory://spark-double-decimal/d' (d DECIMAL(38,10))").await.unwrap();
        for (rule, construct) in [("d + d > 0", "past 38 digits"), ("d * 1e0 > 0", "exponent literal")] {
            let err = fails(&s, &format!("ALTER TABLE 'memory://spark-double-decimal/d' ADD CONSTRAINT c CHECK ({rule})"), construct).await;
            assert!(err.contains("Spark"), "{err}");
        }
    });
}
