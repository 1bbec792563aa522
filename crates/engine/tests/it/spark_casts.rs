//! Casts, literals and NULL-handling functions mean what Spark means in the rows a statement
//! touches (red team helper-36, each case checked against Spark 4): a cast that is not exact keeps
//! its meaning in a comparison (DataFusion's simplifier unwrapped it), `DECIMAL` without a
//! precision is DECIMAL(10,0), an integer literal past BIGINT is a DECIMAL, a literal of more than
//! 38 digits is refused, and `nvl` keeps a DECIMAL.

use delta_rlc_engine::sql::SqlSession;

use crate::common::{latest_snapshot, rt};
use crate::spark_semantics::{fails, rows, session};

async fn table(s: &SqlSession) {
    s.execute("CREATE TABLE t (id BIGINT, d DECIMAL(10,2), h DECIMAL(5,0), e DECIMAL(38,10))")
        .await
        .unwrap();
    s.execute(
        "INSERT INTO t VALUES (1, 1.25, 2, 999999999999999999999999999.9999999999), \
         (2, 2.50, 300, 1.5), (3, 99999999.99, 5, NULL)",
    )
    .await
    .unwrap();
}

/// `CAST(d AS INT) = 1` is true on 1.25 (the cast truncates); unwrapped to `d = 1.00` it was
/// false, and `<> 1` deleted a row Spark keeps. A narrowing cast raises in a DML predicate as in a
/// query (`CAST(h AS TINYINT)` of 300).
#[test]
fn a_cast_in_a_predicate_keeps_its_meaning() {
    let loc = "memory://spark-casts-predicate/t";
    let s = session(loc);
    rt().block_on(async {
        table(&s).await;
        assert_eq!(
            rows(&s, "SELECT id FROM t WHERE CAST(d AS INT) = 1").await,
            vec!["1"]
        );
        assert_eq!(
            rows(&s, "SELECT id FROM t WHERE TRY_CAST(d AS BIGINT) IN (1, 2)").await,
            vec!["1", "2"]
        );
        s.execute("DELETE FROM t WHERE CAST(d AS INT) <> 1 AND id < 3")
            .await
            .unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t").await, vec!["1", "3"]);
        let before = latest_snapshot(loc).await.version;
        s.execute("INSERT INTO t VALUES (4, 0.30, 300, 0)")
            .await
            .unwrap();
        // Spark raises [CAST_OVERFLOW]; here Arrow's cast error, naming the value.
        fails(&s, "DELETE FROM t WHERE CAST(h AS TINYINT) = 2", "300").await;
        fails(
            &s,
            "UPDATE t SET d = 0 WHERE CAST(d AS DECIMAL(5,1)) = 0.3",
            "too large to store",
        )
        .await;
        assert_eq!(latest_snapshot(loc).await.version, before + 1);
        s.execute("DELETE FROM t WHERE CAST(d AS DECIMAL) = 1")
            .await
            .unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t").await, vec!["3", "4"]);
    });
}

/// `DECIMAL` alone is DECIMAL(10,0) (HALF_UP), a literal past BIGINT a DECIMAL of its digits, a
/// literal of more than 38 digits refused with nothing written, and `nvl(e, 0)` a DECIMAL.
#[test]
fn literals_and_decimal_defaults_are_sparks() {
    let loc = "memory://spark-casts-literals/t";
    let s = session(loc);
    rt().block_on(async {
        table(&s).await;
        for (expr, want) in [
            ("CAST(2.50 AS DECIMAL)", "3|Decimal128(10, 0)"),
            ("TRY_CAST(1.25 AS NUMERIC)", "1|Decimal128(10, 0)"),
            (
                "9223372036854775808",
                "9223372036854775808|Decimal128(19, 0)",
            ),
            (
                "18446744073709551615 + 1",
                "18446744073709551616|Decimal128(21, 0)",
            ),
        ] {
            assert_eq!(
                rows(&s, &format!("SELECT {expr}, arrow_typeof({expr})")).await,
                vec![want],
                "{expr}"
            );
        }
        let before = latest_snapshot(loc).await.version;
        fails(
            &s,
            "INSERT INTO t VALUES (5, 0.000000000000000000000000000000000000001, 1, 1)",
            "more than 38 digits",
        )
        .await;
        fails(
            &s,
            "DELETE FROM t WHERE e = 1234567890123456789012345678901234567890",
            "more than 38 digits",
        )
        .await;
        assert_eq!(latest_snapshot(loc).await.version, before);
        s.execute("UPDATE t SET e = nvl(e, 0)").await.unwrap();
        assert_eq!(
            rows(&s, "SELECT id, e FROM t").await,
            vec![
                "1|999999999999999999999999999.9999999999",
                "2|1.5000000000",
                "3|0.0000000000"
            ]
        );
    });
}

