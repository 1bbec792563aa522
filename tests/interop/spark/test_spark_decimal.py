"""DECIMAL arithmetic means what it means in Spark (ANSI mode, precision loss allowed: Spark's
defaults): the result type (past 38 digits the scale gives way, down to 6), the value rounded HALF_UP
to it, NUMERIC_VALUE_OUT_OF_RANGE past the precision, and what an UPDATE stores. Each expression is
evaluated by both engines and compared exactly (value and scale)."""
import json
import re
import subprocess
from decimal import Decimal

import pytest

from spark_support import BIN, rlc


def d(x, p, s):
    return f"CAST({x} AS DECIMAL({p},{s}))"


MAX38 = d("99999999999999999999999999999999999999", 38, 0)

EXPRESSIONS = [
    f"{d('0.0000000005', 38, 10)} + {d('0', 38, 10)}",
    f"{d('-0.0000000005', 38, 10)} - {d('0', 38, 10)}",
    f"{d('0.0000000004', 38, 10)} + {d('0', 38, 10)}",
    f"{d('9999999999999999999999999999.9999999999', 38, 10)} - 1",
    f"{d('1.5', 38, 18)} * {d('1.5', 38, 18)}",
    f"{d('0.0000005', 38, 18)} * {d('1', 38, 18)}",
    f"{d('-0.0000005', 38, 18)} * {d('1', 38, 18)}",
    f"{d('123456789.123456789', 30, 9)} * {d('987654321.987654321', 30, 9)}",
    f"{d('12.345', 10, 3)} * 3",
    f"{d('12.345', 10, 3)} + CAST(5 AS BIGINT)",
    f"{d('12.345', 10, 3)} - CAST(5 AS INT)",
    f"{d('1.23', 5, 2)} * {d('4.567', 7, 3)}",
    f"{d('2.00', 10, 2)} / 3",
    f"{d('1', 38, 10)} / {d('3', 38, 10)}",
    f"{MAX38} - 1",
    f"{d('NULL', 10, 2)} * 2",
    # Rounded once to the type's scale (a review expected Spark's Decimal to round to 38 digits
    # or places first, which would give ...500001 and 1E-10: Spark gives ...500000 and 0E-10).
    f"{d(chr(39) + '10000000000000000000.500000499999999999' + chr(39), 38, 18)} * {d('1.000000000000000001', 38, 18)}",
    f"{d(chr(39) + '9999999999999999999.9999999999' + chr(39), 38, 10)} / {d('200000000000000000000000000000', 30, 0)}",
    # Common types past 38 digits: an INT literal is DECIMAL(10,0) in coalesce, a simple CASE
    # compares as `x = v`.
    f"coalesce({d('1.123456789012345678901234567890', 38, 30)}, 0)",
    f"nvl({d('1.123456789012345678901234567890', 38, 30)}, 0)",
    f"CASE {d('1.005', 38, 18)} WHEN {d('1.01', 38, 2)} THEN {d('1', 10, 0)} ELSE {d('0', 10, 0)} END",
]
OVERFLOWS = [f"{MAX38} + 1", f"{MAX38} * {MAX38}", f"{d('-99999999999999999999999999999999999999', 38, 0)} - 1"]


def decimal_type(text):
    """(precision, scale) from Spark's typeof ('decimal(38,9)') or Arrow's ('Decimal128(38, 9)')."""
    m = re.search(r"(\d+),\s*(\d+)", text)
    return (int(m.group(1)), int(m.group(2)))


def exact(x):
    """A DECIMAL as value and scale, so that 1.0 and 1.00 differ."""
    return None if x is None else (Decimal(x), Decimal(x).as_tuple().exponent)


def rlc_value(expr):
    out = json.loads(rlc("sql", "--json", f"SELECT {expr} AS v, arrow_typeof({expr}) AS t"), parse_float=Decimal)
    row = out["rows"][0]
    return exact(None if row["v"] is None else str(row["v"])), decimal_type(row["t"])


def spark_value(spark, expr):
    row = spark.sql(f"SELECT {expr} AS v, typeof({expr}) AS t").collect()[0]
    return exact(None if row["v"] is None else str(row["v"])), decimal_type(row["t"])


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_decimal_arithmetic_equals_sparks(spark, expr):
    assert rlc_value(expr) == spark_value(spark, expr)


