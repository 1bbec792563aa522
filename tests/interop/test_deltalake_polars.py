"""deltalake (scan path) and polars read tables written by delta-rlc with exactly our rows, and
deltalake reports the per-file stats we wrote."""
import json
import os

import polars as pl
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from conftest import WIDE_LIVE, expected

COLUMNS = {
    "partitioned": ["id", "p", "x", "d", "ok"],
    "clustered": ["id", "name"],
    "checkpointed": ["id", "s"],
    "wide_ints": ["id", "x", "e", "v"],
}


def columns_of(name):
    return COLUMNS.get(name, ["id", "v"])


def norm(rows):
    return sorted(tuple(None if v is None else v for v in r) for r in rows)


def deltalake_rows(path, columns):
    dt = DeltaTable(path)
    reader = QueryBuilder().register("t", dt).execute(f"SELECT {', '.join(columns)} FROM t")
    table = pa.table(reader)
    return norm(zip(*[table.column(c).to_pylist() for c in columns]))


def test_deltalake_reads_same_rows(tables):
    for name, path in tables.items():
        cols = columns_of(name)
        assert deltalake_rows(path, cols) == expected(path, cols), name


def test_polars_reads_same_rows(tables):
    for name, path in tables.items():
        cols = columns_of(name)
        df = pl.read_delta(path).select(cols)
        assert norm(df.rows()) == expected(path, cols), name


def test_deltalake_sees_our_stats(tables):
    path = tables["partitioned"]
    dt = DeltaTable(path)
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    log = os.path.join(path, "_delta_log")
    ours = {}
    for f in sorted(os.listdir(log)):
        if f.endswith(".json"):
            for line in open(os.path.join(log, f)):
                a = json.loads(line)
                if "add" in a:
                    ours[a["add"]["path"]] = json.loads(a["add"]["stats"])
    assert len(actions) == len(ours)
    checked = 0
    for act in actions:
        st = next(v for k, v in ours.items() if act["path"].endswith(k.split("/")[-1]))
        assert act["num_records"] == st["numRecords"]
        for col in ("id", "x"):
            if col in st["minValues"]:
                assert act[f"min.{col}"] == st["minValues"][col]
                assert act[f"max.{col}"] == st["maxValues"][col]
                checked += 1
            assert act[f"null_count.{col}"] == st["nullCount"][col]
    assert checked > 0


def test_row_tracking_table_metadata_is_readable(tables):
    dt = DeltaTable(tables["clustered"])
    assert dt.version() == 2
    prot = dt.protocol()
    assert "rowTracking" in (prot.writer_features or [])


def test_interop_tables_really_carry_deletion_vectors(tables):
    """Guards the tests above against passing on tables without DVs."""
    from conftest import rlc_rows
    for name in ["dml_dv", "scenario_01-disjoint-deletes", "scenario_01-forward-delete", "scenario_12-reverse-delete", "rowtracking"]:
        path = tables[name]
        n = rlc_rows(f"SELECT sum(dv_cardinality) AS n FROM delta_files('{path}')")[0]["n"]
        assert n > 0, name
    log = os.path.join(tables["scenario_01-forward-delete"], "_delta_log")
    tagged = sum(open(os.path.join(log, f)).read().count("compactionInfo") for f in os.listdir(log) if f.endswith(".json"))
    assert tagged == 3


def test_delta_binary_packed_integers_are_read(tables):
    """The wide_ints table's integer columns have no dictionary and DELTA_BINARY_PACKED pages (so the
    row comparisons above decode that encoding); its timestamps read back as written (ts = id s)."""
    import glob
    import pyarrow.parquet as pq
    path = tables["wide_ints"]
    big = [pq.ParquetFile(f).metadata for f in glob.glob(os.path.join(path, "*.parquet"))]
    big = [m.row_group(0) for m in big if m.num_rows >= 200_000]
    assert big
    for rg in big:
        for i in range(4):  # id, x, ts, e
            col = rg.column(i)
            assert "DELTA_BINARY_PACKED" in col.encodings and not col.has_dictionary_page, col
    dt = DeltaTable(path)
    q = QueryBuilder().register("t", dt).execute("SELECT count(*) AS c FROM t WHERE to_unixtime(ts) = id")
    assert pa.table(q).column(0)[0].as_py() == WIDE_LIVE
    df = pl.read_delta(path)
    assert df.select((pl.col("ts").dt.epoch("s") == pl.col("id")).sum()).item() == WIDE_LIVE