/// DECIMALs of two shapes past 38 digits meet in Spark 4's common type, integer digits first: a
/// DECIMAL(38,18) against a DECIMAL(38,2) compares rounded to 2 places, and `coalesce` and CASE
/// give the DECIMAL(38,2) (DataFusion kept the 18 places: other rows deleted, other values stored).
#[test]
fn decimals_of_two_shapes_meet_in_sparks_type() {
    let loc = "memory://spark-casts-wider/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, a DECIMAL(38,18), b DECIMAL(38,2))")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, 1.005, 1.01), (2, 1.004, 1.01), (3, NULL, 7.25), (4, 1.5, 0)",
        )
        .await
        .unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t WHERE a = b").await, vec!["1"]);
        assert_eq!(
            rows(&s, "SELECT id FROM t WHERE a > CAST(1 AS DECIMAL(38,0))").await,
            vec!["4"]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT id, coalesce(a, b), arrow_typeof(coalesce(a, b)), \
                 CASE WHEN id < 3 THEN a ELSE b END FROM t"
            )
            .await,
            vec![
                "1|1.01|Decimal128(38, 2)|1.01",
                "2|1.00|Decimal128(38, 2)|1.00",
                "3|7.25|Decimal128(38, 2)|7.25",
                "4|1.50|Decimal128(38, 2)|0.00"
            ]
        );
        s.execute("UPDATE t SET a = coalesce(a, b)").await.unwrap();
        assert_eq!(
            rows(&s, "SELECT id, a FROM t").await,
            vec![
                "1|1.010000000000000000",
                "2|1.000000000000000000",
                "3|7.250000000000000000",
                "4|1.500000000000000000"
            ]
        );
    });
}

/// A query's schema is the one its rows come in, after Spark's typing: a MERGE source computing
/// `d * 3` on a DECIMAL(10,2) (DECIMAL(12,2) in Spark) failed with a schema mismatch reported as
/// a corrupt table, and CREATE TABLE AS SELECT took DataFusion's DECIMAL(31,2).
#[test]
fn a_query_schema_has_its_rows_types() {
    let loc = "memory://spark-casts-schema/t";
    let mut s = session(loc);
    s.register("c", "memory://spark-casts-schema/c");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, d DECIMAL(10,2))")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 1.25), (2, 2.50)")
            .await
            .unwrap();
        s.execute(
            "MERGE INTO t USING (SELECT id, d * 3 AS v FROM t) AS s ON t.id = s.id \
             WHEN MATCHED THEN UPDATE SET d = s.v / 7",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, d FROM t").await,
            vec!["1|0.54", "2|1.07"]
        );
        s.execute("CREATE TABLE c AS SELECT id, d * 3 AS v FROM t")
            .await
            .unwrap();
        let snap = latest_snapshot("memory://spark-casts-schema/c").await;
        let v = snap.schema.fields.iter().find(|f| f.name == "v").unwrap();
        assert_eq!(
            v.data_type,
            delta_rlc_protocol::schema::DataType::Primitive(
                delta_rlc_protocol::schema::PrimitiveType::Decimal {
                    precision: 12,
                    scale: 2
                }
            )
        );
    });
}

/// `nvl` takes every `coalesce` rule (an INT literal stays INT arithmetic's operand), and
/// `-9223372036854775808` stays one BIGINT literal (review helper-37).
#[test]
fn nvl_is_coalesce_and_the_smallest_bigint_is_a_bigint() {
    let loc = "memory://spark-casts-nvl/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (i INT)").await.unwrap();
        s.execute("INSERT INTO t VALUES (NULL)").await.unwrap();
        fails(
            &s,
            "SELECT nvl(i, 1) + 2147483647 FROM t",
            "ARITHMETIC_OVERFLOW",
        )
        .await;
        assert_eq!(
            rows(
                &s,
                "SELECT -9223372036854775808, arrow_typeof(-9223372036854775808)"
            )
            .await,
            vec!["-9223372036854775808|Int64"]
        );
    });
}

