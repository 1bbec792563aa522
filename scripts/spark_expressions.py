"""Differential expressions against Delta Spark: generates typed expressions over a table of edge
values, evaluates each in Spark, and writes a corpus (JSON lines) of Spark's answers that the
engine's test `spark_corpus` replays without Spark.

    .venv-spark/bin/python scripts/spark_expressions.py --n 10000 --seed 1 --out /tmp/campaign.jsonl
    DELTA_RLC_SPARK_CORPUS=/tmp/campaign.jsonl cargo test --workspace --exclude delta-rlc-python \
        --test it -- spark_corpus --nocapture

`scripts/spark_campaign.sh` runs both. The corpus's first line holds the table (schema and rows)
and the Spark version; each further line an expression and, per row ordered by id, Spark's value
(tagged by type class) or the whole expression's error class.

The generator covers the value classes the engine accepts in rules: INT/BIGINT/SMALLINT at their
bounds, DOUBLE with NaN, +-0.0 and +-inf, DECIMAL of two scales, strings with unicode and quotes,
booleans, dates, NULLs; operators + - * / %, comparisons, <=>, AND/OR/NOT, CASE, COALESCE, NULLIF,
BETWEEN, IN, LIKE, casts Spark and the engine define alike, abs/lower/upper/length/trim/concat/||,
substring/substr/left/right, round/ceil/floor and the logarithms.
"""
import argparse
import datetime
import decimal
import json
import math
import os
import random
import sys

COLUMNS = [
    ("id", "BIGINT"), ("i", "INT"), ("l", "BIGINT"), ("sm", "SMALLINT"), ("d", "DOUBLE"),
    ("dec", "DECIMAL(10,2)"), ("dec3", "DECIMAL(6,3)"), ("s", "STRING"), ("b", "BOOLEAN"),
    ("dt", "DATE"),
]
NAN, INF = "NaN", "Infinity"
ROWS = [
    [0, 0, 0, 0, 0.0, "0.00", "0.000", "", False, "1970-01-01"],
    [1, 1, 1, 1, 1.5, "1.25", "1.005", "a", True, "2024-02-29"],
    [2, -1, -1, -1, "-0.0", "-1.25", "-2.500", "B", False, "1999-12-31"],
    [3, 2147483647, 9223372036854775807, 32767, 1e308, "99999999.99", "999.999", "\u00df", True, "9999-12-31"],
    [4, -2147483648, -9223372036854775808, -32768, -1e308, "-99999999.99", "-999.999", "\u03a9mega", None, "1900-01-01"],
    [5, None, None, None, None, None, None, None, None, None],
    [6, 7, 100, 3, NAN, "3.33", "0.333", " x ", True, "2000-01-01"],
    [7, 45, -7, 10, INF, "0.01", "0.001", "abc", False, "2000-03-01"],
    [8, -46, 10, -3, "-" + INF, "10.50", "10.500", "12", True, "1969-12-31"],
    [9, 5, 2, 2, 2.5, "2.50", "2.500", "it's", False, "2023-06-15"],
    [10, 1000000, 3000000000, 181, 0.1, "0.10", "0.100", "\u2603 snow", True, "2000-02-29"],
]

INT_LITS = ["0", "1", "-1", "2", "7", "10", "100", "2147483647", "-2147483648", "46341"]
BIGINT_LITS = ["3000000000", "9223372036854775807", "-9223372036854775807", "4294967296"]
# Written as casts: an exponent literal (1.5e0) is DOUBLE in Spark but DECIMAL here (docs/sql.md).
DOUBLE_LITS = ["CAST(1.5 AS DOUBLE)", "CAST(0 AS DOUBLE)", "CAST(2.5 AS DOUBLE)", "CAST('1e308' AS DOUBLE)",
               "CAST(0.1 AS DOUBLE)", "CAST(3 AS DOUBLE)", "CAST('-0.0' AS DOUBLE)"]
DECIMAL_LITS = ["1.1", "0.01", "100.5", "2.50", "0.333", "99.99"]
STRING_LITS = ["'a'", "''", "'\u00df'", "'it''s'", "'abc'", "'12'", "' x '", "'\u2603'"]
DATE_LITS = ["DATE'2000-01-01'", "DATE'2024-02-29'", "DATE'1970-01-01'"]


