"""Stored rules mean the same in both engines: CHECK constraints and generated columns kept in a
Delta table's log, on tables written alternately by delta-rlc and Delta Spark (ANSI mode on, Spark's
default). Each candidate row is inserted once through each engine (distinct ids, so the writes do
not interfere) on a table Spark created and on one delta-rlc created; both engines must accept and
refuse the same rows, refuse them for the rule's reason, and store the same generated values,
read back exactly (NaN equal to NaN, -0.0 apart from 0.0) by both engines.

The rules exercise what Spark computes differently from plain SQL engines: DOUBLE division of
integers, DECIMAL division at Spark's scale with HALF_UP, INT overflow (ARITHMETIC_OVERFLOW),
Java's remainder, -0.0 and NaN ordering/equality, concat and || with NULL, coalesce, CASE,
BETWEEN, IN with NULL, a CHECK that is NULL (a violation), integer literals beside DOUBLE,
greatest / least, length and LIKE over code points.
A rule delta-rlc does not evaluate (upper, RLIKE) leaves a Spark table readable and our writes
refused with one line, nothing committed."""
import json
import math
import re
import subprocess
from decimal import Decimal

import pytest

from spark_support import BIN, rlc, rlc_rows

INPUTS = ["v", "w", "d", "f", "z", "n", "s", "t"]
GENERATED = ["gv", "gk", "gw", "gd", "gneg", "gmax", "gmin", "gbig", "gs", "gp", "gc"]
ALL = ["id"] + INPUTS + GENERATED
DOUBLES = {"f", "z", "gv", "gneg", "gmax", "gmin"}
DECIMALS = {"d", "gd"}

COLUMNS = """id BIGINT, v INT, w INT, d DECIMAL(10,2), f DOUBLE, z DOUBLE, n INT, s STRING, t STRING,
  gv DOUBLE GENERATED ALWAYS AS (v / 2),
  gk STRING GENERATED ALWAYS AS (CASE WHEN v >= 0 AND v <= 9 THEN 'low' WHEN v IN (10, 20, 30) THEN 'round' ELSE 'other' END),
  gw INT GENERATED ALWAYS AS (w * 2),
  gd DECIMAL(14,6) GENERATED ALWAYS AS (d / 7),
  gneg DOUBLE GENERATED ALWAYS AS (f * -1),
  gmax DOUBLE GENERATED ALWAYS AS (greatest(f, 0)),
  gmin DOUBLE GENERATED ALWAYS AS (least(0, f)),
  gbig BOOLEAN GENERATED ALWAYS AS (z > 1000000),
  gs STRING GENERATED ALWAYS AS (concat(s, t)),
  gp STRING GENERATED ALWAYS AS (s || '-' || t),
  gc STRING GENERATED ALWAYS AS (coalesce(t, s, 'none'))"""

CONSTRAINTS = [
    ("cv_div", "v / 10 <= 4"),                              # DOUBLE division: 45 / 10 = 4.5
    ("cv_mod", "v % 3 <> -1"),                              # Java remainder: -4 % 3 = -1
    ("cd_div", "d / 3 < 1.5"),                              # DECIMAL(14,6) division
    ("cd_round", "d / 3 <> 0.666667"),                      # 2.00 / 3 = 0.666667 (HALF_UP, not 0.666666)
    ("cf_self", "f = f"),                                   # NaN = NaN is true
    ("cf_low", "f >= -1000000"),                            # INT literal beside DOUBLE; NaN above all
    ("cz_zero", "z <> 0.0"),                                # -0.0 = 0.0
    ("cn_range", "coalesce(n, 0) BETWEEN -5 AND 5"),
    ("cn_in", "n IN (-1, 0, 1, NULL) OR n > 3"),            # IN with NULL: NULL, not false
    ("cs_len", "coalesce(length(s), 0) <= 5"),              # length counts code points
    ("cs_like", "coalesce(s, '') NOT LIKE 'x_'"),           # _ is one code point
]

DEFAULTS = {"v": "1", "w": "1", "d": "CAST(1.00 AS DECIMAL(10,2))", "f": "CAST('1.5' AS DOUBLE)",
            "z": "CAST('1.0' AS DOUBLE)", "n": "0", "s": "'a'", "t": "'b'"}


def dbl(x):
    return f"CAST('{x}' AS DOUBLE)"


def dec(x):
    return f"CAST({x} AS DECIMAL(10,2))"