/// `avg` of a DECIMAL rounds HALF_UP once (DataFusion's truncated: 0.666666 was stored), `round`
/// of a DOUBLE rounds its shortest text HALF_UP (1.255 was 1.25, so the DELETE missed the row
/// Spark deletes), `ceil`/`floor` are BIGINT and integral DECIMALs (a CTAS stored DOUBLE and
/// DECIMAL(10,2)), and a DECIMAL sum past its type stops an `avg` too. Values from Spark 4.
#[test]
fn averages_and_rounding_store_what_spark_stores() {
    let loc = "memory://spark-casts-rounding/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, d DECIMAL(10,2), f DECIMAL(14,6), x DOUBLE)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 2.00, 0, 1.255), (2, 0, 0, 1.005), (3, 0, 0, -2.5)")
            .await
            .unwrap();
        s.execute("INSERT INTO t SELECT max(id) + 1, 0, avg(d), round(avg(x) * 100, -1) FROM t")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT f, x FROM t WHERE id = 4").await,
            vec!["0.666667|-10.0"]
        );
        // Per group and in a sliding window too: -2 and 0 in DECIMAL(10,0) average -0.6667.
        assert_eq!(
            rows(
                &s,
                "SELECT avg(CAST(-d AS DECIMAL(10,0))) FROM t WHERE id < 4 GROUP BY id < 9"
            )
            .await,
            vec!["-0.6667"]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT id, avg(d) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) \
                 FROM t WHERE id < 4"
            )
            .await,
            vec!["1|2.000000", "2|1.000000", "3|0.666667"]
        );
        s.execute("DELETE FROM t WHERE round(x, 2) = 1.26 OR round(x, 2) = 1.01")
            .await
            .unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t").await, vec!["3", "4"]);
        assert_eq!(
            rows(
                &s,
                "SELECT arrow_typeof(ceil(x)), ceil(x) || '', floor(CAST(-1.5 AS DECIMAL(10,2))) || '', \
                 arrow_typeof(floor(CAST(-1.5 AS DECIMAL(10,2)))) FROM t WHERE id = 3"
            )
            .await,
            vec!["Int64|-2|-2|Decimal128(9, 0)"]
        );
        fails(
            &s,
            "SELECT avg(CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0))) FROM t",
            "ARITHMETIC_OVERFLOW",
        )
        .await;
        // A sliding frame is summed afresh, as Spark sums it: in legacy mode a frame whose sum
        // overflows is NULL and the next frames are not (they stayed NULL, red team helper-38).
        s.execute("SET spark.sql.ansi.enabled = false").await.unwrap();
        let big = "CAST(90000000000000000000000000000000000000 AS DECIMAL(38,0))";
        assert_eq!(
            rows(
                &s,
                &format!(
                    "SELECT i, avg(d) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) \
                     FROM (VALUES (1, {big}), (2, {big}), (3, -{big}), (4, CAST(1 AS DECIMAL(38,0))), \
                     (5, CAST(3 AS DECIMAL(38,0)))) v(i, d)"
                )
            )
            .await,
            vec!["1|NULL", "2|NULL", "3|0.0000", "4|NULL", "5|2.0000"]
        );
    });
}

/// An integer literal in a VALUES row is an INT when it fits, as in Spark: the column was BIGINT,
/// so `x + 2147483647` over `VALUES (1)` gave 2147483648 where Spark raises, a CTAS from VALUES
/// made a `long` column where Spark makes an `integer` one, and beside a DECIMAL(10,2) the column
/// was DECIMAL(22,2) (Spark: DECIMAL(12,2)). `0x41` is a name to Spark: refused, `X'41'` works.
#[test]
fn values_rows_type_integer_literals_as_spark() {
    let loc = "memory://spark-casts-values/t";
    let s = session(loc);
    rt().block_on(async {
        fails(
            &s,
            "SELECT x + 2147483647 FROM (VALUES (1), (2)) v(x)",
            "ARITHMETIC_OVERFLOW",
        )
        .await;
        assert_eq!(
            rows(
                &s,
                "SELECT arrow_typeof(x), arrow_typeof(y) FROM (VALUES (1, CAST(1 AS DECIMAL(10,2))), \
                 (-2, 0)) v(x, y) LIMIT 1"
            )
            .await,
            vec!["Int32|Decimal128(12, 2)"]
        );
        // Past INT the column is BIGINT, as Spark's.
        assert_eq!(
            rows(
                &s,
                "SELECT arrow_typeof(x) FROM (VALUES (1), (3000000000)) v(x) LIMIT 1"
            )
            .await,
            vec!["Int64"]
        );
        s.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'b')) v(id, s)")
            .await
            .unwrap();
        let snap = latest_snapshot(loc).await;
        let id = snap.schema.fields.iter().find(|f| f.name == "id").unwrap();
        assert_eq!(
            id.data_type,
            delta_rlc_protocol::schema::DataType::Primitive(
                delta_rlc_protocol::schema::PrimitiveType::Integer
            )
        );
        // Signed and computed literals too (red team helper-38), and a VALUES column made
        // DOUBLE is DOUBLE in the arithmetic over it (it stayed DECIMAL(31,15): 2.46914e-10
        // was stored where Spark stores 2.4691357802469136e-10).
        fails(
            &s,
            "SELECT a + a FROM (VALUES (1), (-2147483648), (+5), (1 + 1)) v(a)",
            "ARITHMETIC_OVERFLOW",
        )
        .await;
        assert_eq!(
            rows(
                &s,
                "SELECT arrow_typeof(a + a), a + a FROM (VALUES (1.5), (1.2345678901234567e-10D)) v(a)"
            )
            .await,
            vec!["Float64|2.4691357802469136e-10", "Float64|3.0"]
        );
        // A literal selected as a column is an INT too, alone and in a UNION (helper-38).
        fails(&s, "SELECT a + 2147483647 FROM (SELECT 1 a) x", "ARITHMETIC_OVERFLOW").await;
        assert_eq!(
            rows(
                &s,
                "SELECT DISTINCT arrow_typeof(a) FROM (SELECT 1 a UNION ALL VALUES (2), (3)) x"
            )
            .await,
            vec!["Int32"]
        );
        fails(&s, "SELECT 0x41", "write X'41'").await;
        assert_eq!(rows(&s, "SELECT X'41' = X'41'").await, vec!["true"]);
    });
}

