"""The deltalake-shaped API end to end: writes from pyarrow, pandas and polars; every DML builder
against a Python model; exceptions with their fields; deltalake reads what delta_rlc wrote."""

from __future__ import annotations

import datetime as dt
import decimal

import deltalake
import pyarrow as pa
import pytest

import delta_rlc
from delta_rlc import (
    CommitFailedError,
    CommitProperties,
    ConflictConfig,
    ConcurrentAppendError,
    DeltaError,
    DeltaTable,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedError,
    write_deltalake,
)


def deltalake_read(uri) -> pa.Table:
    """deltalake's own reader (its DataFusion QueryBuilder reads deletion vectors)."""
    dt_ = deltalake.DeltaTable(uri)
    return pa.table(deltalake.QueryBuilder().register("t", dt_).execute("SELECT * FROM t"))


def rows(table_like, sort_by="id"):
    t = table_like if isinstance(table_like, pa.Table) else table_like.to_pyarrow_table()
    return sorted(t.to_pylist(), key=lambda r: r[sort_by])


def all_types_table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "i8": pa.array([1, None, -3], pa.int8()),
            "i16": pa.array([1, 2, None], pa.int16()),
            "i32": pa.array([None, 2, 3], pa.int32()),
            "f32": pa.array([1.5, None, -0.0], pa.float32()),
            "f64": pa.array([float("nan"), 2.25, None], pa.float64()),
            "b": pa.array([True, None, False]),
            "s": pa.array(["a", None, "é"]),
            "bin": pa.array([b"\x00\x01", None, b""], pa.binary()),
            "d": pa.array([dt.date(2026, 12, 1), None, dt.date(1969, 12, 31)], pa.date32()),
            "ts": pa.array([dt.datetime(2026, 12, 1, 12, 0, 0, 1), None, dt.datetime(1970, 1, 1)], pa.timestamp("us", tz="UTC")),
            "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-0.50")], pa.decimal128(10, 2)),
            "arr": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
            "st": pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": "c"}], pa.struct([("x", pa.int64()), ("y", pa.string())])),
        }
    )


def same_values(a, b):
    """Row lists equal, with NaN equal to NaN."""
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        assert ra.keys() == rb.keys()
        for k in ra:
            va, vb = ra[k], rb[k]
            if isinstance(va, float) and isinstance(vb, float) and va != va:
                assert vb != vb, k
            else:
                assert va == vb, (k, va, vb)


def test_round_trip_every_type_and_deltalake_reads_it(tmp_path):
    uri = str(tmp_path / "t")
    data = all_types_table()
    out = write_deltalake(uri, data)
    assert out["version"] == 0 and out["num_commit_attempts"] == 1
    dt_ = DeltaTable(uri)
    assert dt_.version() == 0
    assert dt_.schema().to_pyarrow().names == data.schema.names
    same_values(rows(dt_), rows(data))
    # deltalake reads the same rows.
    same_values(rows(deltalake_read(uri)), rows(data))
    # __arrow_c_stream__: pyarrow reads the table object directly.
    assert pa.table(dt_).num_rows == 3


def test_pandas_polars_and_reader_inputs(tmp_path):
    import pandas as pd
    import polars as pl

    uri = str(tmp_path / "t")
    write_deltalake(uri, pd.DataFrame({"id": [1, 2], "v": ["a", "b"]}))
    write_deltalake(uri, pl.DataFrame({"id": [3], "v": ["c"]}), mode="append")
    reader = pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int64()), ("v", pa.string())]), [pa.record_batch([[4], ["d"]], names=["id", "v"])])
    write_deltalake(uri, reader, mode="append")
    # Columns are matched by name, in any order.
    write_deltalake(uri, pa.table({"v": ["e"], "id": [5]}), mode="append")
    t = DeltaTable(uri)
    assert [r["id"] for r in rows(t)] == [1, 2, 3, 4, 5]
    assert t.to_pandas().shape == (5, 2)
    assert t.to_polars().height == 5
    assert t.version() == 3


