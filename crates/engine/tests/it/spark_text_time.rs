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
        // ltrim/rtrim(trimStr, str): the characters first; TRIM(LEADING … FROM …) as before.
        assert_eq!(
            rows(&s, "SELECT ltrim('x', 'xxhixx') AS a, rtrim('x', 'hixx'), TRIM(LEADING 'x' FROM 'xxhixx') AS b, ltrim('  a ') FROM t").await,
            vec!["hixx|hi|hixx|a "]
        );
        s.execute("UPDATE t SET s = ltrim('h', s)").await.unwrap();
        assert_eq!(rows(&s, "SELECT s FROM t").await, vec!["eLLo worLd"]);
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
            ("UPDATE t SET s = regexp_replace(s, '(1)', '$1x')", "replacement"),
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

/// A TIMESTAMP made a string, stored into a STRING column or concatenated, is Spark's text
/// (`yyyy-MM-dd HH:mm:ss`, the fraction without trailing zeros); a zoned one in UTC, as a Spark
/// session whose time zone is UTC writes it.
#[test]
fn timestamps_as_text_as_spark() {
    let s = session("memory://spark-text-time-ts/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, s STRING, w STRING, z TIMESTAMP_NTZ, ts TIMESTAMP)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, 'a', 'b', TIMESTAMP '2024-02-29 12:34:56.5', TIMESTAMP '2023-03-04 05:06:07.089'), \
             (2, 'a', 'b', TIMESTAMP '1999-12-31 23:59:59', NULL)",
        )
        .await
        .unwrap();
        s.execute("UPDATE t SET s = z, w = concat(CAST(z AS STRING), '|', z || '', '|', ts)")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, s, w FROM t").await,
            vec![
                "1|2024-02-29 12:34:56.5|2024-02-29 12:34:56.5|2024-02-29 12:34:56.5|2023-03-04 05:06:07.089",
                "2|1999-12-31 23:59:59|NULL"
            ]
        );
        // A string made a TIMESTAMP keeps microseconds (Spark's): the 7th digit is cut.
        assert_eq!(
            rows(&s, "SELECT count(*) FROM t WHERE CAST('2023-03-04 05:06:07.0890009' AS TIMESTAMP) > ts").await,
            vec!["0"]
        );
        s.execute("UPDATE t SET s = ts WHERE id = 1").await.unwrap();
        assert_eq!(
            rows(&s, "SELECT s FROM t WHERE id = 1").await,
            vec!["2023-03-04 05:06:07.089"]
        );
    });
}

/// Arrays, structs and math functions as Spark computes them, or refused where this engine would
/// store another value (`spark/collections.rs`; red team helper-45 on twin tables).
#[test]
fn arrays_structs_and_math_as_spark_or_refused() {
    let s = session("memory://spark-collections/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, a ARRAY<INT>, n INT, x DOUBLE)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, make_array(3, 1, 2), 0, -0.0D), (2, make_array(NULL, 5, 5), 1, 2.5D), \
             (3, NULL, 2, NULL)",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(
                &s,
                "SELECT id, array_sort(a), array_append(a, 7), cardinality(a), \
                 arrow_typeof(cardinality(a)), signum(x), atan2(x, -1.0D) > 0 FROM t"
            )
            .await,
            vec![
                "1|[1, 2, 3]|[3, 1, 2, 7]|3|Int32|-0.0|true",
                "2|[5, 5, NULL]|[NULL, 5, 5, 7]|3|Int32|1.0|true",
                "3|NULL|NULL|NULL|Int32|NULL|NULL"
            ]
        );
        // chr(n) is the character of n mod 256 (Spark's); 256 (U+0000 in Spark) raises here.
        assert_eq!(
            rows(&s, "SELECT chr(n + 321), chr(66) FROM t WHERE id = 1").await,
            vec!["A|B"]
        );
        assert!(s.execute("SELECT chr(n + 256) FROM t").await.is_err());
        let st = rows(&s, "SELECT arrow_typeof(struct(n, x + 1)) FROM t WHERE id = 2").await;
        assert!(
            st[0].contains("\"n\"") && st[0].contains("\"col2\""),
            "{st:?}"
        );
        for (sql, needle) in [
            ("UPDATE t SET n = a[1]", "subscript"),
            ("UPDATE t SET n = element_at(a, 1)", "element_at"),
            (
                "DELETE FROM t WHERE NOT array_contains(a, 2)",
                "array_contains",
            ),
            ("UPDATE t SET a = array_remove(a, 5)", "array_remove"),
            ("UPDATE t SET n = array_position(a, 9)", "array_position"),
            ("UPDATE t SET n = length(concat_ws('-', a))", "concat"),
        ] {
            fails(&s, sql, needle).await;
        }
        assert_eq!(
            rows(&s, "SELECT id, n FROM t").await,
            vec!["1|0", "2|1", "3|2"]
        );
    });
}