# (inputs that differ from DEFAULTS, True or the rules the row breaks, stored values expected beyond
# DEFAULT_ROW) -- all worked out by hand. A refused row's engine must name one of its rules.
CANDIDATES = [
    ({"v": "40"}, True, {"gv": "20.0", "gk": "other"}),  # 40 / 10 = 4.0 <= 4
    ({"v": "45"}, {"cv_div"}, {}),  # 4.5 > 4 (integer division would give 4 and accept)
    ({"v": "5"}, True, {"gv": "2.5", "gk": "low"}),
    ({"v": "30"}, True, {"gv": "15.0", "gk": "round"}),
    ({"v": "-4"}, {"cv_mod"}, {}),  # -4 % 3 = -1
    ({"v": "-5"}, True, {"gv": "-2.5", "gk": "other"}),  # -5 % 3 = -2 (a floor modulo gives 1)
    ({"v": "-2147483648"}, True, {"gv": "-1073741824.0", "gk": "other"}),  # MIN % 3 = -2, MIN / 10 <= 4
    ({"v": "NULL"}, {"cv_div", "cv_mod"}, {}),  # NULL / 10 <= 4 is NULL: a violation
    ({"w": "1073741823"}, True, {"gw": 2147483646}),
    ({"w": "1073741824"}, {"ARITHMETIC_OVERFLOW"}, {}),  # 2^30 * 2 overflows INT: ARITHMETIC_OVERFLOW
    ({"w": "-1073741824"}, True, {"gw": -2147483648}),
    ({"w": "-1073741825"}, {"ARITHMETIC_OVERFLOW"}, {}),  # overflow below MIN
    ({"w": "NULL"}, True, {"gw": None}),
    ({"d": dec("4.50")}, {"cd_div"}, {}),  # 4.50 / 3 = 1.500000
    ({"d": dec("4.49")}, True, {"gd": "0.641429"}),
    ({"d": dec("2.00")}, {"cd_round"}, {}),  # 2.00 / 3 = 0.666667 (HALF_UP; truncated: 0.666666)
    ({"d": dec("0.05")}, True, {"gd": "0.007143"}),  # HALF_UP of 0.0071428...
    ({"d": dec("-0.05")}, True, {"gd": "-0.007143"}),
    ({"d": dec("-99999999.99")}, True, {"gd": "-14285714.284286"}),
    ({"f": dbl("NaN")}, True, {"f": "nan", "gneg": "nan", "gmax": "nan", "gmin": "0.0"}),  # NaN = NaN, NaN >= -1000000
    ({"f": dbl("-0.0")}, True, {"f": "-0.0", "gneg": "0.0", "gmax": "-0.0", "gmin": "0.0"}),  # see SIGNED_ZERO
    ({"f": dbl("0.0")}, True, {"f": "0.0", "gneg": "-0.0", "gmax": "0.0", "gmin": "0.0"}),
    ({"f": dbl("-1000000")}, True, {"gneg": "1000000.0", "gmax": "0.0", "gmin": "-1000000.0"}),
    ({"f": dbl("-1000000.5")}, {"cf_low"}, {}),
    ({"z": dbl("0.0")}, {"cz_zero"}, {}),
    ({"z": dbl("-0.0")}, {"cz_zero"}, {}),  # -0.0 = 0.0 in Spark
    ({"z": dbl("NaN")}, True, {"z": "nan", "gbig": True}),  # NaN <> 0.0; NaN > 1000000
    ({"n": "NULL"}, {"cn_in"}, {}),  # NULL IN (...) OR NULL > 3 is NULL
    ({"n": "2"}, {"cn_in"}, {}),  # 2 IN (-1, 0, 1, NULL) is NULL, OR false: NULL
    ({"n": "4"}, True, {"n": 4}),  # NULL OR true
    ({"n": "6"}, {"cn_range"}, {}),  # BETWEEN -5 AND 5
    ({"s": "NULL"}, True, {"gs": None, "gp": None, "gc": "b"}),
    ({"s": "NULL", "t": "NULL"}, True, {"gs": None, "gp": None, "gc": "none"}),
    ({"t": "NULL"}, True, {"gs": None, "gp": None, "gc": "a"}),
    ({"s": "'\U0001D11E\U0001D11E\U0001D11E'"}, True,     # 3 code points (6 UTF-16 units)
     {"gs": "\U0001D11E\U0001D11E\U0001D11Eb", "gp": "\U0001D11E\U0001D11E\U0001D11E-b"}),
    ({"s": "'abcdef'"}, {"cs_len"}, {}),
    ({"s": "'x\U0001D11E'"}, {"cs_like"}, {}),
    ({"s": "'x\U0001D11E\U0001D11E'"}, True, {"gs": "x\U0001D11E\U0001D11Eb", "gp": "x\U0001D11E\U0001D11E-b"}),
]
SPARK_IDS = 1000  # Spark writes candidate i as id 1000 + i, delta-rlc as id i
DEFAULT_ROW = {"gv": "0.5", "gk": "low", "gw": 2, "gd": "0.142857", "gneg": "-1.5", "gmax": "1.5", "gmin": "0.0",
               "gbig": False, "gs": "ab", "gp": "a-b", "gc": "b"}

# greatest / least of -0.0 and 0: Spark's ordering ties -0.0 with 0.0 and keeps the first argument
# (greatest(-0.0, 0) = -0.0, least(0, -0.0) = 0.0); delta-rlc orders -0.0 below 0.0.
SIGNED_ZERO = next(i for i, (inputs, _, _) in enumerate(CANDIDATES) if inputs == {"f": dbl("-0.0")})
SIGNED_ZERO_SPARK = {c: CANDIDATES[SIGNED_ZERO][2][c] for c in ("gmax", "gmin")}