/// `substring`, `left`, `right` cut at Spark's positions (0 is the first character, negative
/// counts from the end) and the logarithms are Spark's (natural `log`, NULL at the asymptote), in
/// what an UPDATE stores and a DELETE removes. Values from Spark 4.
#[test]
fn substrings_and_logarithms_store_what_spark_stores() {
    let loc = "memory://spark-casts-substring/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id INT, s STRING, x DOUBLE)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 'hello', 100), (2, 'héllo', 0), (3, NULL, -1)")
            .await
            .unwrap();
        s.execute(
            "UPDATE t SET s = substring(s, 0, 3) || SUBSTRING(s FROM -2 FOR 1) || right(s, 1) \
             || left(s, -1), x = log(x)",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, s, x FROM t").await,
            vec!["1|hello|4.605170185988092", "2|héllo|NULL", "3|NULL|NULL"]
        );
        s.execute("DELETE FROM t WHERE substr(s, -2) = 'lo' AND left(s, 2) = 'hé'")
            .await
            .unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t").await, vec!["1", "3"]);
        assert_eq!(
            rows(
                &s,
                "SELECT log(2, 8), log10(1000), log(2, 0) IS NULL, log1p(-1) IS NULL"
            )
            .await,
            vec!["3.0|3.0|true|true"]
        );
    });
}

/// A MERGE's clause conditions and values take Spark's meaning as every other expression does:
/// they were evaluated without the rewrite, so `date_format(d, 'yyyy-MM-dd')` stored the pattern
/// itself and a clause condition on it matched nothing (red team helper-39). Also `round` of a
/// DOUBLE, `ceil`, and a refused pattern letter. Values from Spark 4.
#[test]
fn merge_clauses_mean_what_spark_means() {
    let loc = "memory://spark-casts-merge/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id INT, d DATE, s STRING, x DOUBLE)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, DATE'2024-02-29', 'a', 1.005), (2, DATE'2023-01-01', 'b', 2.5)")
            .await
            .unwrap();
        s.execute(
            "MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 3) u ON t.id = u.id \
             WHEN MATCHED AND date_format(t.d, 'MM-dd') = '02-29' THEN \
               UPDATE SET s = date_format(t.d, 'yyyy-MM-dd'), x = round(t.x, 2) \
             WHEN NOT MATCHED THEN INSERT (id, d, s, x) \
               VALUES (u.id, DATE'2020-01-02', date_format(DATE'2020-01-02', 'EEEE d MMMM'), ceil(2.5e0))",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, s, x FROM t").await,
            vec!["1|2024-02-29|1.01", "2|b|2.5", "3|Thursday 2 January|3.0"]
        );
        fails(
            &s,
            "MERGE INTO t USING (SELECT 1 AS id) u ON t.id = u.id WHEN MATCHED THEN UPDATE SET s = date_format(t.d, 'Q')",
            "pattern letters Q",
        )
        .await;
        fails(&s, "SELECT date_format(d, '[yyyy]') FROM t", "optional section").await;
        // DECIMAL arithmetic in a clause is Spark's too: DECIMAL(38,10) + DECIMAL(38,10) is
        // DECIMAL(38,9), rounded HALF_UP (the bare plan stored 0.0000000005).
        s.execute("ALTER TABLE t ADD COLUMNS (a DECIMAL(38,10))")
            .await
            .unwrap();
        s.execute(
            "MERGE INTO t USING (SELECT 2 AS id, CAST(0.0000000005 AS DECIMAL(38,10)) AS v, \
             CAST(0 AS DECIMAL(38,10)) AS w) u ON t.id = u.id WHEN MATCHED THEN UPDATE SET a = u.v + u.w",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT CAST(a AS STRING) FROM t WHERE id = 2").await,
            vec!["0.0000000010"]
        );
        assert_eq!(
            rows(&s, "SELECT substr('héllo', -2147483648)").await,
            vec!["héll"]
        );
    });
}