def test_modes_partitions_and_replace_where(tmp_path):
    uri = str(tmp_path / "t")
    data = pa.table({"id": [1, 2, 3, 4], "p": ["a", "a", "b", "b"], "v": [10, 20, 30, 40]})
    write_deltalake(uri, data, partition_by=["p"], name="events", description="test table", configuration={"delta.enableDeletionVectors": "true"})
    t = DeltaTable(uri)
    m = t.metadata()
    assert (m.partition_columns, m.name, m.description) == (["p"], "events", "test table")
    assert m.configuration["delta.enableDeletionVectors"] == "true"
    assert t.protocol().min_reader_version >= 1
    with pytest.raises(DeltaError):
        write_deltalake(uri, data)  # mode="error"
    assert write_deltalake(uri, data, mode="ignore")["version"] is None
    # replaceWhere on a data column: only the matching rows are replaced.
    write_deltalake(uri, pa.table({"id": [2], "p": ["a"], "v": [99]}), mode="overwrite", predicate="id = 2")
    assert [(r["id"], r["v"]) for r in rows(DeltaTable(uri))] == [(1, 10), (2, 99), (3, 30), (4, 40)]
    with pytest.raises(SchemaMismatchError):
        write_deltalake(uri, pa.table({"id": [9], "p": ["a"], "v": [1], "extra": [1]}), mode="append")
    with pytest.raises(ValueError):
        write_deltalake(uri, data, mode="append", schema_mode="bogus")
    write_deltalake(uri, pa.table({"id": [7], "p": ["c"], "v": [70]}), mode="overwrite")
    assert rows(DeltaTable(uri)) == [{"id": 7, "p": "c", "v": 70}]
    assert DeltaTable(uri).files() and all(f.startswith("p=c/") for f in DeltaTable(uri).files())
    # Filters and time travel.
    old = DeltaTable(uri, version=0)
    assert [r["id"] for r in rows(old.to_pyarrow_table(filters=[("p", "=", "b")]))] == [3, 4]
    assert [r["id"] for r in rows(old.to_pyarrow_table(filters=[[("id", "=", 1)], [("id", "in", [4])]]))] == [1, 4]
    hist = DeltaTable(uri).history()
    assert [h["version"] for h in hist] == [2, 1, 0] and hist[0]["operation"] == "WRITE"


def test_dml_builders_against_a_model(tmp_path):
    uri = str(tmp_path / "t")
    model = {i: {"id": i, "v": i * 10, "s": f"s{i}"} for i in range(20)}
    write_deltalake(uri, pa.Table.from_pylist(list(model.values())), configuration={"delta.enableDeletionVectors": "true"})
    t = DeltaTable(uri)

    out = t.delete("id < 3")
    for i in range(3):
        del model[i]
    assert out["num_deleted_rows"] == 3 and out["numDeletedRows"] == 3 and t.version() == 1

    out = t.update(updates={"v": "v + 1"}, predicate="id >= 15")
    for i in range(15, 20):
        model[i]["v"] += 1
    assert out["num_updated_rows"] == 5

    out = t.update(new_values={"s": "it's"}, predicate="id = 5")
    model[5]["s"] = "it's"

    src = pa.table({"id": [4, 6, 100, 101], "v": [-4, -6, -100, -101], "s": ["u4", "d6", "n100", "n101"]})
    out = (
        t.merge(src, "target.id = source.id", source_alias="source", target_alias="target")
        .when_matched_delete(predicate="source.s LIKE 'd%'")
        .when_matched_update({"v": "source.v"})
        .when_not_matched_insert_all(predicate="source.id = 100")
        .when_not_matched_by_source_update({"s": "'untouched'"}, predicate="target.id = 19")
        .when_not_matched_by_source_delete(predicate="target.id = 18")
        .execute()
    )
    model[4]["v"] = -4
    del model[6]
    model[100] = {"id": 100, "v": -100, "s": "n100"}
    model[19]["s"] = "untouched"
    del model[18]
    assert out["num_commit_attempts"] == 1
    assert rows(t) == sorted(model.values(), key=lambda r: r["id"])

    t.optimize.compact()
    t.optimize.z_order(["v"])
    assert rows(t) == sorted(model.values(), key=lambda r: r["id"])
    assert rows(deltalake_read(uri)) == sorted(model.values(), key=lambda r: r["id"])
    assert t.vacuum(dry_run=True) == []
    assert t.version() == DeltaTable(uri).version()