def norm(col, x):
    """Exact, comparable values: DOUBLE as repr ('nan', '-0.0' apart from '0.0'), DECIMAL as its text."""
    if x is None:
        return None
    if col in DOUBLES:
        return repr(float(x))
    if col in DECIMALS:
        return str(x)
    return x


def values_sql(i, inputs):
    row = {**DEFAULTS, **inputs}
    return f"(id, {', '.join(INPUTS)}) VALUES ({i}, {', '.join(row[c] for c in INPUTS)})"


def reason(msg):
    """What a refusal names: the violated CHECK constraint, or ARITHMETIC_OVERFLOW."""
    m = re.search(r"CHECK constraint (\w+)", msg)
    if m:
        return m.group(1)
    return "ARITHMETIC_OVERFLOW" if "[ARITHMETIC_OVERFLOW]" in msg else None


def rlc_insert(path, i, inputs):
    """(accepted, reason); a refusal is exit code 2 and one line on stderr."""
    res = subprocess.run([BIN, "sql", f"INSERT INTO '{path}' {values_sql(i, inputs)}"], capture_output=True, text=True)
    if res.returncode == 0:
        return True, None
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, (inputs, res.returncode, res.stderr)
    return False, reason(lines[0]) or lines[0]


def spark_insert(spark, path, i, inputs):
    try:
        spark.sql(f"INSERT INTO delta.`{path}` {values_sql(i, inputs)}")
        return True, None
    except Exception as e:  # noqa: BLE001 -- the reason is compared with delta-rlc's below
        return False, reason(str(e)) or str(e)[:300]


def rlc_read(path):
    """Every row as delta-rlc reads it (its JSON prints NaN as null, so isnan() tells them apart)."""
    sel = ", ".join(ALL + [f"isnan({c}) AS {c}__nan" for c in sorted(DOUBLES)])
    rows = json.loads(rlc("sql", "--json", f"SELECT {sel} FROM '{path}'"), parse_float=Decimal)["rows"]
    return {r["id"]: {c: ("nan" if r.get(f"{c}__nan") else norm(c, r[c])) for c in ALL} for r in rows}


def spark_read(spark, path):
    return {r["id"]: {c: norm(c, r[c]) for c in ALL}
            for r in spark.read.format("delta").load(path).select(*ALL).collect()}


def version(path):
    return max(h["version"] for h in json.loads(rlc("sql", "--json", f"DESCRIBE HISTORY '{path}'"))["rows"])


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory):
    """Both tables, every candidate written once by each engine, alternately; outcomes and reads."""
    base = tmp_path_factory.mktemp("rules")
    p = str(base / "spark_created")
    spark.sql(f"CREATE TABLE delta.`{p}` ({COLUMNS}) USING delta")
    for name, expr in CONSTRAINTS:
        spark.sql(f"ALTER TABLE delta.`{p}` ADD CONSTRAINT {name} CHECK ({expr})")
    q = str(base / "rlc_created")
    rlc("sql", f"CREATE TABLE '{q}' ({COLUMNS})")
    for name, expr in CONSTRAINTS:
        rlc("sql", f"ALTER TABLE '{q}' ADD CONSTRAINT {name} CHECK ({expr})")

    out = {}
    for label, path in {"spark_created": p, "rlc_created": q}.items():
        start = version(path)
        outcomes = []
        for i, (inputs, _, _) in enumerate(CANDIDATES):
            outcomes.append((rlc_insert(path, i, inputs), spark_insert(spark, path, SPARK_IDS + i, inputs)))
        out[label] = {"start": start, "end": version(path), "outcomes": outcomes,
                      "rlc_read": rlc_read(path), "spark_read": spark_read(spark, path)}
    return out


TABLES = pytest.mark.parametrize("table", ["spark_created", "rlc_created"])


@TABLES
def test_both_engines_accept_and_refuse_the_same_rows(written, table):
    w = written[table]
    got = [(inputs, rlc_out, spark_out) for (inputs, _, _), (rlc_out, spark_out) in zip(CANDIDATES, w["outcomes"])]
    diff = [g for g in got if g[1][0] != g[2][0]]
    assert not diff, f"{table}: (inputs, delta-rlc, Spark) where one engine accepts and the other refuses: {diff}"
    wrong = [(inputs, ours, theirs, ok) for (inputs, ours, theirs), (_, ok, _) in zip(got, CANDIDATES)
             if (ours[0], theirs[0]) != (ok is True,) * 2 or (ok is not True and not {ours[1], theirs[1]} <= ok)]
    assert not wrong, f"{table}: (inputs, delta-rlc, Spark, expected) not as computed by hand: {wrong}"
    # Only accepted writes committed: a refused statement commits nothing, in either engine.
    assert w["end"] - w["start"] == 2 * sum(ok is True for _, ok, _ in CANDIDATES)


@TABLES
def test_both_engines_read_the_same_stored_rows(written, table):
    w = written[table]
    assert w["rlc_read"] == w["spark_read"]
    accepted = [i for i, (_, ok, _) in enumerate(CANDIDATES) if ok is True]
    assert sorted(w["spark_read"]) == sorted(accepted + [SPARK_IDS + i for i in accepted])