@pytest.mark.parametrize("expr", OVERFLOWS)
def test_decimal_overflow_raises_in_both(spark, expr):
    with pytest.raises(Exception, match="NUMERIC_VALUE_OUT_OF_RANGE"):
        spark.sql(f"SELECT {expr}").collect()
    res = subprocess.run([BIN, "sql", f"SELECT {expr}"], capture_output=True, text=True)
    assert res.returncode != 0 and "NUMERIC_VALUE_OUT_OF_RANGE" in res.stderr, res.stderr


def test_an_update_stores_what_spark_stores(spark, tmp_path):
    """`a = a + b` and `c = c * c` written by each engine on its own copy; both read the same."""
    rows = "(1, 0.0000000005, 0, 1.5), (2, 1.25, 2.5, 0.0000005), (3, -0.0000000005, 0, -0.0000005)"
    tables = {}
    for engine in ("rlc", "spark"):
        p = str(tmp_path / engine)
        create = f"(id BIGINT, a DECIMAL(38,10), b DECIMAL(38,10), c DECIMAL(38,18))"
        if engine == "rlc":
            rlc("sql", f"CREATE TABLE '{p}' {create}")
            rlc("sql", f"INSERT INTO '{p}' VALUES {rows}")
            rlc("sql", f"UPDATE '{p}' SET a = a + b, c = c * c")
        else:
            spark.sql(f"CREATE TABLE delta.`{p}` {create} USING delta")
            spark.sql(f"INSERT INTO delta.`{p}` VALUES {rows}")
            spark.sql(f"UPDATE delta.`{p}` SET a = a + b, c = c * c")
        tables[engine] = p
    read = {
        engine: sorted(
            (r["id"], exact(str(r["a"])), exact(str(r["c"])))
            for r in spark.read.format("delta").load(p).collect()
        )
        for engine, p in tables.items()
    }
    assert read["rlc"] == read["spark"]
    # 0.0000000005 + 0 in DECIMAL(38,9) is 0.000000001 (HALF_UP), stored at scale 10.
    assert read["rlc"][0][1] == exact("0.0000000010")


CAST_STATEMENTS = [
    "DELETE FROM {t} WHERE CAST(d AS INT) = 1",
    "DELETE FROM {t} WHERE CAST(d AS INT) <> 1",
    "DELETE FROM {t} WHERE TRY_CAST(d AS BIGINT) IN (1, 2)",
    "DELETE FROM {t} WHERE CAST(d AS DECIMAL) = 3",
    "UPDATE {t} SET d = CAST(d AS DECIMAL) WHERE id < 3",
    "UPDATE {t} SET e = nvl(e, 0)",
    "UPDATE {t} SET e = e + 9223372036854775808",
    "DELETE FROM {t} WHERE CAST(e AS DECIMAL(20,2)) = 1.50",  # both raise (row 1 overflows)
    "DELETE FROM {t} WHERE CAST(e AS DECIMAL(30,2)) = 1.50",
    # A MERGE clause's arithmetic is Spark's (its values were planned without the rewrite:
    # DECIMAL(38,10) + DECIMAL(38,10) stored 0.0000000005 where Spark stores 0.0000000010).
    "MERGE INTO {t} t USING (SELECT 2 AS id, CAST(0.0000000005 AS DECIMAL(38,10)) AS v) u "
    "ON t.id = u.id WHEN MATCHED THEN UPDATE SET e = u.v + CAST(0 AS DECIMAL(38,10)), d = t.d * 1.1",
]


def comparable(v):
    """A value read back by Spark, compared exactly: a number as value and scale, else its text."""
    if v is None:
        return None
    if isinstance(v, float) and v != v:
        return ("NaN",)  # NaN equals no value, itself included: compared as a tag
    try:
        return exact(str(v))
    except ArithmeticError:  # decimal.InvalidOperation: not a number
        return ("text", str(v))


def twin_run(spark, tmp_path, create, rows, columns, statement):
    """`statement` on twin tables, one written by each engine: both refuse it (an overflow Spark
    raises: nothing written) or both commit, and then the same rows remain, values and scales."""
    ours, theirs = str(tmp_path / "rlc"), str(tmp_path / "spark")
    rlc("sql", f"CREATE TABLE '{ours}' {create}")
    rlc("sql", f"INSERT INTO '{ours}' VALUES {rows}")
    ours_ran = subprocess.run([BIN, "sql", statement.format(t=f"'{ours}'")], capture_output=True, text=True)
    spark.sql(f"CREATE TABLE delta.`{theirs}` {create} USING delta")
    spark.sql(f"INSERT INTO delta.`{theirs}` VALUES {rows}")
    try:
        spark.sql(statement.format(t=f"delta.`{theirs}`"))
        spark_raised = False
    except Exception:  # noqa: BLE001 -- only whether both engines refuse is compared
        spark_raised = True
    assert (ours_ran.returncode != 0) == spark_raised, ours_ran.stderr
    read = {
        p: sorted(tuple([r["id"]] + [comparable(r[c]) for c in columns])
                  for r in spark.read.format("delta").load(p).collect())
        for p in (ours, theirs)
    }
    assert read[ours] == read[theirs]


