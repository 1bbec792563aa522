"""DuckDB's delta extension (duckdb 1.5.5 + duckdb-extension-delta 1.5.5) reads our tables."""
import glob
import os

import duckdb
import duckdb_extension_delta

from conftest import WIDE_LIVE, expected

COLUMNS = {
    "partitioned": ["id", "p", "x", "d", "ok"],
    "clustered": ["id", "name"],
    "checkpointed": ["id", "s"],
    "wide_ints": ["id", "x", "e", "v"],
}


def columns_of(name):
    return COLUMNS.get(name, ["id", "v"])


def connect():
    con = duckdb.connect()
    ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*", "delta.duckdb_extension"))
    assert ext, "delta extension binary not found in duckdb_extension_delta"
    con.sql(f"LOAD '{ext[0]}'")
    return con


def test_duckdb_reads_same_rows(tables):
    con = connect()
    for name, path in tables.items():
        cols = columns_of(name)
        rows = con.sql(f"SELECT {', '.join(cols)} FROM delta_scan('{path}')").fetchall()
        assert sorted(rows) == expected(path, cols), name


def test_duckdb_reads_delta_binary_packed_timestamps(tables):
    con = connect()
    path = tables["wide_ints"]
    n = con.sql(f"SELECT count(*) FROM delta_scan('{path}') WHERE epoch(ts) = id").fetchone()[0]
    assert n == WIDE_LIVE