@TABLES
def test_generated_values_do_not_depend_on_the_writer(written, table):
    rows = written[table]["spark_read"]
    for i, (inputs, ok, _) in enumerate(CANDIDATES):
        if ok is True:
            ours, theirs = dict(rows[i]), dict(rows[SPARK_IDS + i])
            ours.pop("id"), theirs.pop("id")
            assert ours == theirs, (inputs, "row written by delta-rlc vs by Spark")


@TABLES
def test_stored_values_are_the_hand_computed_ones(written, table):
    rows = written[table]["spark_read"]
    for i, (inputs, ok, expected) in enumerate(CANDIDATES):
        if ok is not True:
            continue
        want = {**DEFAULT_ROW, **expected}
        for row_id in (i, SPARK_IDS + i):
            assert {c: rows[row_id][c] for c in want} == want, (inputs, row_id)
    # Signed zeros, spelled out: f * -1 flips the sign of a zero, and Spark's greatest keeps -0.0.
    assert rows[SIGNED_ZERO]["f"] == "-0.0" and math.copysign(1.0, float(rows[SIGNED_ZERO]["gneg"])) == 1.0
    for row_id in (SIGNED_ZERO, SPARK_IDS + SIGNED_ZERO):
        assert math.copysign(1.0, float(rows[row_id]["gmax"])) == -1.0
        assert {c: rows[row_id][c] for c in SIGNED_ZERO_SPARK} == SIGNED_ZERO_SPARK


@TABLES
def test_greatest_and_least_of_signed_zeros_as_spark(written, table):
    """greatest(-0.0, 0) is -0.0 and least(0, -0.0) is 0.0 in Spark (ties keep the first
    argument); delta-rlc ordered -0.0 below 0.0 until the extrema step (found by this test)."""
    rows = written[table]["spark_read"]
    ours = {c: rows[SIGNED_ZERO][c] for c in SIGNED_ZERO_SPARK}
    assert ours == SIGNED_ZERO_SPARK


def test_rules_we_do_not_evaluate_keep_spark_tables_readable_and_refuse_our_writes(spark, tmp_path):
    cases = [
        ("upper", "id BIGINT, s STRING", "ALTER TABLE delta.`{p}` ADD CONSTRAINT cu CHECK (upper(s) <> 'X')"),
        ("rlike", "id BIGINT, s STRING", "ALTER TABLE delta.`{p}` ADD CONSTRAINT cr CHECK (s RLIKE '^[a-z]+$')"),
        ("upper", "id BIGINT, s STRING, g STRING GENERATED ALWAYS AS (upper(s))", None),
    ]
    for n, (construct, cols, alter) in enumerate(cases):
        p = str(tmp_path / f"unportable_{n}")
        spark.sql(f"CREATE TABLE delta.`{p}` ({cols}) USING delta")
        if alter:
            spark.sql(alter.format(p=p))
        spark.sql(f"INSERT INTO delta.`{p}` (id, s) VALUES (1, 'abc'), (2, 'xyz')")
        want = sorted(tuple(r) for r in spark.read.format("delta").load(p).collect())
        assert sorted(tuple(r.values()) for r in json.loads(rlc("sql", "--json", f"SELECT * FROM '{p}'"))["rows"]) == want
        before = version(p)
        for stmt in [f"INSERT INTO '{p}' (id, s) VALUES (3, 'def')", f"UPDATE '{p}' SET s = 'q' WHERE id = 1"]:
            res = subprocess.run([BIN, "sql", stmt], capture_output=True, text=True)
            lines = res.stderr.strip().splitlines()
            # 5: Unsupported (crates/cli/src/main.rs), not 2 (a row that breaks a rule)
            assert res.returncode == 5 and len(lines) == 1, (stmt, res.returncode, res.stderr)
            assert construct in lines[0].lower(), (stmt, lines[0])
        assert version(p) == before, "a refused write committed"
        assert sorted(tuple(r) for r in spark.read.format("delta").load(p).collect()) == want
    # On our own table the same rule is refused when it is added.
    q = str(tmp_path / "ours")
    rlc("sql", f"CREATE TABLE '{q}' (id BIGINT, s STRING)")
    res = subprocess.run([BIN, "sql", f"ALTER TABLE '{q}' ADD CONSTRAINT cu CHECK (upper(s) <> 'X')"], capture_output=True, text=True)
    assert res.returncode == 5 and len(res.stderr.strip().splitlines()) == 1 and "upper" in res.stderr.lower(), res.stderr
    assert version(q) == 0