@pytest.mark.parametrize("statement", CAST_STATEMENTS)
def test_casts_in_statements_touch_what_spark_touches(spark, tmp_path, statement):
    rows = "(1, 1.25, 999999999999999999999999999.9999999999), (2, 2.50, 1.5), (3, 0.75, NULL)"
    twin_run(spark, tmp_path, "(id BIGINT, d DECIMAL(10,2), e DECIMAL(38,10))", rows, ["d", "e"], statement)


WIDER_STATEMENTS = [
    "DELETE FROM {t} WHERE a = b",
    "DELETE FROM {t} WHERE a > CAST(1 AS DECIMAL(38,0))",
    "UPDATE {t} SET a = coalesce(a, b)",
    "UPDATE {t} SET a = CASE WHEN id < 3 THEN a ELSE b END",
    "UPDATE {t} SET b = nvl(b, a)",
    "DELETE FROM {t} WHERE a IN (b, 7)",
    "DELETE FROM {t} WHERE a BETWEEN b AND CAST(7 AS DECIMAL(38,0))",
    "DELETE FROM {t} WHERE a NOT BETWEEN 1 AND b",
]


@pytest.mark.parametrize("statement", WIDER_STATEMENTS)
def test_decimals_of_two_shapes_touch_what_spark_touches(spark, tmp_path, statement):
    """DECIMAL(38,18) beside DECIMAL(38,2): Spark 4's common type (integer digits first) decides
    which rows match and what is stored."""
    rows = "(1, 1.005, 1.01), (2, 1.004, 1.01), (3, NULL, 7.25), (4, 1.5, NULL), (5, 6.995, 7)"
    twin_run(spark, tmp_path, "(id BIGINT, a DECIMAL(38,18), b DECIMAL(38,2))", rows, ["a", "b"], statement)


ROUNDING_QUERIES = [
    # avg of a DECIMAL: HALF_UP once to DECIMAL(p+4, s+4) (DataFusion truncated: 0.666666).
    # (Every row cast: a VALUES column of a DECIMAL and an integer literal is typed otherwise.)
    "SELECT avg(d) AS v, typeof(avg(d)) AS t FROM VALUES (CAST(2 AS DECIMAL(10,2))), (CAST(0 AS DECIMAL(10,2))), (CAST(0 AS DECIMAL(10,2))) AS x(d)",
    "SELECT avg(d) AS v, typeof(avg(d)) AS t FROM VALUES (CAST(-2 AS DECIMAL(10,0))), (CAST(0 AS DECIMAL(10,0))), (CAST(0 AS DECIMAL(10,0))) AS x(d)",
    "SELECT avg(d) AS v, typeof(avg(d)) AS t FROM VALUES (CAST(1 AS DECIMAL(38,10))), (CAST(2 AS DECIMAL(38,10))), (CAST(2 AS DECIMAL(38,10))) AS x(d)",
    # round of a DOUBLE: its shortest text HALF_UP (DataFusion: 1.25, 1.0).
    "SELECT round(x, 2) AS v, typeof(round(x, 2)) AS t FROM VALUES (1.255D) AS x(x)",
    "SELECT round(x, 2) AS v, typeof(round(x, 2)) AS t FROM VALUES (1.005D) AS x(x)",
    "SELECT round(x, -2) AS v, typeof(round(x, -2)) AS t FROM VALUES (-1250.0D) AS x(x)",
    # ceil / floor: BIGINT of a DOUBLE, DECIMAL(p-s+1, 0) of a DECIMAL.
    "SELECT ceil(x) AS v, typeof(ceil(x)) AS t FROM VALUES (1.5D) AS x(x)",
    "SELECT floor(d) AS v, typeof(floor(d)) AS t FROM VALUES (CAST(-1.5 AS DECIMAL(10,2))) AS x(d)",
]