class Gen:
    def __init__(self, rng):
        self.r = rng

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def leaf(self, t):
        r = self.r.random()
        if t == "int":
            return self.pick(["i", "sm"]) if r < 0.6 else self.pick(INT_LITS)
        if t == "bigint":
            return "l" if r < 0.6 else self.pick(BIGINT_LITS + INT_LITS)
        if t == "double":
            return "d" if r < 0.6 else self.pick(DOUBLE_LITS)
        if t == "decimal":
            return self.pick(["dec", "dec3"]) if r < 0.6 else self.pick(DECIMAL_LITS)
        if t == "string":
            return "s" if r < 0.6 else self.pick(STRING_LITS)
        if t == "bool":
            return "b" if r < 0.5 else self.pick(["true", "false"])
        if t == "date":
            return "dt" if r < 0.6 else self.pick(DATE_LITS)
        raise ValueError(t)

    def numeric(self):
        return self.pick(["int", "int", "bigint", "double", "decimal"])

    def expr(self, t, depth):
        if depth <= 0 or self.r.random() < 0.25:
            return self.leaf(t)
        d = depth - 1
        g = self.expr
        if t in ("int", "bigint"):
            choices = [
                lambda: f"({g(t, d)} {self.pick(['+', '-', '*'])} {g(self.pick(['int', t]), d)})",
                lambda: f"({g(t, d)} % {g(self.pick(['int', t]), d)})",
                lambda: f"(-{g(t, d)})",
                lambda: f"abs({g(t, d)})",
                lambda: f"CASE WHEN {g('bool', d)} THEN {g(t, d)} ELSE {g(t, d)} END",
                lambda: f"coalesce({g(t, d)}, {g(t, d)})",
                lambda: f"nullif({g(t, d)}, {g(t, d)})",
                lambda: f"CAST({g(self.pick(['int', 'bigint', 'bool']), d)} AS {'INT' if t == 'int' else 'BIGINT'})",
            ]
            if t == "int":
                choices.append(lambda: f"length({g('string', d)})")
            if t == "bigint":
                choices.append(lambda: f"{self.pick(['ceil', 'floor'])}({g(self.pick(['double', 'int', 'bigint']), d)})")
            return self.pick(choices)()
        if t == "double":
            return self.pick([
                lambda: f"({g(self.numeric(), d)} / {g(self.pick(['int', 'bigint', 'double']), d)})",
                lambda: f"({g('double', d)} {self.pick(['+', '-', '*'])} {g(self.pick(['double', 'int']), d)})",
                lambda: f"({g('double', d)} % {g(self.pick(['double', 'int']), d)})",
                lambda: f"CAST({g(self.pick(['int', 'bigint', 'decimal']), d)} AS DOUBLE)",
                lambda: f"abs({g('double', d)})",
                lambda: f"(-{g('double', d)})",
                lambda: f"round({g('double', d)}, {self.pick(['0', '1', '2', '-1', '-2', '5'])})",
                lambda: f"{self.pick(['log', 'ln', 'log10', 'log2', 'log1p'])}({g(self.pick(['double', 'int', 'decimal']), d)})",
                lambda: f"log({g(self.pick(['double', 'int']), d)}, {g('double', d)})",
            ])()
        if t == "decimal":
            return self.pick([
                lambda: f"({g('decimal', d)} {self.pick(['+', '-', '*'])} {g(self.pick(['decimal', 'int']), d)})",
                lambda: f"({g('decimal', d)} / {g('decimal', d)})",
                lambda: f"CAST({g('int', d)} AS DECIMAL(12,2))",
                lambda: f"abs({g('decimal', d)})",
                lambda: f"{self.pick(['ceil', 'floor'])}({g('decimal', d)})",
            ])()
        if t == "string":
            return self.pick([
                lambda: f"lower({g('string', d)})",
                lambda: f"upper({g('string', d)})",
                lambda: f"trim({g('string', d)})",
                lambda: f"concat({g('string', d)}, {g('string', d)})",
                lambda: f"({g('string', d)} || {g('string', d)})",
                lambda: f"CAST({g(self.pick(['int', 'bigint', 'bool', 'date', 'decimal']), d)} AS STRING)",
                lambda: f"coalesce({g('string', d)}, {g('string', d)})",
                lambda: f"substring({g('string', d)}, {g('int', d)}, {g('int', d)})",
                lambda: f"substr({g('string', d)}, {self.pick(['-3', '-1', '0', '1', '2', '4'])})",
                lambda: f"{self.pick(['left', 'right'])}({g('string', d)}, {self.pick(['-1', '0', '1', '2', '9', 'i', 'sm'])})",
            ])()
        if t == "bool":
            cmp_t = self.pick(["int", "bigint", "double", "decimal", "string", "date", "bool"])
            op = self.pick(["=", "<>", "<", "<=", ">", ">=", "<=>"])
            return self.pick([
                lambda: f"({g(cmp_t, d)} {op} {g(self.compatible(cmp_t), d)})",
                lambda: f"({g('bool', d)} {self.pick(['AND', 'OR'])} {g('bool', d)})",
                lambda: f"(NOT {g('bool', d)})",
                lambda: f"({g(cmp_t, d)} IS {self.pick(['', 'NOT '])}NULL)",
                lambda: f"({g(cmp_t, d)} BETWEEN {g(cmp_t, d)} AND {g(cmp_t, d)})",
                lambda: f"({g(cmp_t, d)} IN ({g(cmp_t, d)}, {g(cmp_t, d)}))",
                lambda: f"({g('string', d)} LIKE {self.pick(['%a%', 'a%', '_', '%', 'it%'])!r})",
            ])()
        if t == "date":
            return self.leaf("date")
        raise ValueError(t)

    def compatible(self, t):
        if t in ("int", "bigint", "double", "decimal"):
            return self.pick(["int", "bigint", "double", "decimal", t, t])
        return t