/// Bit operations take Spark's types: `&`, `|`, `^` the wider operand's (an INT literal is an
/// INT), a shift its left operand's, wrapping there. On an INT `p`, `p << 1` of 2^30 is -2^31 in
/// Spark; computed as a BIGINT it was 2^31, and `DELETE … WHERE p << 1 < 0` kept the row Spark
/// deletes. A BIGINT shift amount is cast to INT, as Spark casts it. Values from Spark 4.
#[test]
fn bit_operations_wrap_in_sparks_types() {
    let loc = "memory://spark-casts-bitwise/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, p INT, b TINYINT)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 1073741824, 1), (2, 5, -1), (3, -1, 127)")
            .await
            .unwrap();
        assert_eq!(
            rows(
                &s,
                "SELECT id, p << 1, p >> 1, p & 3, p | 8, p ^ 1, b << 1, b & 3, id << 62, \
                 p << 33, p << -1, arrow_typeof(p << 1), arrow_typeof(b & b), \
                 arrow_typeof(b & 3), arrow_typeof(b << 1), arrow_typeof(id & 1) \
                 FROM t ORDER BY id"
            )
            .await,
            vec![
                "1|-2147483648|536870912|0|1073741832|1073741825|2|1|4611686018427387904|\
                 -2147483648|0|Int32|Int8|Int32|Int32|Int64",
                "2|10|2|1|13|4|-2|3|-9223372036854775808|10|-2147483648|Int32|Int8|Int32|Int32|Int64",
                "3|-2|-1|3|-1|-2|254|3|-4611686018427387904|-2|-2147483648|Int32|Int8|Int32|Int32|Int64",
            ]
        );
        // A BIGINT amount is cast to INT, raising past it (Spark: CAST_OVERFLOW).
        assert_eq!(
            rows(&s, "SELECT p << id, arrow_typeof(p << id) FROM t WHERE id = 2").await,
            vec!["20|Int32"]
        );
        fails(&s, "SELECT p << 3000000000 FROM t", "3000000000").await;
        s.execute("DELETE FROM t WHERE p << 1 < 0").await.unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t ORDER BY id").await, vec!["2"]);
        // `A ^ A` is NULL on NULL and evaluates A (DataFusion's simplifier made it 0: a DELETE
        // by it took the NULL row, and an overflow in A was never raised); a DOUBLE or DECIMAL
        // shifted is an INT first (red team helper-40; Spark 4's values).
        s.execute("INSERT INTO t VALUES (4, NULL, NULL)")
            .await
            .unwrap();
        assert_eq!(
            rows(
                &s,
                "SELECT id, p ^ p, (p + 1) ^ (p + 1), arrow_typeof(1.0D << 40), 1.0D << 40, \
                 2147483647.0D << 1, CAST(2.5 AS DECIMAL(2,1)) << 1 FROM t"
            )
            .await,
            vec!["2|0|0|Int32|256|-2|4", "4|NULL|NULL|Int32|256|-2|4"]
        );
        fails(
            &s,
            "SELECT (p + 2147483647) ^ (p + 2147483647) FROM t",
            "ARITHMETIC_OVERFLOW",
        )
        .await;
        fails(&s, "SELECT p & 2.5 FROM t", "needs integer operands").await;
        fails(&s, "DELETE FROM t WHERE (id | 1.0D) = 1", "needs integer operands").await;
        s.execute("DELETE FROM t WHERE (p ^ p) = 0").await.unwrap();
        assert_eq!(rows(&s, "SELECT id FROM t").await, vec!["4"]);
    });
}

/// In a window, `sum` of DOUBLEs and `avg` of integers and DOUBLEs add the frame's rows in order,
/// a sliding frame afresh per row, as Spark does: DataFusion's took the leaving rows out again,
/// so after 1e17 left the frame, 3 and 5 summed to 0 (red team helper-40; Spark 4's values).
/// Covariance over a sliding frame is refused (it drifted the same way).
#[test]
fn window_frames_sum_doubles_as_spark_does() {
    let loc = "memory://spark-casts-window-doubles/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, b BIGINT, x DOUBLE)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, 100000000000000000, 1e17), (2, 3, 3.0), (3, 5, 5.0), \
             (4, 9223372036854775807, NULL), (5, -9223372036854775808, NULL)",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(
                &s,
                "SELECT id, avg(b) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), \
                 sum(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), \
                 avg(x) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) \
                 FROM t WHERE id <= 3"
            )
            .await,
            vec!["1|1e17|1e17|5e16", "2|5e16|1e17|4.0", "3|4.0|8.0|5.0",]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT avg(b) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) \
                 FROM t WHERE id >= 4 ORDER BY id"
            )
            .await,
            vec!["0.0", "9.223372036854776e18"]
        );
        // A sliding frame's standard deviation is computed afresh per frame with Spark's
        // arithmetic (`moments`); covariance over one is refused (its running moments drift).
        assert_eq!(
            rows(
                &s,
                "SELECT s FROM (SELECT id, stddev(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING \
                 AND CURRENT ROW) AS s FROM t) WHERE id = 3"
            )
            .await,
            vec!["1.4142135623730951"]
        );
        fails(
            &s,
            "SELECT covar_samp(x, x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) \
             FROM t",
            "frame that slides",
        )
        .await;
        assert_eq!(
            rows(
                &s,
                "SELECT stddev(x) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND \
                 CURRENT ROW) FROM t WHERE id IN (2, 3)"
            )
            .await,
            vec!["1.4142135623730951", "NULL"]
        );
    });
}