def test_date_fields_in_generated_partition_columns_both_ways(spark, tmp_path):
    """year / month / day(d) of a DATE as generated columns (Delta's usual partition column): rows
    written by either engine carry the same values, on a table either engine created."""
    cols = ("id BIGINT, d DATE, y INT GENERATED ALWAYS AS (year(d)), m INT GENERATED ALWAYS AS (month(d)), "
            "dd INT GENERATED ALWAYS AS (day(d))")
    dates = ["2024-02-29", "1969-12-31", "0001-01-01", "9999-12-31", None]

    def lit(x):
        return "NULL" if x is None else f"DATE '{x}'"

    want = []
    for i, x in enumerate(dates):
        y, m, dd = (None, None, None) if x is None else (int(x[:4]), int(x[5:7]), int(x[8:]))
        want += [(i, y, m, dd), (100 + i, y, m, dd)]
    for creator in ("spark", "ours"):
        p = str(tmp_path / f"dates_{creator}")
        if creator == "spark":
            spark.sql(f"CREATE TABLE delta.`{p}` ({cols}) USING delta PARTITIONED BY (y)")
        else:
            rlc("sql", f"CREATE TABLE '{p}' ({cols}) PARTITIONED BY (y)")
        for i, x in enumerate(dates):
            rlc("sql", f"INSERT INTO '{p}' (id, d) VALUES ({i}, {lit(x)})")
            spark.sql(f"INSERT INTO delta.`{p}` (id, d) VALUES ({100 + i}, {lit(x)})")
        theirs = sorted(tuple(r) for r in spark.read.format("delta").load(p).select("id", "y", "m", "dd").collect())
        ours = sorted(tuple(r[c] for c in ("id", "y", "m", "dd"))
                      for r in json.loads(rlc("sql", "--json", f"SELECT id, y, m, dd FROM '{p}'"))["rows"])
        assert theirs == sorted(want) == ours, creator
        res = subprocess.run([BIN, "sql", f"INSERT INTO '{p}' VALUES (9, DATE '2024-01-01', 2023, 1, 1)"],
                             capture_output=True, text=True)
        assert res.returncode == 2 and "generated column y" in res.stderr, res.stderr


def test_trunc_of_a_date_in_generated_columns_both_ways(spark, tmp_path):
    """trunc(d, 'YEAR' | 'QUARTER' | 'MM' | 'WEEK') as generated columns: rows written by either
    engine carry Spark's values, on a table either engine created; an unknown format is NULL."""
    cols = ("id BIGINT, d DATE, y DATE GENERATED ALWAYS AS (TRUNC(d, 'YEAR')), "
            "q DATE GENERATED ALWAYS AS (trunc(d, 'quarter')), m DATE GENERATED ALWAYS AS (trunc(d, 'MM')), "
            "w DATE GENERATED ALWAYS AS (trunc(d, 'WEEK')), x DATE GENERATED ALWAYS AS (trunc(d, 'DAY'))")
    dates = ["2021-08-20", "1969-12-31", "2024-02-29", "0001-01-01", "9999-12-31", None]

    def lit(x):
        return "NULL" if x is None else f"DATE '{x}'"

    for creator in ("spark", "ours"):
        p = str(tmp_path / f"trunc_{creator}")
        if creator == "spark":
            spark.sql(f"CREATE TABLE delta.`{p}` ({cols}) USING delta")
        else:
            rlc("sql", f"CREATE TABLE '{p}' ({cols})")
        for i, x in enumerate(dates):
            rlc("sql", f"INSERT INTO '{p}' (id, d) VALUES ({i}, {lit(x)})")
            spark.sql(f"INSERT INTO delta.`{p}` (id, d) VALUES ({100 + i}, {lit(x)})")
        rows = spark.read.format("delta").load(p).select("id", "y", "q", "m", "w", "x").collect()
        by_id = {r["id"]: tuple(None if v is None else str(v) for v in r[1:]) for r in rows}
        # What Spark itself computes, for the rows either engine wrote.
        for i in range(len(dates)):
            assert by_id[i] == by_id[100 + i], (creator, dates[i], by_id[i], by_id[100 + i])
        assert by_id[0] == ("2021-01-01", "2021-07-01", "2021-08-01", "2021-08-16", None), by_id[0]
        ours = {r["id"]: (r["y"], r["q"], r["m"], r["w"], r["x"])
                for r in json.loads(rlc("sql", "--json", f"SELECT id, y, q, m, w, x FROM '{p}'"))["rows"]}
        assert ours[0] == by_id[0] and ours[1] == by_id[1], (ours[0], ours[1])