def spark_value(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return ["b", v]
    if isinstance(v, int):
        return ["i", str(v)]
    if isinstance(v, float):
        if math.isnan(v):
            return ["f", "NaN"]
        if math.isinf(v):
            return ["f", "Infinity" if v > 0 else "-Infinity"]
        return ["f", repr(v)]
    if isinstance(v, decimal.Decimal):
        n = v.normalize()
        return ["d", format(n, "f")]
    if isinstance(v, str):
        return ["s", v]
    if isinstance(v, datetime.date):
        return ["t", v.isoformat()]
    return ["?", str(v)]


def error_class(e):
    text = str(e)
    for line in text.splitlines():
        if line.startswith("[") and "]" in line:
            return line[1:line.index("]")]
    return type(e).__name__


def table_df(spark):
    from pyspark.sql.types import (StructType, StructField, LongType, IntegerType, ShortType,
                                   DoubleType, DecimalType, StringType, BooleanType, DateType)
    types = {"BIGINT": LongType(), "INT": IntegerType(), "SMALLINT": ShortType(), "DOUBLE": DoubleType(),
             "DECIMAL(10,2)": DecimalType(10, 2), "DECIMAL(6,3)": DecimalType(6, 3), "STRING": StringType(),
             "BOOLEAN": BooleanType(), "DATE": DateType()}
    schema = StructType([StructField(n, types[t], True) for n, t in COLUMNS])
    rows = []
    for r in ROWS:
        out = []
        for (name, t), v in zip(COLUMNS, r):
            if v is None:
                out.append(None)
            elif t == "DOUBLE":
                out.append(float(v) if not isinstance(v, str) else float(v.replace("Infinity", "inf")))
            elif t.startswith("DECIMAL"):
                out.append(decimal.Decimal(v))
            elif t == "DATE":
                out.append(datetime.date.fromisoformat(v))
            else:
                out.append(v)
        rows.append(tuple(out))
    return spark.createDataFrame(rows, schema)


def evaluate(spark, exprs):
    """Spark's answers: per expression, a list of per-row values or {"error": class}."""
    out = {}
    batch = 40
    for start in range(0, len(exprs), batch):
        chunk = exprs[start:start + batch]
        cols = ", ".join(f"{e} AS c{k}" for k, e in enumerate(chunk))
        try:
            rows = spark.sql(f"SELECT id, {cols} FROM t ORDER BY id").collect()
            for k, e in enumerate(chunk):
                out[e] = [spark_value(r[k + 1]) for r in rows]
        except Exception:
            for e in chunk:
                try:
                    rows = spark.sql(f"SELECT id, {e} AS c FROM t ORDER BY id").collect()
                    out[e] = [spark_value(r[1]) for r in rows]
                except Exception as err:  # noqa: BLE001 - the class is the answer
                    out[e] = {"error": error_class(err)}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "interop", "spark"))
    import spark_support
    spark = spark_support.make_spark()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    table_df(spark).createOrReplaceTempView("t")
    gen = Gen(random.Random(args.seed))
    kinds = ["int", "bigint", "double", "decimal", "string", "bool", "bool"]
    exprs, seen = [], set()
    while len(exprs) < args.n:
        e = gen.expr(kinds[len(exprs) % len(kinds)], args.depth)
        if e not in seen:
            seen.add(e)
            exprs.append(e)
    answers = evaluate(spark, exprs)
    with open(args.out, "w", encoding="utf-8") as f:
        head = {"spark": spark.version, "columns": COLUMNS, "rows": ROWS, "seed": args.seed}
        f.write(json.dumps(head, ensure_ascii=False) + "\n")
        for e in exprs:
            f.write(json.dumps({"expr": e, "spark": answers[e]}, ensure_ascii=False) + "\n")
    errors = sum(1 for e in exprs if isinstance(answers[e], dict))
    print(f"{len(exprs)} expressions, {errors} raise in Spark {spark.version}; corpus {args.out}")
    spark.stop()


if __name__ == "__main__":
    main()