/// A DECIMAL sum in a window is exact until its result, as Spark's: {9e37, 9e37, -9e37} in
/// DECIMAL(38,0) is 9e37 there; a GROUP BY's checks every addition (red team helper-41). A sum
/// past the type raises in ANSI mode and is NULL in legacy mode (which wrapped in 128 bits here;
/// helper-40). Values from Spark 4 on Delta tables.
#[test]
fn decimal_sums_check_where_spark_checks() {
    let loc = "memory://spark-casts-decimal-sums/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, e DECIMAL(38,0))")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, 90000000000000000000000000000000000000), \
             (2, 90000000000000000000000000000000000000), \
             (3, -90000000000000000000000000000000000000)",
        )
        .await
        .unwrap();
        let nine = "90000000000000000000000000000000000000";
        // A window's buffer is exact: only each row's result is checked.
        assert_eq!(
            rows(&s, "SELECT DISTINCT sum(e) OVER () FROM t").await,
            vec![nine]
        );
        // A GROUP BY or whole-table sum checks every addition, as Spark's aggregate buffer
        // (DECIMAL(38,0) here) does: 9e37 + 9e37 raises although the total fits.
        fails(&s, "SELECT sum(e) FROM t", "NUMERIC_VALUE_OUT_OF_RANGE").await;
        fails(
            &s,
            "SELECT sum(e) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM t",
            "NUMERIC_VALUE_OUT_OF_RANGE",
        )
        .await;
        fails(
            &s,
            "SELECT sum(e) FROM t WHERE id < 3",
            "NUMERIC_VALUE_OUT_OF_RANGE",
        )
        .await;
        s.execute("SET spark.sql.ansi.enabled = false")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT sum(e) FROM t WHERE id < 3").await,
            vec!["NULL"]
        );
        assert_eq!(
            rows(&s, "SELECT id < 3, sum(e) FROM t GROUP BY id < 3").await,
            vec![
                "false|-90000000000000000000000000000000000000".to_string(),
                "true|NULL".to_string()
            ]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT id, sum(e) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING), \
                 sum(e) OVER (ORDER BY id) FROM t"
            )
            .await,
            vec![
                format!("1|NULL|{nine}"),
                "2|0|NULL".to_string(),
                format!("3|-{nine}|{nine}"),
            ]
        );
    });
}

/// A RANGE frame's offset bounds are `key - n` / `key + n` in the key's type, as in Spark: a key
/// within `n` of its type's limit raises `[ARITHMETIC_OVERFLOW]` (DataFusion's exact bounds
/// computed a value Spark never writes; red team helper-40). Keys away from the limits, ROWS
/// frames and bounds that do not move toward the limit compute.
#[test]
fn range_frame_bounds_overflow_as_in_spark() {
    let loc = "memory://spark-casts-range-frames/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, i INT, x BIGINT)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 2147483647, 1), (2, 0, 2), (3, -2147483648, 3)")
            .await
            .unwrap();
        for sql in [
            "SELECT sum(x) OVER (ORDER BY i RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM t",
            "SELECT count(*) OVER (ORDER BY i RANGE BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING) \
             FROM t WHERE i >= 0",
            "SELECT sum(x) OVER (ORDER BY i DESC RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) \
             FROM t WHERE i >= 0",
            "INSERT INTO t SELECT 9, 9, sum(x) OVER (ORDER BY i RANGE BETWEEN 1 PRECEDING AND \
             CURRENT ROW) FROM t",
        ] {
            fails(&s, sql, "ARITHMETIC_OVERFLOW").await;
        }
        assert_eq!(rows(&s, "SELECT count(*) FROM t").await, vec!["3"]);
        assert_eq!(
            rows(
                &s,
                "SELECT i, sum(x) OVER (ORDER BY i RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING), \
                 sum(x) OVER (ORDER BY i DESC RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), \
                 sum(x) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) \
                 FROM t WHERE i <= 0"
            )
            .await,
            vec!["-2147483648|3|3|5", "0|2|2|5"]
        );
    });
}