# Each statement on twin tables, one written by us and one by Spark: both commit or both refuse.
STRUCT_STATEMENTS = [
    "INSERT INTO {t} VALUES (1, named_struct('b', 10, 'a', 20))",
    "INSERT INTO {t} SELECT 2, named_struct('b', 11, 'a', 21)",
    "INSERT INTO {t} SELECT 3, struct(90, 91)",
    "INSERT INTO {t} (s, id) VALUES (named_struct('x', 70, 'y', 80), 5)",
    "INSERT INTO {t} VALUES (6, named_struct('a', 1))",
    "INSERT INTO {t} VALUES (7, named_struct('a', 1, 'b', 2, 'c', 3))",
    "UPDATE {t} SET s = named_struct('b', 100, 'a', 200) WHERE id = 1",
    "UPDATE {t} SET s = named_struct('x', 1, 'y', 2) WHERE id = 2",
    "UPDATE {t} SET s = named_struct('a', 5) WHERE id = 3",
    "MERGE INTO {t} AS t USING (SELECT 2 AS id, named_struct('b', 30, 'a', 40) AS s UNION ALL "
    "SELECT 9, named_struct('b', 50, 'a', 60)) AS src ON t.id = src.id "
    "WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT (id, s) VALUES (src.id, src.s)",
    "MERGE INTO {t} AS t USING (SELECT 10 AS id, named_struct('x', 30, 'y', 40) AS s) AS src "
    "ON t.id = src.id WHEN NOT MATCHED THEN INSERT (id, s) VALUES (src.id, src.s)",
    # A query naming the table's columns, its types but for the struct's field order: by name.
    "INSERT INTO {t} SELECT 11 AS id, named_struct('b', 1, 'a', 2) AS s",
    "INSERT INTO {t} SELECT 12, named_struct('b', 1, 'a', 2)",
    "INSERT INTO {t} SELECT 13 AS id, named_struct('b', CAST(1 AS BIGINT), 'a', 2) AS s",
    "INSERT INTO {t} VALUES (14, NULL)",
    # `ID` is not the table's `id` to Delta's by-name rule: by position.
    "INSERT INTO {t} SELECT 15 AS ID, named_struct('b', 1, 'a', 2) AS s",
    # Field names spelled in another case: by position (Delta's isReadCompatible).
    "INSERT INTO {t} SELECT 16 AS id, named_struct('B', 1, 'A', 2) AS s",
    "INSERT INTO {t} SELECT 17 AS id, struct(20 AS B, 10 AS a) AS s",
    # Columns read by name carry their names: by name (red team helper-53).
    "INSERT INTO {t} SELECT id, s FROM {src}",
    "INSERT INTO {t} SELECT src.id + 1 AS id, src.s FROM {src} src WHERE id > 0",
]


def test_struct_values_are_assigned_as_spark_assigns_them(spark, tmp_path):
    """INSERT assigns a struct's fields by position, UPDATE and MERGE by name with every field
    matched (`ops/nested_fields.rs`): the same statements commit or are refused on both engines,
    and the rows are the same."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    ddl = "CREATE TABLE {t} (id INT, s STRUCT<a: INT, b: INT>)"
    rlc("sql", ddl.format(t=f"'{ours}'"))
    spark.sql(ddl.format(t=f"delta.`{theirs}`") + " USING delta")
    src = str(tmp_path / "src")
    rlc("sql", f"CREATE TABLE '{src}' (id INT, s STRUCT<b: INT, a: INT>)")
    rlc("sql", f"INSERT INTO '{src}' VALUES (20, named_struct('b', 1, 'a', 2))")
    for st in STRUCT_STATEMENTS:
        we_commit = subprocess.run([BIN, "sql", st.format(t=f"'{ours}'", src=f"'{src}'")], capture_output=True).returncode == 0
        try:
            spark.sql(st.format(t=f"delta.`{theirs}`", src=f"delta.`{src}`")).collect()
            spark_commits = True
        except Exception:
            spark_commits = False
        assert we_commit == spark_commits, st
    q = "SELECT id, s.a, s.b FROM {t} ORDER BY id"
    assert [list(r.values()) for r in rlc_rows(q.format(t=f"'{ours}'"))] == \
        [list(r) for r in spark.sql(q.format(t=f"delta.`{theirs}`")).collect()]


GROUP_BY_QUERIES = [
    "SELECT upper(Name) AS name, count(*) AS n FROM {t} GROUP BY name ORDER BY 1, 2",
    "SELECT Total + 10 AS total, count(*) AS n FROM {t} GROUP BY total ORDER BY 1",
    "SELECT x % 2 AS y, count(*) AS n FROM {t} GROUP BY y ORDER BY 1",
    "WITH a AS (SELECT Total AS k FROM {t} GROUP BY Total) SELECT k + 1 AS total, count(*) AS n "
    "FROM a GROUP BY total ORDER BY 1",
    "SELECT Total + 10 AS total, count(*) AS n FROM {t} GROUP BY total HAVING total > 1 ORDER BY 1",
    "SELECT Total + 10 AS total, count(*) AS n FROM {t} GROUP BY total HAVING total = 11",
    "SELECT lower(Name) AS NAME, count(*) AS n FROM {t} GROUP BY lower(Name) ORDER BY 1",
]


def test_group_by_names_are_columns_before_aliases_as_in_spark(spark, tmp_path):
    """A GROUP BY name is the input's column (without regard to case) before a SELECT alias
    (`spark/group_by_names.rs`): Spark's rows on a table we wrote."""
    p = str(tmp_path / "g")
    rlc("sql", f"CREATE TABLE '{p}' (Total INT, x INT, Name STRING)")
    rlc("sql", f"INSERT INTO '{p}' VALUES (1, 5, 'a'), (1, 6, 'A'), (2, 7, 'b')")
    for q in GROUP_BY_QUERIES:
        ours = [list(r.values()) for r in rlc_rows(q.format(t=f"'{p}'"))]
        theirs = [list(r) for r in spark.sql(q.format(t=f"delta.`{p}`")).collect()]
        assert ours == theirs, q