def rows_and_types(spark, query):
    if spark is None:
        # Our SQL: the same query with Arrow's type names, read back in Spark's.
        q = query.replace("typeof(", "arrow_typeof(").replace("1.255D", "1.255e0").replace(
            "1.005D", "1.005e0").replace("-1250.0D", "-1250.0e0").replace("1.5D", "1.5e0")
        q = re.sub(r"FROM VALUES (.*) AS x\((\w)\)", r"FROM (VALUES \1) AS x(\2)", q)
        row = json.loads(rlc("sql", "--json", q), parse_float=Decimal)["rows"][0]
    else:
        row = spark.sql(query).collect()[0].asDict()
    t = str(row["t"]).lower()
    kind = "decimal" if "decimal" in t else ("bigint" if "int64" in t or t == "bigint" else "double")
    return exact(str(row["v"])) if kind == "decimal" else Decimal(str(row["v"])), kind, (
        decimal_type(t) if kind == "decimal" else None)


@pytest.mark.parametrize("query", ROUNDING_QUERIES)
def test_avg_round_ceil_floor_equal_sparks(spark, query):
    assert rows_and_types(None, query) == rows_and_types(spark, query)


def test_statements_round_and_average_as_spark(spark, tmp_path):
    """What a statement stores and deletes with avg and round, on twin tables."""
    create = "(id BIGINT, d DECIMAL(10,2), f DECIMAL(14,6), x DOUBLE)"
    rows = "(1, 2.00, 0.666667, 1.255), (2, 0, 0, 1.005), (3, 0, 1, -2.5)"
    for i, statement in enumerate([
        "INSERT INTO {t} SELECT max(id) + 1, 0, avg(d), round(avg(x), 2) FROM {t}",
        "UPDATE {t} SET x = round(x, 2)",
        "DELETE FROM {t} WHERE round(x, 2) = 1.26",
        "DELETE FROM {t} WHERE round(x, 2) = 1.01 OR ceil(x) = 2",
    ]):
        twin_run(spark, tmp_path / str(i), create, rows, ["d", "f", "x"], statement)


def test_substring_log_and_date_format_as_spark(spark, tmp_path):
    """substring/left/right at Spark's positions, Spark's logarithms and datetime patterns: what a
    statement stores and deletes, on twin tables (strings and dates compared as read by Spark)."""
    create = "(id BIGINT, s STRING, x DOUBLE, dt DATE)"
    rows = ("(1, 'hello', 100, DATE'2024-03-05'), (2, 'héllo', 0, DATE'1999-12-31'), "
            "(3, NULL, -1, NULL), (4, 'ab', 2.718281828459045, DATE'2000-01-01')")
    for i, statement in enumerate([
        "UPDATE {t} SET s = substring(s, 0, 3) || substr(s, -2) || left(s, -1) || right(s, 9)",
        "UPDATE {t} SET s = date_format(dt, 'yyyy/MM/dd EEE MMM d') || '-' || s",
        "UPDATE {t} SET x = log(x) + log10(1000) + log(2, 8)",
        "DELETE FROM {t} WHERE substring(s, -3, 2) = 'll' OR ln(x) IS NULL",
    ]):
        twin_run(spark, tmp_path / str(i), create, rows, ["s", "x", "dt"], statement)


def test_bit_operations_touch_what_spark_touches(spark, tmp_path):
    """A shift wraps in its left operand's type (an INT `p << 1` of 2^30 is -2^31), so a DELETE by
    it removes the rows Spark removes; `& | ^` on an INT and an INT literal store an INT."""
    create = "(id BIGINT, p INT, b TINYINT)"
    rows = "(1, 1073741824, 1), (2, 5, -1), (3, -1, 127), (4, NULL, NULL)"
    for i, statement in enumerate([
        "DELETE FROM {t} WHERE p << 1 < 0",
        "DELETE FROM {t} WHERE (p << id) >> 1 = 5 OR b << 1 > 200",
        "UPDATE {t} SET p = (p & 3) | (p ^ 8) | (b << 30)",
        "UPDATE {t} SET p = p << 3000000000",
        "DELETE FROM {t} WHERE (p ^ p) = 0 OR (b ^ b) IS NULL",
        "UPDATE {t} SET p = CAST(p AS DOUBLE) << 40",
    ]):
        twin_run(spark, tmp_path / str(i), create, rows, ["p", "b"], statement)