def test_conflicts_are_typed_and_disjoint_writes_reconcile(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), configuration={"delta.enableDeletionVectors": "true"})
    first, second = DeltaTable(uri), DeltaTable(uri)
    first.update(updates={"v": "'first'"}, predicate="id = 2")
    # Disjoint rows: the stale object commits on top, reconciled.
    out = second.update(updates={"v": "'second'"}, predicate="id = 3")
    assert out["num_commit_attempts"] == 2 and out["version"] == 2
    # The twin: the same row from a stale object is a true conflict.
    stale = DeltaTable(uri, version=0)
    with pytest.raises(CommitFailedError) as e:
        stale.update(updates={"v": "'stale'"}, predicate="id = 2")
    assert isinstance(e.value, ConcurrentAppendError)
    assert e.value.conflict_type == "ConcurrentAppend"
    # Why, from a fixed list: the winner's new row 2 is one `id = 2` reads.
    assert e.value.reason == "true-overlap"
    assert e.value.winning_version == 1 and e.value.winning_operation == "UPDATE"
    assert e.value.retryable is True and e.value.tier
    assert [r["v"] for r in rows(DeltaTable(uri))] == ["a", "first", "second"]
    # legacy=True aborts even the disjoint case, as open-source Delta does.
    legacy = DeltaTable(uri, version=2, legacy=True)
    DeltaTable(uri).update(updates={"v": "'x'"}, predicate="id = 1")
    with pytest.raises(CommitFailedError) as e:
        legacy.update(updates={"v": "'y'"}, predicate="id = 3")
    assert e.value.reason == "reconcile-off"
    # A reconcile budget of 1 byte: a disjoint race whose proof must read the shared file's rows
    # and DVs aborts (budget-exceeded) and nothing of it lands; with room, it reconciles.
    for budget, commits in ((1, False), (1 << 26, True)):
        one = str(tmp_path / f"budget-{budget}")
        write_deltalake(one, pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), configuration={"delta.enableDeletionVectors": "true"})
        loser = DeltaTable(one, conflict=ConflictConfig(reconcile_max_bytes=budget, reconcile_max_millis=60_000))
        DeltaTable(one).update(updates={"v": "'winner'"}, predicate="id = 1")
        if commits:
            assert loser.update(updates={"v": "'loser'"}, predicate="id = 3")["num_commit_attempts"] == 2
        else:
            with pytest.raises(CommitFailedError) as e:
                loser.update(updates={"v": "'loser'"}, predicate="id = 3")
            assert e.value.reason == "budget-exceeded"
        assert [r["v"] for r in rows(DeltaTable(one))] == ["winner", "b", "loser" if commits else "c"]


def test_errors_and_commit_properties(tmp_path):
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path / "missing"))
    assert not (tmp_path / "missing").exists()
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1]}), commit_properties=CommitProperties(custom_metadata={"jobName": "nightly", "attempt": 2, "job": {"jobId": "7"}}))
    t = DeltaTable(uri)
    with pytest.raises(ValueError):
        t.delete("nosuch = 1")
    with pytest.raises(TypeError):
        t.delete("id = 1", writer_properties=object())
    with pytest.raises(UnsupportedError):
        t.delete("id = 1", writer_properties=delta_rlc.WriterProperties(compression="LZO"))
    import json
    import os

    log = open(os.path.join(uri, "_delta_log", "00000000000000000000.json")).read()
    info = next(json.loads(l)["commitInfo"] for l in log.splitlines() if "commitInfo" in l)
    # JSON values are kept as they are; Spark's typed fields must have Spark's type.
    assert (info["jobName"], info["attempt"], info["job"]) == ("nightly", 2, {"jobId": "7"})
    for bad in [{"job": "nightly"}, {"userName": 123}, {"readVersion": 15}, {"operationParameters": "x"}, {"v": float("nan")}, {1: "x"}, {"version": "1.2.3"}, {"big": 2**64}]:
        with pytest.raises(ValueError):
            write_deltalake(uri, pa.table({"id": [2]}), mode="append", commit_properties=CommitProperties(custom_metadata=bad))
    write_deltalake(uri, pa.table({"id": [2]}), mode="append", commit_properties=CommitProperties(custom_metadata={"operationParameters": {"mode": "mine", "extra": {"a": 1}}}))
    params = DeltaTable(uri).history(1)[0]["operationParameters"]
    assert (params["mode"], params["extra"]) == ("Append", '{"a":1}')
    assert DeltaTable(uri).version() == 1