ALIAS_QUERIES = [
    "SELECT -v AS V FROM {t} ORDER BY v",
    "SELECT -v AS Neg FROM {t} ORDER BY NEG DESC",
    "SELECT upper(Name) AS NAME, count(*) AS n FROM {t} GROUP BY name ORDER BY n, name",
    "SELECT lower(Name) AS NAME, count(*) AS N FROM {t} GROUP BY lower(Name) ORDER BY n DESC, 1",
    "SELECT Name AS Nm, sum(v) AS Total FROM {t} GROUP BY Name HAVING total > 10 ORDER BY TOTAL",
    "SELECT myid FROM (SELECT id AS MyId FROM {t}) WHERE MYID = 2",
    # A column read by name is named as written.
    "SELECT name, NAME, Name, ID FROM {t} ORDER BY id",
    "SELECT sq.name, X FROM (SELECT Name, v AS x FROM {t}) sq ORDER BY NAME, x",
]


def test_aliases_name_columns_as_written_as_in_spark(spark, tmp_path):
    """An alias names its column as written (`spark/alias_case.rs`): a CREATE TABLE AS SELECT
    stores the same names as Spark's, and queries have Spark's names and rows, in order."""
    p = str(tmp_path / "a")
    rlc("sql", f"CREATE TABLE '{p}' (id INT, v INT, Name STRING)")
    rlc("sql", f"INSERT INTO '{p}' VALUES (1, 10, 'a'), (2, 20, 'A'), (3, 30, 'b')")
    for q in ALIAS_QUERIES:
        ours = rlc_rows(q.format(t=f"'{p}'"))
        theirs = spark.sql(q.format(t=f"delta.`{p}`"))
        assert [list(r.keys()) for r in ours[:1]] == [theirs.columns], q
        assert [list(r.values()) for r in ours] == [list(r) for r in theirs.collect()], q
    ctas = "CREATE TABLE {c} {using} AS SELECT id AS MyId, v * 2 AS Doubled, name, ID FROM {t}"
    rlc("sql", ctas.format(c=f"'{tmp_path / 'ours'}'", using="", t=f"'{p}'"))
    spark.sql(ctas.format(c=f"delta.`{tmp_path / 'theirs'}`", using="USING delta", t=f"delta.`{p}`"))
    names = [spark.read.format("delta").load(str(tmp_path / w)).columns for w in ("ours", "theirs")]
    assert names[0] == names[1] == ["MyId", "Doubled", "name", "ID"], names
    # Unaliased: a CAST of a name, literals, parentheses.
    ctas = "CREATE TABLE {c} {using} AS SELECT CAST(v AS STRING), 1, 2.50, 'a', (NAME), true FROM {t}"
    rlc("sql", ctas.format(c=f"'{tmp_path / 'ours_u'}'", using="", t=f"'{p}'"))
    spark.sql(ctas.format(c=f"delta.`{tmp_path / 'theirs_u'}`", using="USING delta", t=f"delta.`{p}`"))
    names = [spark.read.format("delta").load(str(tmp_path / w)).columns for w in ("ours_u", "theirs_u")]
    assert names[0] == names[1], names
    # `struct(…)`'s field names (`spark/struct_names.rs`).
    ctas = "CREATE TABLE {c} {using} AS SELECT struct(NAME, id AS Z, id + 1, struct(v, 1 AS one)) AS r FROM {t}"
    rlc("sql", ctas.format(c=f"'{tmp_path / 'ours_s'}'", using="", t=f"'{p}'"))
    spark.sql(ctas.format(c=f"delta.`{tmp_path / 'theirs_s'}`", using="USING delta", t=f"delta.`{p}`"))
    types = [spark.read.format("delta").load(str(tmp_path / w)).schema.simpleString() for w in ("ours_s", "theirs_s")]
    assert types[0] == types[1], types


SUBQUERY_QUERIES = [
    "SELECT count(*) FROM {a} WHERE EXISTS (SELECT 1 FROM {b} WHERE X <= x)",
    "SELECT count(*) FROM {a} WHERE EXISTS (SELECT 1 FROM {b} WHERE x = 5)",
    "SELECT count(*) FROM {a} WHERE 5 IN (SELECT x FROM {b})",
    "SELECT count(*) FROM {a} WHERE x IN (SELECT x FROM {b})",
    "SELECT (SELECT max(x) FROM {b}) AS m, x FROM {a} ORDER BY x",
    "SELECT count(*) FROM {a} AS aa WHERE EXISTS (SELECT 1 FROM {b} WHERE aa.x = 1)",
]


QUALIFIED_SUBQUERY_QUERIES = [
    "SELECT count(*) FROM {a} q WHERE EXISTS (SELECT 1 FROM {b} q WHERE q.V = 700)",
    "SELECT count(*) FROM {a} t WHERE EXISTS (SELECT 1 FROM {b} T WHERE t.V = 700)",
    "SELECT count(*) FROM {a} t WHERE NOT EXISTS (SELECT 1 FROM {b} T WHERE t.v = 700)",
    "SELECT count(*) FROM {a} Aa WHERE EXISTS (SELECT 1 FROM {b} aA WHERE aa.x = 5)",
    "WITH Q AS (SELECT X, V FROM {b}) SELECT count(*) FROM {a} q WHERE EXISTS (SELECT 1 FROM Q WHERE Q.v = 700)",
    "SELECT count(*) FROM {a} q WHERE EXISTS (SELECT 1 FROM {b} r WHERE q.v = 10)",
]