def test_string_functions_store_what_spark_stores(spark, tmp_path):
    """Spark's argument order of ltrim/rtrim(trimStr, str), nvl2 typed by its results only,
    regexp_replace of every match, lpad of a negative length (red team helper-44); a string
    compared with a DECIMAL or CASE branches mixing strings and numbers are refused here (Spark
    computes them, so only the refusal is checked: nothing is written)."""
    create = "(id BIGINT, s STRING, x DOUBLE, l BIGINT, n INT)"
    rows = "(1, 'xxhixx', 1.0, 9007199254740993, -1), (2, 'hello world', NULL, 7, 3), (3, NULL, 2.0, NULL, NULL)"
    for i, statement in enumerate([
        "UPDATE {t} SET s = ltrim('x', s)",
        "UPDATE {t} SET s = rtrim('x', s) WHERE id = 1",
        "UPDATE {t} SET s = TRIM(LEADING 'x' FROM s)",
        "UPDATE {t} SET l = nvl2(x, l, 0), s = CAST(nvl2(x, 1, 2) AS STRING)",
        "UPDATE {t} SET s = regexp_replace(s, 'l', 'L')",
        "UPDATE {t} SET s = lpad(s, n, 'ab')",
    ]):
        twin_run(spark, tmp_path / str(i), create, rows, ["s", "x", "l", "n"], statement)
    ours = str(tmp_path / "refused")
    rlc("sql", f"CREATE TABLE '{ours}' {create}")
    rlc("sql", f"INSERT INTO '{ours}' VALUES {rows}")
    for statement in ["DELETE FROM {t} WHERE s = 1.1", "UPDATE {t} SET s = CASE WHEN id = 1 THEN s ELSE n END"]:
        ran = subprocess.run([BIN, "sql", statement.format(t=f"'{ours}'")], capture_output=True, text=True)
        assert ran.returncode != 0 and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert spark.read.format("delta").load(ours).count() == 3


def test_window_sums_store_what_spark_stores(spark, tmp_path):
    """A window's DOUBLE sums and averages add the frame's rows in order, each sliding frame afresh
    (DataFusion's subtracted leaving rows: after 1e17 left, 3 + 5 was 0); a DECIMAL sum is exact
    until its result, which raises past the type."""
    create = "(id BIGINT, b BIGINT, x DOUBLE, e DECIMAL(38,0))"
    nine = "90000000000000000000000000000000000000"
    rows = f"(1, 100000000000000000, 1e17, {nine}), (2, 3, 3.0, {nine}), (3, 5, 5.0, -{nine})"
    frame = "OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
    for i, statement in enumerate([
        f"INSERT INTO {{t}} SELECT id + 10, b, sum(x) {frame} + avg(b) {frame}, sum(e) OVER () FROM {{t}}",
        "INSERT INTO {t} SELECT id + 10, b, x, "
        "sum(e) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM {t}",
    ]):
        twin_run(spark, tmp_path / str(i), create, rows, ["b", "x", "e"], statement)


def test_aggregates_and_windows_store_what_spark_stores(spark, tmp_path):
    """Grouped max/min of DOUBLEs with NaN and -Infinity, sum(DISTINCT) past BIGINT (both raise),
    var_samp/stddev of INTs near 2^31 (Spark's arithmetic), and a RANGE frame over a DATE counted
    in days: what INSERT … SELECT stores, on twin tables."""
    create = "(id BIGINT, g INT, x DOUBLE, b BIGINT, i INT, dt DATE)"
    rows = ("(1, 1, CAST('NaN' AS DOUBLE), 9223372036854775807, 2147483647, DATE'2020-02-01'), "
            "(2, 1, 5.0D, 1, 2147483647, DATE'2020-02-02'), "
            "(3, 1, -0.0D, 1, 2147483646, DATE'2020-03-02'), "
            "(4, 2, CAST('-Infinity' AS DOUBLE), 5, 1, DATE'2020-03-03')")
    for n, statement in enumerate([
        "INSERT INTO {t} SELECT 10 + g, g, max(x), min(b), min(i), NULL FROM {t} GROUP BY g",
        "INSERT INTO {t} SELECT 10 + g, g, min(x), sum(DISTINCT b), 0, NULL FROM {t} GROUP BY g",
        "INSERT INTO {t} SELECT 10 + id, g, var_samp(i) OVER (ORDER BY id) + stddev(i) OVER "
        "(ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
        "count(*) OVER (ORDER BY dt RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), 0, dt FROM {t}",
    ]):
        twin_run(spark, tmp_path / str(n), create, rows, ["g", "x", "b", "i", "dt"], statement)
