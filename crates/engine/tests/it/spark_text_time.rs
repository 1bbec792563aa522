//! String and date/time functions as Spark 4 (ANSI) computes them, or refused with one line where
//! this engine would store another value (`spark/text_time.rs`; red team helper-44, each value
//! checked against Spark on twin tables).

use crate::common::rt;
use crate::spark_semantics::{fails, rows, session};

#[test]
fn string_and_date_functions_as_spark() {
    let s = session("memory://spark-text-time/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, x DOUBLE, l BIGINT, s STRING, n INT, d DATE)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, 1.0D, 9007199254740993, 'hello world', -1, DATE '2024-01-01')",
        )
        .await
        .unwrap();
        // nvl2 is typed by its second and third arguments only.
        assert_eq!(
            rows(&s, "SELECT nvl2(x, l, 0), CAST(nvl2(x, 1, 2) AS STRING), CAST(nvl2(d, 1, 2) AS STRING) FROM t").await,
            vec!["9007199254740993|1|1"]
        );
        s.execute("UPDATE t SET l = nvl2(x, l, 0), s = regexp_replace(s, 'l', 'L')")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT l, s FROM t").await,
            vec!["9007199254740993|heLLo worLd"]
        );
        assert_eq!(
            rows(&s, "SELECT regexp_replace('ab', '', '-'), lpad('ab', n, 'x'), rpad('ab', n) FROM t").await,
            vec!["-a-b-||"]
        );
    });
}

#[test]
fn what_would_differ_from_spark_is_refused() {
    let s = session("memory://spark-text-time-refused/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, s STRING, n INT, d DATE, ts TIMESTAMP)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, '1.05', 7, DATE '2024-01-01', TIMESTAMP '2024-02-29 12:34:56.5')",
        )
        .await
        .unwrap();
        for (sql, needle) in [
            ("UPDATE t SET s = initcap(s)", "initcap"),
            ("UPDATE t SET s = CAST(ts AS STRING)", "TIMESTAMP made a string"),
            ("UPDATE t SET s = concat(ts, '')", "TIMESTAMP made a string"),
            ("UPDATE t SET s = from_unixtime(0)", "from_unixtime"),
            ("UPDATE t SET d = TRY_CAST('2024' AS DATE)", "TRY_CAST"),
            ("UPDATE t SET s = 'x' WHERE CAST(s AS BOOLEAN)", "BOOLEAN"),
            ("UPDATE t SET ts = d + INTERVAL 36 HOURS", "time part"),
            ("UPDATE t SET n = d - DATE '2023-12-01'", "DATE - DATE"),
            ("DELETE FROM t WHERE s = 1.1", "DECIMAL"),
            ("UPDATE t SET s = CASE WHEN id = 1 THEN s ELSE n END", "CASE"),
            ("UPDATE t SET s = coalesce(n, 'z')", "coalesce"),
            ("UPDATE t SET n = extract(SECOND FROM ts)", "SECOND"),
            ("UPDATE t SET n = extract(EPOCH FROM ts)", "epoch"),
            ("UPDATE t SET n = extract(DOW FROM d)", "DOW"),
        ] {
            fails(&s, sql, needle).await;
        }
        // Nothing was written: the row is as inserted.
        assert_eq!(
            rows(&s, "SELECT s, n, d FROM t").await,
            vec!["1.05|7|2024-01-01"]
        );
        // What stays: whole-day intervals, literal comparisons of strings with integers.
        assert_eq!(
            rows(&s, "SELECT d + INTERVAL 2 DAYS, s = '1.05' FROM t").await,
            vec!["2024-01-03|true"]
        );
    });
}