def test_a_subquerys_names_are_its_own_columns_first_as_in_spark(spark, tmp_path):
    """A name inside a subquery is the subquery's own column before an outer one, without regard
    to case (`spark/outer_names.rs`): Spark's rows on tables we wrote."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    rlc("sql", f"CREATE TABLE '{a}' (x INT)")
    rlc("sql", f"CREATE TABLE '{b}' (X INT)")
    rlc("sql", f"INSERT INTO '{a}' VALUES (1), (2)")
    rlc("sql", f"INSERT INTO '{b}' VALUES (5)")
    same_rows(spark, SUBQUERY_QUERIES, a, b)
    # A qualifier the subquery's own table has too is that table's (red team helper-52).
    a, b = str(tmp_path / "a2"), str(tmp_path / "b2")
    rlc("sql", f"CREATE TABLE '{a}' (x INT, v INT)")
    rlc("sql", f"CREATE TABLE '{b}' (X INT, V INT)")
    rlc("sql", f"INSERT INTO '{a}' VALUES (1, 10), (2, 20)")
    rlc("sql", f"INSERT INTO '{b}' VALUES (5, 700)")
    same_rows(spark, QUALIFIED_SUBQUERY_QUERIES, a, b)


def same_rows(spark, queries, a, b):
    """Each query over tables `a` and `b` has the same rows, in order, on both engines."""
    for q in queries:
        ours = [list(r.values()) for r in rlc_rows(q.format(a=f"'{a}'", b=f"'{b}'"))]
        theirs = [list(r) for r in spark.sql(q.format(a=f"delta.`{a}`", b=f"delta.`{b}`")).collect()]
        assert ours == theirs, q


STRUCT_FIELD_QUERIES = [
    "SELECT id, s.userId, s.USERID, s.userid, s.Inner.deep FROM {a} ORDER BY id",
    "SELECT id FROM {a} WHERE s.USERID = 2",
    "SELECT s['userid'], s.inner['DEEP'] FROM {a} ORDER BY id",
    "SELECT sum(s.UserId) FROM {a} GROUP BY s.NAME ORDER BY 1",
    "SELECT a.s.userid FROM {a} a WHERE a.S.name = 'x'",
]


def test_struct_fields_are_found_without_regard_to_case_as_in_spark(spark, tmp_path):
    """A struct's field is found without regard to case (`spark/field_case.rs`), in queries and
    in DML: Spark's rows and stored values on a table each engine changed the same way."""
    a = str(tmp_path / "f")
    rlc("sql", f"CREATE TABLE '{a}' (id INT, s STRUCT<userId: INT, Name: STRING, Inner: STRUCT<Deep: INT>>)")
    rlc("sql", f"INSERT INTO '{a}' VALUES (1, named_struct('userId', 1, 'Name', 'x', 'Inner', named_struct('Deep', 10))), "
               "(2, named_struct('userId', 2, 'Name', 'y', 'Inner', named_struct('Deep', 20)))")
    same_rows(spark, STRUCT_FIELD_QUERIES, a, a)
    b = str(tmp_path / "g")
    spark.sql(f"CREATE TABLE delta.`{b}` USING delta AS SELECT * FROM delta.`{a}`")
    for stmt in ["UPDATE {t} SET id = id + 10 WHERE s.USERID = 1", "DELETE FROM {t} WHERE s.inner.DEEP = 20"]:
        rlc("sql", stmt.format(t=f"'{a}'"))
        spark.sql(stmt.format(t=f"delta.`{b}`"))
    q = "SELECT id, s.userId FROM {t} ORDER BY id"
    assert [list(r.values()) for r in rlc_rows(q.format(t=f"'{a}'"))] == \
        [list(r) for r in spark.sql(q.format(t=f"delta.`{b}`")).collect()] == [[11, 1]]


def test_spark_reads_a_table_with_a_not_null_struct_field_we_wrote(spark, tmp_path):
    """A NOT NULL field inside a struct is an invariant: the protocol lists `invariants`, or Spark
    refuses to read the table (DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH); a NULL struct above the
    field is refused by both engines."""
    p = str(tmp_path / "n")
    rlc("sql", f"CREATE TABLE '{p}' (id INT, s STRUCT<a: INT NOT NULL, b: INT>)")
    rlc("sql", f"INSERT INTO '{p}' VALUES (1, named_struct('a', 1, 'b', 2))")
    assert [tuple(r) for r in spark.sql(f"SELECT id, s.a, s.b FROM delta.`{p}`").collect()] == [(1, 1, 2)]
    assert subprocess.run([BIN, "sql", f"INSERT INTO '{p}' VALUES (2, NULL)"], capture_output=True).returncode != 0
    with pytest.raises(Exception, match="NOT_NULL"):
        spark.sql(f"INSERT INTO delta.`{p}` VALUES (2, NULL)").collect()