/// Aggregates and windows as Spark computes them (red team helper-41; values from Spark 4): a
/// grouped `max`/`min` of floats orders NaN above everything and keeps -Infinity (DataFusion's
/// gave NaN-blind results and -1.79e308); `sum(DISTINCT b)` and a grouped DECIMAL sum raise on
/// overflow (legacy mode: NULL); `var_samp` of INTs is computed in DOUBLE; a RANGE frame over a
/// DATE counts its number in days (DataFusion read months); DISTINCT in a window and
/// `nth_value(x, 0)` are refused as Spark refuses them.
#[test]
fn aggregates_and_windows_as_spark() {
    let loc = "memory://spark-casts-aggregates/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, g INT, x DOUBLE, b BIGINT, i INT, dt DATE, \
             d DECIMAL(38,0))",
        )
        .await
        .unwrap();
        s.execute(
            "INSERT INTO t VALUES \
             (1, 1, CAST('NaN' AS DOUBLE), 9223372036854775807, 2147483647, DATE'2020-02-01', \
              90000000000000000000000000000000000000), \
             (2, 1, 5.0, 1, 2147483647, DATE'2020-02-02', 90000000000000000000000000000000000000), \
             (3, 1, -0.0D, 1, 2147483646, DATE'2020-03-02', -90000000000000000000000000000000000000), \
             (4, 2, CAST('-Infinity' AS DOUBLE), 5, 1, DATE'2020-03-03', 1), \
             (5, 3, 0.2, 3, 2, DATE'2020-03-05', 2), \
             (6, 3, CAST('NaN' AS DOUBLE), 3, 3, NULL, 3)",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT g, max(x), min(x) FROM t GROUP BY g").await,
            vec!["1|NaN|-0.0", "2|-inf|-inf", "3|NaN|0.2"]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT g, max(f), min(f) FROM (SELECT g, CAST(x AS FLOAT) AS f FROM t) GROUP BY g"
            )
            .await,
            vec!["1|NaN|-0.0", "2|-inf|-inf", "3|NaN|0.2"]
        );
        assert_eq!(
            rows(&s, "SELECT g, sum(DISTINCT b) FROM t WHERE g > 1 GROUP BY g").await,
            vec!["2|5", "3|3"]
        );
        fails(&s, "SELECT g, sum(DISTINCT b) FROM t GROUP BY g", "ARITHMETIC_OVERFLOW").await;
        fails(&s, "SELECT g, sum(d) FROM t GROUP BY g", "NUMERIC_VALUE_OUT_OF_RANGE").await;
        assert_eq!(
            rows(
                &s,
                "SELECT id, var_samp(i) OVER (ORDER BY id), stddev(i) OVER (ORDER BY id) \
                 FROM t WHERE g = 1"
            )
            .await[2],
            "3|0.33333333333333337|0.5773502691896258"
        );
        assert_eq!(
            rows(
                &s,
                "SELECT id, count(*) OVER (ORDER BY dt RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), \
                 count(*) OVER (ORDER BY dt DESC RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM t"
            )
            .await,
            vec!["1|1|1", "2|2|2", "3|1|1", "4|2|2", "5|1|1", "6|1|1"]
        );
        fails(
            &s,
            "SELECT count(DISTINCT b) OVER (PARTITION BY g) FROM t",
            "DISTINCT_WINDOW_FUNCTION_UNSUPPORTED",
        )
        .await;
        fails(&s, "SELECT nth_value(b, 0) OVER (ORDER BY id) FROM t", "VALUE_OUT_OF_RANGE").await;
        s.execute("SET spark.sql.ansi.enabled = false")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT g, sum(d) FROM t GROUP BY g").await,
            vec!["1|NULL", "2|1", "3|5"]
        );
    });
}

/// Float keys compare as Spark compares them: -0.0 equals 0.0 and every NaN is one NaN, in a
/// window's PARTITION BY and ORDER BY and in a DISTINCT aggregate's argument (red team helper-42:
/// `rank() OVER (ORDER BY x)` ranked -0.0 apart, and `avg(DISTINCT x)` beside `count(*)` counted
/// -0.0 and 0.0 as two values). Values from Spark 4.
#[test]
fn float_keys_compare_as_in_spark() {
    let loc = "memory://spark-casts-float-keys/t";
    let s = session(loc);
    rt().block_on(async {
        float_key_table(&s).await;
        assert_eq!(
            rows(
                &s,
                "SELECT id, count(*) OVER (PARTITION BY x), rank() OVER (ORDER BY x), \
                 sum(id) OVER (ORDER BY x) FROM t"
            )
            .await,
            vec!["1|2|1|3", "2|2|1|3", "3|1|3|6", "4|2|4|15", "5|2|4|15"]
        );
        assert_eq!(
            rows(&s, "SELECT avg(DISTINCT x), count(*) FROM t WHERE id <= 3").await,
            vec!["0.75|3"]
        );
        assert_eq!(
            rows(&s, "SELECT count(DISTINCT x), count(*) FROM t").await,
            vec!["3|5"]
        );
    });
}