def test_sql_and_cli(tmp_path):
    uri = str(tmp_path / "t")
    assert delta_rlc.sql(f"CREATE TABLE '{uri}' (id BIGINT, v STRING)")["version"] == 0
    delta_rlc.sql(f"INSERT INTO '{uri}' VALUES (1, 'a'), (2, 'b')")
    assert delta_rlc.sql(f"SELECT count(*) AS n FROM '{uri}'").read_all().to_pylist() == [{"n": 2}]
    assert DeltaTable(uri).sql("SELECT max(id) AS m FROM t").to_pylist() == [{"m": 2}]
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "delta_rlc", "sql", f"SELECT id FROM '{uri}' ORDER BY id"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ['"id"', "1", "2"], r
    r = subprocess.run([sys.executable, "-m", "delta_rlc", "sql", "SELEC 1"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error:")


def test_statements_mean_what_they_say(tmp_path):
    # A quoted literal stays one literal; a ';' in a comment or a string does not end a statement;
    # MERGE refuses an unknown column. Each of these deleted or changed rows before.
    uri = str(tmp_path / "q")
    delta_rlc.sql(f"CREATE TABLE '{uri}' (id BIGINT, name STRING)")
    delta_rlc.sql(f"INSERT INTO '{uri}' VALUES (1, 'x'), (2, 'it''s')")
    delta_rlc.sql(f"DELETE FROM '{uri}' WHERE name = 'x'' OR ''1''=''1'")
    assert delta_rlc.sql(f"SELECT count(*) AS n FROM '{uri}'").read_all().to_pylist() == [{"n": 2}]
    assert delta_rlc.sql("SELECT 'it''s' AS s").read_all().to_pylist() == [{"s": "it's"}]
    import subprocess
    import sys

    script = tmp_path / "s.sql"
    script.write_text(f"DELETE FROM '{uri}' -- remove the test row;\nWHERE id = 1;\nSELECT 'a;b' AS s;\n")
    r = subprocess.run([sys.executable, "-m", "delta_rlc", "sql", "-f", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r
    assert '"a;b"' in r.stdout or "a;b" in r.stdout, r
    assert DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pylist() == [{"id": 2, "name": "it's"}]
    with pytest.raises((DeltaError, ValueError), match="unknown column nosuch"):
        DeltaTable(uri).merge(pa.table({"id": [2]}), "target.id = source.id").when_matched_update({"nosuch": "1"}).execute()
    assert DeltaTable(uri).to_pyarrow_table().to_pylist() == [{"id": 2, "name": "it's"}]


def test_schema_evolution_merge_and_overwrite(tmp_path):
    """deltalake's schema_mode: "merge" adds the data's new columns (old rows NULL; missing columns
    written NULL), "overwrite" replaces the schema; without it a mismatch is an error and nothing
    commits. deltalake reads the evolved table, column-mapped or not."""
    for cm in [None, "name"]:
        uri = str(tmp_path / f"evolve-{cm}")
        conf = {"delta.columnMapping.mode": cm} if cm else None
        write_deltalake(uri, pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}), configuration=conf)
        wider = pa.table({"id": pa.array([3], pa.int64()), "v": ["c"], "extra": pa.array([30], pa.int64())})
        with pytest.raises(SchemaMismatchError):
            write_deltalake(uri, wider, mode="append")
        assert DeltaTable(uri).version() == 0
        write_deltalake(uri, wider, mode="append", schema_mode="merge")
        write_deltalake(uri, pa.table({"id": pa.array([4], pa.int64())}), mode="append", schema_mode="merge")
        expected = [(1, "a", None), (2, "b", None), (3, "c", 30), (4, None, None)]
        got = sorted(tuple(r.values()) for r in DeltaTable(uri).to_pyarrow_table().select(["id", "v", "extra"]).to_pylist())
        assert got == expected, cm
        theirs = sorted(tuple(r.values()) for r in deltalake_read(uri).select(["id", "v", "extra"]).to_pylist())
        assert theirs == expected, cm
        # Refused by the write itself (as in Rust): an InvalidInputError, a DeltaError and a
        # ValueError as deltalake callers catch it; nothing commits.
        before = DeltaTable(uri).version()
        with pytest.raises(ValueError, match="schema_mode overwrite needs mode overwrite") as e:
            write_deltalake(uri, pa.table({"z": [1.5]}), mode="append", schema_mode="overwrite")
        assert isinstance(e.value, DeltaError) and DeltaTable(uri).version() == before
        write_deltalake(uri, pa.table({"z": [1.5, 2.5]}), mode="overwrite", schema_mode="overwrite")
        assert DeltaTable(uri).to_pyarrow_table().to_pylist() == [{"z": 1.5}, {"z": 2.5}]
        assert deltalake_read(uri).column_names == ["z"]


def _cdf_rows(reader) -> list:
    t = pa.RecordBatchReader.from_stream(reader).read_all()  # pyarrow or arro3 (deltalake)
    t = t.select(["id", "v", "_change_type", "_commit_version"])
    return sorted(tuple(r.values()) for r in t.to_pylist())


def test_change_data_feed_matches_deltalake_both_ways(tmp_path):
    """Our change files are read by deltalake's load_cdf with the same rows as ours, and
    deltalake's change files are read by our load_cdf with the rows deltalake gives."""
    cdf = {"delta.enableChangeDataFeed": "true"}
    data = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": ["a", "b", "c", "d"]})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    write_deltalake(ours, data, configuration={**cdf, "delta.enableDeletionVectors": "true"})
    deltalake.write_deltalake(theirs, data, configuration=cdf)
    source = pa.table({"id": pa.array([3, 5], pa.int64()), "v": ["C", "e"]})
    for t in (DeltaTable(ours), deltalake.DeltaTable(theirs)):
        t.delete("id = 1")
        t.update(updates={"v": "'B'"}, predicate="id = 2")
        (
            t.merge(source, "target.id = source.id", source_alias="source", target_alias="target")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
    expected = sorted(
        [(i, v, "insert", 0) for i, v in [(1, "a"), (2, "b"), (3, "c"), (4, "d")]]
        + [(1, "a", "delete", 1), (2, "b", "update_preimage", 2), (2, "B", "update_postimage", 2)]
        + [(3, "c", "update_preimage", 3), (3, "C", "update_postimage", 3), (5, "e", "insert", 3)]
    )
    assert _cdf_rows(DeltaTable(ours).load_cdf(starting_version=0)) == expected
    assert _cdf_rows(deltalake.DeltaTable(ours).load_cdf(starting_version=0)) == expected
    assert _cdf_rows(deltalake.DeltaTable(theirs).load_cdf(starting_version=0)) == expected
    assert _cdf_rows(DeltaTable(theirs).load_cdf(starting_version=0)) == expected
    # Ranges, columns, predicates and out-of-range starts, as deltalake's arguments.
    assert _cdf_rows(DeltaTable(ours).load_cdf(starting_version=2, ending_version=2)) == [
        (2, "B", "update_postimage", 2),
        (2, "b", "update_preimage", 2),
    ]
    only = DeltaTable(ours).load_cdf(starting_version=0, columns=["id", "_change_type"], predicate="_change_type = 'delete'").read_all()
    assert only.column_names == ["id", "_change_type"] and only.to_pylist() == [{"id": 1, "_change_type": "delete"}]
    assert DeltaTable(ours).load_cdf(starting_version=99, allow_out_of_range=True).read_all().num_rows == 0
    with pytest.raises(DeltaError):
        DeltaTable(ours).load_cdf(starting_version=99)


def test_merge_schema_evolution(tmp_path):
    """merge(..., merge_schema=True) adds the source's new column in the MERGE's commit; deltalake
    reads the evolved table with the same rows."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    src = pa.table({"id": pa.array([2, 3], pa.int64()), "v": ["B", "c"], "extra": pa.array([20, 30], pa.int64())})
    version = DeltaTable(uri).version()
    (
        DeltaTable(uri)
        .merge(src, "target.id = source.id", merge_schema=True)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    t = DeltaTable(uri)
    assert t.version() == version + 1
    want = [{"id": 1, "v": "a", "extra": None}, {"id": 2, "v": "B", "extra": 20}, {"id": 3, "v": "c", "extra": 30}]
    assert rows(t) == want
    assert rows(deltalake_read(uri)) == want


def test_writes_leave_out_identity_and_generated_columns(tmp_path):
    """write_deltalake data without the identity and generated columns: they are computed; a
    missing ordinary column is still a schema mismatch."""
    uri = str(tmp_path / "t")
    delta_rlc.sql(f"CREATE TABLE '{uri}' (id BIGINT GENERATED ALWAYS AS IDENTITY, v BIGINT, twice BIGINT GENERATED ALWAYS AS (v * 2), note STRING)")
    write_deltalake(uri, pa.table({"v": pa.array([5, 6], pa.int64()), "note": ["a", "b"]}), mode="append")
    write_deltalake(uri, pa.table({"note": ["c"], "v": pa.array([7], pa.int64())}), mode="append")
    assert [(r["id"], r["v"], r["twice"], r["note"]) for r in rows(DeltaTable(uri))] == [(1, 5, 10, "a"), (2, 6, 12, "b"), (3, 7, 14, "c")]
    with pytest.raises(SchemaMismatchError):
        write_deltalake(uri, pa.table({"v": pa.array([8], pa.int64())}), mode="append")


def four_files_with_dvs(path):
    """A table of ids 0..399 in four files (one append each), deletion vectors on."""
    for f in range(4):
        write_deltalake(path, pa.table({"id": pa.array(range(f * 100, f * 100 + 100), pa.int64())}),
                        mode="append", configuration={"delta.enableDeletionVectors": "true"} if f == 0 else None)


def test_statements_report_their_requests_and_depth(tmp_path):
    # A MERGE on 4 files: the 4 new DVs go into one DV file; counts are the engine's own meter.
    path = str(tmp_path / "t")
    four_files_with_dvs(path)
    dt = DeltaTable(path)
    source = pa.table({"id": pa.array([5, 105, 205, 305], pa.int64())})
    m = dt.merge(source, "t.id = s.id", source_alias="s", target_alias="t").when_matched_delete().execute()
    assert m["num_target_rows_deleted"] == 4
    assert m["num_scanned_files"] == 4
    assert m["requests"]["PUT"] == 2, m["requests"]  # one DV file, the commit
    # The handle reads the version it holds (a deltalake table is pinned to its version): one
    # listing confirms the table is still the one it loaded; then the four data files, each
    # read by the key probe and again by the join (on a local disk the statement keeps no copies:
    # a second read is a page-cache copy; on an object store it is served from the statement's
    # cache, crates/delta-rlc/tests/it/request_cost.rs).
    assert (m["requests"]["LIST"], m["requests"]["GET"]) == (1, 8), m["requests"]
    # On a local disk reads have no latency, so the depth only orders completions: reported, but
    # its bound is asserted on a store with latency (crates/delta-rlc/tests/it/request_cost.rs).
    assert isinstance(m["critical_path_depth"], int)
    assert sorted(r["id"] for r in dt.to_pyarrow_table().to_pylist()) == [i for i in range(400) if i % 100 != 5]


def test_a_long_lived_handle_reads_only_the_commits_since_its_last_statement(tmp_path):
    # A deltalake table is pinned to its version; after each of its own commits it reads the next
    # statement at that version. The engine holds each pinned snapshot it built on the held one,
    # so the k-th statement reads one new commit, not the k commits since the table was opened.
    path = str(tmp_path / "t")
    four_files_with_dvs(path)
    dt = DeltaTable(path)
    seen = []
    for k in range(4):
        m = dt.delete(f"id = {k * 100 + 1}")
        assert m["num_deleted_rows"] == 1
        seen.append((m["requests"]["LIST"], m["requests"]["GET"]))
    assert seen[1:] == [seen[1]] * 3, seen
    assert dt.version() == 7
    assert dt.to_pyarrow_table().num_rows == 396