/// Ids 1-5 holding 0.0, -0.0, 1.5, NaN and a NaN with its sign bit set.
async fn float_key_table(s: &SqlSession) {
    s.execute("CREATE TABLE t (id BIGINT, x DOUBLE)")
        .await
        .unwrap();
    s.execute(
        "INSERT INTO t VALUES (1, 0.0D), (2, -0.0D), (3, 1.5D), (4, CAST('NaN' AS DOUBLE)), \
         (5, -CAST('NaN' AS DOUBLE))",
    )
    .await
    .unwrap();
}

/// Float keys of a plan's own sorts, groups, set operations, joins and IN subqueries compare as
/// Spark compares them (`spark/float_plan_keys.rs`): -0.0 ties with 0.0 and a NaN with its sign
/// bit set is NaN, above every number. Before, `ORDER BY x` put that NaN first, GROUP BY and
/// DISTINCT kept it apart, and EXCEPT, USING and `IN (SELECT …)` matched by bits.
#[test]
fn float_keys_of_plans_compare_as_in_spark() {
    let loc = "memory://spark-casts-float-plan-keys/t";
    let mut s = session(loc);
    s.register("g", "memory://spark-casts-float-plan-keys/g");
    rt().block_on(async {
        float_key_table(&s).await;
        // Sorts: ties decided by the next key; every NaN last ascending, first descending.
        assert_eq!(
            rows(&s, "SELECT id FROM t ORDER BY x, id LIMIT 1").await,
            vec!["1"]
        );
        assert_eq!(
            rows(&s, "SELECT id FROM t ORDER BY x, id LIMIT 3").await,
            vec!["1", "2", "3"]
        );
        assert_eq!(
            rows(&s, "SELECT id FROM t ORDER BY x DESC, id DESC LIMIT 1").await,
            vec!["5"]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT id FROM t ORDER BY x DESC NULLS LAST, id LIMIT 2"
            )
            .await,
            vec!["4", "5"]
        );
        // Groups and DISTINCT: one group per Spark value, holding the normalized value.
        assert_eq!(
            rows(&s, "SELECT x, count(*), sum(id) FROM t GROUP BY x").await,
            vec!["0.0|2|3", "1.5|1|3", "NaN|2|9"]
        );
        assert_eq!(
            rows(&s, "SELECT x * 2 AS y, count(*) FROM t GROUP BY 1").await,
            vec!["0.0|2", "3.0|1", "NaN|2"]
        );
        assert_eq!(
            rows(
                &s,
                "SELECT CAST(x AS FLOAT) AS f, count(*) FROM t GROUP BY 1"
            )
            .await,
            vec!["0.0|2", "1.5|1", "NaN|2"]
        );
        assert_eq!(rows(&s, "SELECT DISTINCT x FROM t").await.len(), 3);
        assert_eq!(
            rows(&s, "SELECT x FROM t UNION SELECT -x FROM t")
                .await
                .len(),
            4
        );
        // Set operations, USING joins and IN subqueries match -0.0 with 0.0 and NaN with NaN.
        let negated = "SELECT -x AS x FROM t WHERE id IN (1, 4)";
        assert_eq!(
            rows(&s, &format!("SELECT x FROM t EXCEPT {negated}")).await,
            vec!["1.5"]
        );
        assert_eq!(
            rows(&s, &format!("SELECT x FROM t INTERSECT {negated}"))
                .await
                .len(),
            2
        );
        assert_eq!(
            rows(
                &s,
                &format!("SELECT id FROM t JOIN ({negated}) u USING (x)")
            )
            .await,
            vec!["1", "2", "4", "5"]
        );
        assert_eq!(
            rows(&s, &format!("SELECT id FROM t WHERE x IN ({negated})")).await,
            vec!["1", "2", "4", "5"]
        );
        assert_eq!(
            rows(&s, &format!("SELECT id FROM t WHERE x NOT IN ({negated})")).await,
            vec!["3"]
        );
        // What a CTAS stores: one row per group.
        s.execute("CREATE TABLE g AS SELECT x, count(*) AS c FROM t GROUP BY x")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT x, c FROM g").await,
            vec!["0.0|2", "1.5|1", "NaN|2"]
        );
    });
}
