"""Behaviours of deltalake 1.6 that delta_rlc matches, each checked on a small table: partition
listings and filters (values matched as the log's text, deltalake's refusals), the lazy dataset's
file order and statistics guarantees, Expression filters, the partitioning check on writes,
Field metadata, DeltaTable.create's legacy positional arguments, history pinned to the loaded
version, and vacuum's negative retention."""

from __future__ import annotations

import datetime as dt_
import json
import warnings

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import delta_rlc.table as table_module
from delta_rlc import CommitProperties, DeltaTable, write_deltalake
from delta_rlc.exceptions import DeltaError, SchemaMismatchError, UnsupportedError
from delta_rlc.schema import Field, PrimitiveType, Schema


def _rows(t) -> list:
    return pa.table(t).to_pylist()


def test_partitions_of_an_unpartitioned_table_is_empty(tmp_path):
    write_deltalake(tmp_path, pa.table({"id": [1, 2]}))
    write_deltalake(tmp_path, pa.table({"id": [3]}), mode="append")
    dt = DeltaTable(tmp_path)
    assert dt.partitions() == []
    # A partitioned table still lists each partition once.
    write_deltalake(tmp_path.parent / f"{tmp_path.name}-p", pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"]}), partition_by="p")
    assert sorted(x["p"] for x in DeltaTable(tmp_path.parent / f"{tmp_path.name}-p").partitions()) == ["a", "b"]


def _string_partitioned(tmp_path):
    # Partition columns of type string holding the texts deltalake would write for 2020, 2021.0,
    # True and a date.
    data = pa.table(
        {
            "id": list(range(6)),
            "year": ["2020", "2020", "2021.0", "2021.0", "2020", "2021.0"],
            "flag": ["true", "false", "true", "false", "true", "true"],
            "day": ["2023-01-01", "2023-01-02", "2023-01-01", "2023-01-02", "2023-01-01", "2023-01-01"],
        }
    )
    write_deltalake(tmp_path, data, partition_by=["year", "flag", "day"])
    return DeltaTable(tmp_path)


def test_partition_filter_values_match_as_the_logs_text(tmp_path):
    dt = _string_partitioned(tmp_path)

    def ids(partitions):
        return sorted(pa.table(dt.to_pyarrow_dataset(partitions).to_table())["id"].to_pylist())

    assert ids([("year", "=", 2020)]) == [0, 1, 4]
    assert ids([("year", "=", 2021.0)]) == [2, 3, 5]
    assert ids([("flag", "=", True)]) == [0, 2, 4, 5]
    assert ids([("day", "=", dt_.date(2023, 1, 2))]) == [1, 3]
    assert ids([("year", "in", [2020, 2022.0])]) == [0, 1, 4]
    assert ids([("flag", "in", [True, False])]) == list(range(6))
    # The same filters choose files, and the rows of to_pyarrow_table.
    assert len(dt.file_uris([("year", "=", 2021.0)])) == 2  # (2021.0, true, 01-01) and (2021.0, false, 01-02)
    assert sorted(dt.to_pyarrow_table(partitions=[("flag", "=", False)])["id"].to_pylist()) == [1, 3]
    with pytest.raises(ValueError, match="Could not encode partition value for type"):
        dt.to_pyarrow_dataset([("year", "=", {"a": 1})])
    with pytest.raises(ValueError, match="Could not encode partition value for type"):
        dt.file_uris([("year", "in", [{"a": 1}, "2020"])])


def test_malformed_partition_filters_are_refused_with_deltalakes_messages(tmp_path):
    dt = _string_partitioned(tmp_path)
    with pytest.raises(DeltaError) as e:
        dt.file_uris([("year", "=>", "3")])
    assert str(e.value) == 'Invalid partition filter found: ("year", "=>", "3").'
    with pytest.raises(DeltaError) as e:
        dt.file_uris([("year", "=", ["3", "20"])])
    assert str(e.value) == 'Invalid partition filter found: ("year", "=", ["3", "20"]).'
    with pytest.raises(SchemaMismatchError) as e:
        dt.file_uris([("unknown", "=", "3")])
    assert str(e.value) == "Data does not match the schema or partitions of the table: Field 'unknown' is not a root table field."


def test_partition_filters_on_a_null_partition_are_three_valued(tmp_path):
    # deltalake's answers: a null partition is "= ''" only; "!=", "not in" and "in" never match it.
    write_deltalake(tmp_path, pa.table({"id": [1, 2, 3], "p": pa.array(["a", "b", None])}), partition_by="p")
    dt = DeltaTable(tmp_path)
    cases = {
        ("!=", "a"): [2],
        ("not in", ("a",)): [2],
        ("=", ""): [3],
        ("!=", ""): [1, 2],
        ("in", ("a", "")): [1],
        ("not in", ("a", "")): [],
        (">", "a"): [2],
    }
    for (op, value), want in cases.items():
        f = [("p", op, list(value) if isinstance(value, tuple) else value)]
        assert sorted(pa.table(dt.to_pyarrow_dataset(f).to_table())["id"].to_pylist()) == want, f
        assert len(dt.file_uris(f)) == len(want), f
        assert sorted(str(x["p"]) for x in dt.partitions(f)) == sorted(str({1: "a", 2: "b", 3: None}[i]) for i in want), f


def test_filtered_dataset_keeps_the_logs_file_order(tmp_path):
    for year, ids in (("2021", [1]), ("2020", [2]), ("2021", [3]), ("2021", [4])):
        write_deltalake(tmp_path, pa.table({"id": ids, "year": [year]}), mode="append", partition_by="year")
    dt = DeltaTable(tmp_path)
    everything = pa.table(dt.to_pyarrow_dataset().to_table())["id"].to_pylist()
    chosen = pa.table(dt.to_pyarrow_dataset([("year", "=", "2021")]).to_table())["id"].to_pylist()
    # The filtered read is the unfiltered one without the 2020 rows, in the same order.
    assert chosen == [i for i in everything if i != 2]
    assert sorted(chosen) == [1, 3, 4]


def test_dataset_fragments_carry_statistics_guarantees(tmp_path):
    # 1 all-valid part, 1 all-null part, 1 mixed part (deltalake's test_filter_nulls).
    data = pa.table({"part": ["a", "a", "b", "b", "c", "c"], "value": pa.array([1, 1, None, None, 2, None], pa.int64())})
    write_deltalake(tmp_path, data, partition_by="part")
    dataset = DeltaTable(tmp_path).to_pyarrow_dataset()

    def fragments(predicate):
        return len(list(dataset.get_fragments(filter=predicate)))

    assert fragments(ds.field("value").is_valid()) == 2
    assert fragments(ds.field("value").is_null()) == 2
    assert fragments(ds.field("value") > 1) == 1
    # The guarantees never drop a row: each filter reads what a filter over all rows gives.
    for predicate in (ds.field("value").is_valid(), ds.field("value").is_null(), ds.field("value") > 1, ds.field("value") <= 1):
        got = dataset.to_table(filter=predicate).sort_by([("part", "ascending"), ("value", "ascending")])
        want = data.filter(predicate).sort_by([("part", "ascending"), ("value", "ascending")])
        assert got.to_pylist() == want.to_pylist()


def test_timestamp_and_string_bounds_prune_files_and_never_drop_a_row(tmp_path):
    # Microsecond values past the millisecond the statistics keep, and strings past the 32
    # characters a writer may keep of a maximum: the edges a bound must still cover.
    ts = dt_.datetime(2024, 1, 1, 12, 0, 0, 999_999, tzinfo=dt_.timezone.utc)
    long = "m" * 40
    parts = [
        pa.table({"p": ["a"] * 2, "t": pa.array([ts - dt_.timedelta(days=1), ts], pa.timestamp("us", "UTC")), "s": ["apple", long]}),
        pa.table({"p": ["b"] * 2, "t": pa.array([ts + dt_.timedelta(microseconds=1), ts + dt_.timedelta(days=1)], pa.timestamp("us", "UTC")), "s": ["n" * 40 + "z", "zebra"]}),
    ]
    for t in parts:
        write_deltalake(tmp_path, t, mode="append")
    data = pa.concat_tables(parts)
    dataset = DeltaTable(tmp_path).to_pyarrow_dataset()
    at = pa.scalar(ts, pa.timestamp("us", "UTC"))
    predicates = [
        ds.field("t") == at, ds.field("t") > at, ds.field("t") >= at, ds.field("t") < at,
        ds.field("s") == long, ds.field("s") > long, ds.field("s") <= "apple", ds.field("s") >= "n",
    ]
    assert len(list(dataset.get_fragments(filter=ds.field("t") == at))) == 1
    assert len(list(dataset.get_fragments(filter=ds.field("s") < "b"))) == 1
    for predicate in predicates:
        got = sorted(dataset.to_table(filter=predicate).column("s").to_pylist())
        want = sorted(data.filter(predicate).column("s").to_pylist())
        assert got == want, predicate


def test_to_pyarrow_table_and_to_pandas_take_an_expression_filter(tmp_path):
    data = pa.table({"date": ["2021-02-19", "2021-02-21", "2021-02-22", "2021-01-01"], "state": ["Alabama", "Ohio", "Wyoming", "Wyoming"], "n": [1, 2, 3, 4]})
    write_deltalake(tmp_path, data, partition_by="state")
    dt = DeltaTable(tmp_path)
    expr = (ds.field("date") > "2021-02-20") | ds.field("state").isin(["Alabama"])
    assert sorted(dt.to_pyarrow_table(filters=expr)["n"].to_pylist()) == [1, 2, 3]
    assert sorted(dt.to_pandas(filters=expr)["n"].tolist()) == [1, 2, 3]
    assert sorted(dt.to_pandas(filters=[[("date", ">", "2021-02-20")], [("state", "in", ["Alabama"])]])["n"].tolist()) == [1, 2, 3]
    # With partitions too: the filter applies to the files they choose.
    got = dt.to_pyarrow_table(partitions=[("state", "=", "Wyoming")], columns=["n"], filters=ds.field("n") > 3)
    assert got.column_names == ["n"] and got["n"].to_pylist() == [4]


def test_write_with_other_partitioning_is_refused_unless_it_replaces_the_table(tmp_path):
    q = tmp_path.parent / f"{tmp_path.name}-q"  # beside the first table, not inside it
    write_deltalake(tmp_path, pa.table({"id": [1], "p": ["a"]}))
    with pytest.raises(DeltaError) as e:
        write_deltalake(tmp_path, pa.table({"id": [2], "p": ["b"]}), mode="append", partition_by="p")
    assert str(e.value).startswith('Generic error: Specified table partitioning does not match table partitioning: expected: [], got: ["p"]')
    write_deltalake(q, pa.table({"id": [1], "p": ["a"]}), partition_by="p")
    with pytest.raises(DeltaError, match="does not match table partitioning"):
        write_deltalake(q, pa.table({"id": [2], "p": ["b"]}), mode="append", partition_by=[])
    with pytest.raises(DeltaError, match="does not match table partitioning"):
        write_deltalake(q, pa.table({"id": [2], "p": ["b"]}), mode="overwrite", schema_mode="overwrite", partition_by=["id"], predicate="id = 1")
    assert _rows(DeltaTable(tmp_path).to_pyarrow_table()) == [{"id": 1, "p": "a"}]
    assert _rows(DeltaTable(q).to_pyarrow_table()) == [{"id": 1, "p": "a"}]
    # The same partitioning still appends.
    write_deltalake(q, pa.table({"id": [2], "p": ["b"]}), mode="append", partition_by=["p"])
    assert sorted(DeltaTable(q).to_pyarrow_table()["id"].to_pylist()) == [1, 2]
    # A full overwrite that replaces the schema lays the table out anew, as deltalake does (an
    # empty partition_by unpartitions it); a column that is not in the data is refused.
    write_deltalake(tmp_path, pa.table({"id": [2, 3], "p": ["b", "c"]}), mode="overwrite", schema_mode="overwrite", partition_by="p")
    dt = DeltaTable(tmp_path)
    assert dt.partition_columns() == ["p"] and sorted(dt.to_pyarrow_table()["id"].to_pylist()) == [2, 3]
    assert sorted(dt.partitions(), key=str) == [{"p": "b"}, {"p": "c"}]
    with pytest.raises(DeltaError, match="partition column x is not in the schema"):
        write_deltalake(tmp_path, pa.table({"id": [4], "p": ["d"]}), mode="overwrite", schema_mode="overwrite", partition_by="x")
    write_deltalake(q, pa.table({"id": [7]}), mode="overwrite", schema_mode="overwrite", partition_by=[])
    dt = DeltaTable(q)
    assert dt.partition_columns() == [] and _rows(dt.to_pyarrow_table()) == [{"id": 7}]


def test_field_metadata_values_as_deltalake_keeps_them(tmp_path):
    f = Field("y", "float", False, {"x": {"y": 3}, "n": 7, "s": "t", "b": True, "r": 1.5})
    assert json.loads(f.metadata["x"]) == {"y": 3}
    assert f.metadata == {"x": '{"y":3}', "n": 7, "s": "t", "b": "true", "r": "1.5"}
    assert Field.from_json(f.to_json()) == f
    assert Field("z", PrimitiveType("string"), True, None).metadata == {}
    with pytest.raises(TypeError):
        Field("z", "string", True, {"x": object()})
    # Metadata read from a log keeps its JSON values (a column mapping id stays a number).
    g = Field.from_json('{"name":"a","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"k":{"v":2}}}')
    assert g.metadata == {"delta.columnMapping.id": 1, "k": {"v": 2}}


def test_create_legacy_positional_arguments(tmp_path, monkeypatch):
    schema = pa.schema([("id", pa.int64())])
    captured = {}
    monkeypatch.setattr(table_module, "_create_deltalake", lambda *args: captured.update(args=args))
    monkeypatch.setattr(DeltaTable, "__init__", lambda self, *a, **k: None)
    commit = CommitProperties(custom_metadata={"userName": "John Doe"})
    with pytest.warns(DeprecationWarning, match="positionally"):
        DeltaTable.create(tmp_path, schema, "error", None, None, None, None, None, commit)
    args = captured["args"]
    assert args[4] is True and args[9] is commit and args[10] is None
    with pytest.raises(TypeError, match="multiple values for 'raise_if_key_not_exists'"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            DeltaTable.create(tmp_path, schema, "error", None, None, None, None, None, commit, None, False, raise_if_key_not_exists=True)
    with pytest.raises(TypeError, match="unexpected positional arguments"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            DeltaTable.create(tmp_path, schema, "error", None, None, None, None, None, commit, None, False, 1)
    monkeypatch.undo()
    # Positionally, the three still reach the table.
    with pytest.warns(DeprecationWarning):
        dt = DeltaTable.create(tmp_path, schema, "error", None, None, None, None, None, commit, None, True)
    assert dt.history()[0]["userName"] == "John Doe"


def test_history_is_of_the_loaded_version(tmp_path):
    for i in range(3):
        write_deltalake(tmp_path, pa.table({"id": [i]}), mode="overwrite")
    dt = DeltaTable(tmp_path)
    old = DeltaTable(tmp_path, version=1)
    write_deltalake(tmp_path, pa.table({"id": [9]}), mode="overwrite")
    assert [h["version"] for h in dt.history()] == [2, 1, 0]
    assert [h["version"] for h in dt.history(2)] == [2, 1]
    assert [h["version"] for h in old.history()] == [1, 0]
    assert [h["version"] for h in old.history(1)] == [1]
    dt.update_incremental()
    assert [h["version"] for h in dt.history(1)] == [3]

    # A commit landing while the history is read does not shift the versions.
    class Racing:
        def __init__(self, real):
            self._real = real

        def history(self, limit):
            out = self._real.history(limit)
            write_deltalake(tmp_path, pa.table({"id": [10]}), mode="overwrite")
            return out

        def __getattr__(self, name):
            return getattr(self._real, name)

    dt._table = Racing(dt._table)
    assert [h["version"] for h in dt.history()] == [3, 2, 1, 0]


def test_vacuum_refuses_a_negative_retention(tmp_path):
    write_deltalake(tmp_path, pa.table({"id": [1]}))
    with pytest.raises(ValueError, match="^The retention periods should be positive.$"):
        DeltaTable(tmp_path).vacuum(-1)


def test_vacuum_lite_and_full_modes_and_their_commits(tmp_path):
    """Lite (deltalake's default) deletes what the log's tombstones name, without listing; full
    also finds files the log never named, but only past the floor for writers in flight, so a
    fresh stray file stays. A deleting run is recorded as VACUUM START and VACUUM END with the
    caller's commit metadata; paths are relative to the root."""
    import os

    write_deltalake(tmp_path, pa.table({"id": [1, 2], "v": ["a", "b"]}), partition_by=["id"])
    first = set(DeltaTable(tmp_path).file_uris())
    write_deltalake(tmp_path, pa.table({"id": [3, 4], "v": ["c", "d"]}), partition_by=["id"], mode="overwrite")
    stray = tmp_path / "id=1" / "stray.parquet"
    stray.write_bytes(b"a writer's file, not committed yet")
    dt = DeltaTable(tmp_path)
    removed = {os.path.relpath(u.removeprefix("file://"), tmp_path) for u in first}
    assert set(dt.vacuum(0, enforce_retention_duration=False)) == removed
    assert set(dt.vacuum(0, enforce_retention_duration=False, full=True)) == removed
    # Kept versions keep their files.
    assert dt.vacuum(0, enforce_retention_duration=False, full=True, keep_versions=[0]) == []
    with pytest.raises(DeltaError):
        dt.vacuum(168, full=True, keep_versions=[9])
    version = dt.version()
    deleted = dt.vacuum(0, dry_run=False, enforce_retention_duration=False, commit_properties=CommitProperties(custom_metadata={"userName": "ops"}))
    assert set(deleted) == removed
    assert stray.exists()
    assert dt.version() == version + 2
    end, start = DeltaTable(tmp_path).history(2)
    assert (start["operation"], end["operation"]) == ("VACUUM START", "VACUUM END")
    assert start["userName"] == end["userName"] == "ops"
    assert start["operationParameters"] == {"retentionCheckEnabled": "false", "specifiedRetentionMillis": "0", "defaultRetentionMillis": "604800000"}
    assert int(start["operationMetrics"]["numFilesToDelete"]) == 2
    assert int(end["operationMetrics"]["numDeletedFiles"]) == 2
    assert end["operationParameters"]["status"] == "COMPLETED"
    assert sorted((r["id"], r["v"]) for r in _rows(DeltaTable(tmp_path).to_pyarrow_table())) == [(3, "c"), (4, "d")]
    # A dry run commits nothing.
    assert dt.vacuum(0, enforce_retention_duration=False) == []
    assert DeltaTable(tmp_path).version() == version + 2


def test_convert_to_deltalake_adds_the_parquet_files_in_place(tmp_path):
    """CONVERT TO DELTA: hive directories with escaped and NULL values, the row counts from the
    footers, nothing rewritten; a missing partition schema or files of two schemas are refused
    and leave no table; mode="ignore" leaves a table alone."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from delta_rlc import convert_to_deltalake

    data = pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "p": ["x", "a b", None, "x"]})
    ds.write_dataset(data, tmp_path / "t", format="parquet", partitioning=["p"], partitioning_flavor="hive")
    before = sorted(str(f) for f in (tmp_path / "t").rglob("*.parquet"))
    with pytest.raises(DeltaError, match="schema of partition columns must be provided"):
        convert_to_deltalake(tmp_path / "t")
    with pytest.raises(ValueError, match="Partition strategy"):
        convert_to_deltalake(tmp_path / "t", partition_by=pa.schema([("p", pa.string())]))
    assert not (tmp_path / "t" / "_delta_log").exists()
    convert_to_deltalake(tmp_path / "t", partition_by=pa.schema([("p", pa.string())]), partition_strategy="hive", name="converted", commit_properties=CommitProperties(custom_metadata={"userName": "ops"}))
    dt = DeltaTable(tmp_path / "t")
    assert dt.version() == 0 and dt.metadata().name == "converted" and dt.metadata().partition_columns == ["p"]
    assert dt.history()[0]["userName"] == "ops" and dt.history()[0]["operation"] == "CONVERT"
    rows = sorted(_rows(dt.to_pyarrow_table()), key=lambda r: r["id"])
    assert [(r["id"], r["p"]) for r in rows] == [(1, "x"), (2, "a b"), (3, None), (4, "x")]
    assert sorted(str(f) for f in (tmp_path / "t").rglob("*.parquet")) == before
    assert sum(a["num_records"] for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist()) == 4
    with pytest.raises(DeltaError):
        convert_to_deltalake(tmp_path / "t", partition_by=pa.schema([("p", pa.string())]), partition_strategy="hive")
    convert_to_deltalake(tmp_path / "t", mode="ignore")
    # Files of two schemas are refused, not merged.
    (tmp_path / "u").mkdir()
    pq.write_table(pa.table({"id": [1]}), tmp_path / "u" / "a.parquet")
    pq.write_table(pa.table({"id": ["one"]}), tmp_path / "u" / "b.parquet")
    with pytest.raises(DeltaError, match="another schema"):
        convert_to_deltalake(tmp_path / "u")
    assert not (tmp_path / "u" / "_delta_log").exists()
    # Values a Delta column would not read back as the files hold them are refused.
    for name, column in [("u64", pa.array([2**64 - 1], pa.uint64())), ("ns", pa.array([1], pa.timestamp("ns")))]:
        (tmp_path / name).mkdir()
        pq.write_table(pa.table({"x": column}), tmp_path / name / "a.parquet", version="2.6")
        with pytest.raises(DeltaError, match="read back exactly"):
            convert_to_deltalake(tmp_path / name)
    (tmp_path / "big" / "i=2147483648").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "big" / "i=2147483648" / "a.parquet")
    with pytest.raises(DeltaError, match="not a valid"):
        convert_to_deltalake(tmp_path / "big", partition_by=pa.schema([("i", pa.int32())]), partition_strategy="hive")
    # Never inside another table: its VACUUM would delete files it does not know.
    write_deltalake(tmp_path / "outer", pa.table({"id": [1], "p": ["a"]}), partition_by=["p"])
    with pytest.raises(DeltaError, match="inside the Delta table"):
        convert_to_deltalake(tmp_path / "outer" / "p=a")
    assert not (tmp_path / "outer" / "p=a" / "_delta_log").exists()


def test_a_table_partitioned_by_all_of_its_columns_is_refused(tmp_path):
    """Its data files would hold no column to count their rows by (Delta Spark refuses it)."""
    with pytest.raises(DeltaError, match="partitioned by all of its columns"):
        write_deltalake(tmp_path, pa.table({"id": [1, 2]}), partition_by=["id"])
    assert not DeltaTable.is_deltatable(str(tmp_path))


def test_a_check_constraint_on_a_spaced_column_is_stored_as_spark_reads_it(tmp_path):
    """`high price` (backticks) is the column in Spark SQL; "high price" would be a string
    literal there, so the double-quoted form deltalake writes is refused, not stored."""
    write_deltalake(tmp_path, pa.table({"high price": pa.array([1, 2], pa.int64())}))
    dt = DeltaTable(tmp_path)
    dt.alter.add_constraint({"check_price": "`high price` >= 0"})
    assert DeltaTable(tmp_path).metadata().configuration["delta.constraints.check_price"] == "`high price` >= 0"
    with pytest.raises(DeltaError, match="check_price"):
        write_deltalake(tmp_path, pa.table({"high price": pa.array([-1], pa.int64())}), mode="append")
    with pytest.raises(Exception, match="high price"):
        DeltaTable(tmp_path).alter.add_constraint({"min_price": '"high price" < 5'})
    assert "delta.constraints.min_price" not in DeltaTable(tmp_path).metadata().configuration
    assert sorted(DeltaTable(tmp_path).to_pyarrow_table().column("high price").to_pylist()) == [1, 2]


def test_a_not_null_generated_column_left_out_is_computed(tmp_path):
    from delta_rlc.schema import Schema

    s = Schema([
        Field("id", PrimitiveType("integer"), nullable=False),
        Field("d", PrimitiveType("date"), nullable=False),
        Field("y", PrimitiveType("date"), nullable=False, metadata={"delta.generationExpression": "TRUNC(d, 'YEAR')"}),
    ])
    dt = DeltaTable.create(tmp_path, schema=s)
    write_deltalake(dt, pa.table({"id": pa.array([1], pa.int32()), "d": pa.array([dt_.date(2020, 6, 15)], pa.date32())}), mode="append")
    assert DeltaTable(tmp_path).to_pyarrow_table().to_pylist() == [{"id": 1, "d": dt_.date(2020, 6, 15), "y": dt_.date(2020, 1, 1)}]


def test_create_checkpoint_checkpoints_the_loaded_version_and_never_moves_the_hint_back(tmp_path):
    for i in range(4):
        write_deltalake(tmp_path, pa.table({"id": [i]}), mode="append")
    DeltaTable(tmp_path).create_checkpoint()  # of version 3
    DeltaTable(tmp_path, version=1).create_checkpoint()
    log = tmp_path / "_delta_log"
    assert (log / "00000000000000000001.checkpoint.parquet").exists()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 3
    assert sorted(DeltaTable(tmp_path).to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2, 3]
    assert sorted(DeltaTable(tmp_path, version=1).to_pyarrow_table().column("id").to_pylist()) == [0, 1]


def test_map_fixed_size_list_unsigned_and_dictionary_columns_are_written_with_deltalakes_delta_types(tmp_path):
    t = pa.table({
        "m": pa.array([[("a", 1)], [("b", 2), ("c", None)], None], type=pa.map_(pa.string(), pa.int32())),
        "u": pa.array([1, 2, 2**63 - 1], type=pa.uint64()),
        "f": pa.array([[1, 2], [3, 4], None], type=pa.list_(pa.int32(), 2)),
        "d": pa.array(["x", "y", "x"]).dictionary_encode(),
    })
    write_deltalake(tmp_path, t)
    dt = DeltaTable(tmp_path)
    types = {f.name: str(f.type) for f in dt.schema().fields}
    assert "MapType" in types["m"] and "long" in types["u"] and "ArrayType" in types["f"] and "string" in types["d"]
    dt.update(predicate="u = 2", updates={"d": "'z'"})
    dt.create_checkpoint()
    rows = sorted(DeltaTable(tmp_path).to_pyarrow_table().to_pylist(), key=lambda r: r["u"])
    assert rows == [
        {"m": [("a", 1)], "u": 1, "f": [1, 2], "d": "x"},
        {"m": [("b", 2), ("c", None)], "u": 2, "f": [3, 4], "d": "z"},
        {"m": None, "u": 2**63 - 1, "f": None, "d": "x"},
    ]
    # An unsigned value past the LONG range fails the write, and nothing is committed.
    with pytest.raises(DeltaError, match="cannot cast UInt64 to Int64"):
        write_deltalake(tmp_path, t.set_column(1, "u", pa.array([1, 2, 2**64 - 1], pa.uint64())), mode="append")
    assert DeltaTable(tmp_path).version() == 1  # the create and the UPDATE


def test_schema_evolution_on_a_column_mapped_table_gives_new_columns_fresh_ids(tmp_path):
    import deltalake  # the peer reads what we evolved

    write_deltalake(tmp_path, pa.table({"Super Name": ["a"], "id": [1]}), configuration={"delta.columnMapping.mode": "name"})
    write_deltalake(tmp_path, pa.table({"Super Name": ["b"], "id": [2], "extra": pa.array([7], pa.int32())}), mode="append", schema_mode="merge")
    src = pa.table({"id": [2, 3], "more": ["m2", "m3"]})
    (DeltaTable(tmp_path).merge(src, "t.id = s.id", source_alias="s", target_alias="t", merge_schema=True)
        .when_matched_update_all().when_not_matched_insert_all().execute())
    dt = DeltaTable(tmp_path)
    fields = {f.name: f.metadata for f in dt.schema().fields}
    ids = [m["delta.columnMapping.id"] for m in fields.values()]
    assert sorted(fields) == ["Super Name", "extra", "id", "more"] and len(set(ids)) == 4
    want = [
        {"Super Name": "a", "id": 1, "extra": None, "more": None},
        {"Super Name": "b", "id": 2, "extra": 7, "more": "m2"},
        {"Super Name": None, "id": 3, "extra": None, "more": "m3"},
    ]
    assert sorted(dt.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == want
    peer = deltalake.DeltaTable(str(tmp_path))
    got = pa.table(deltalake.QueryBuilder().register("t", peer).execute("SELECT * FROM t ORDER BY id").read_all()).to_pylist()
    assert got == want


def test_column_names_resolve_without_regard_to_case_as_spark_does(tmp_path):
    from delta_rlc import QueryBuilder

    write_deltalake(tmp_path, pa.table({"dayOfYear": [1, 2, 3], "Value": ["a", "b", "c"]}))
    dt = DeltaTable(tmp_path)
    dt.update(predicate="dayofyear = 3", updates={"VALUE": "'z'"})
    dt.delete("DAYOFYEAR = 1")
    got = QueryBuilder().register("tbl", DeltaTable(tmp_path)).execute("SELECT tbl.dayOfYear, value FROM tbl WHERE DayOfYear > 1 ORDER BY dayofyear").read_all()
    # The columns are named as the query writes them, as Spark names them.
    assert pa.table(got).to_pylist() == [{"dayOfYear": 2, "value": "b"}, {"dayOfYear": 3, "value": "z"}]


def test_optimize_min_commit_interval_commits_bin_by_bin(tmp_path):
    # Three partitions of two files each: with an interval of zero every partition's bin lands in
    # a version of its own, with the counters summed; a long interval (seconds, as deltalake
    # takes an int) gives one commit; a negative one is refused.
    def table(path):
        for _ in range(2):
            write_deltalake(path, pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"]}), partition_by="p", mode="append")
        return DeltaTable(path)

    dt = table(tmp_path / "zero")
    before = dt.version()
    metrics = dt.optimize.z_order(["id"], min_commit_interval=dt_.timedelta(0))
    assert dt.version() == before + 3
    assert metrics["numFilesRemoved"] == 6 and metrics["numFilesAdded"] == 3
    assert [h["operation"] for h in dt.history(3)] == ["OPTIMIZE"] * 3
    assert sorted(r["id"] for r in _rows(dt.to_pyarrow_table())) == [1, 1, 2, 2, 3, 3]

    dt = table(tmp_path / "long")
    before = dt.version()
    metrics = dt.optimize.compact(min_commit_interval=600)
    assert dt.version() == before + 1
    assert metrics["numFilesRemoved"] == 6
    with pytest.raises(ValueError):
        dt.optimize.compact(min_commit_interval=dt_.timedelta(seconds=-1))


def test_a_write_that_creates_the_table_is_recorded_as_a_write(tmp_path):
    # As deltalake and Spark record a DataFrame write to a path with no table yet: WRITE with the
    # save mode and partitionBy, not CREATE TABLE (DeltaTable.create stays CREATE TABLE).
    for mode, label in (("overwrite", "Overwrite"), ("append", "Append"), ("error", "ErrorIfExists")):
        uri = tmp_path / mode
        write_deltalake(uri, pa.table({"id": [1, 2], "p": ["a", "b"]}), mode=mode, partition_by=["p"])
        h = DeltaTable(uri).history(1)[0]
        assert (h["operation"], h["operationParameters"]["mode"], h["operationParameters"]["partitionBy"]) == ("WRITE", label, '["p"]')
        assert sorted(r["id"] for r in _rows(DeltaTable(uri).to_pyarrow_table())) == [1, 2]
    DeltaTable.create(tmp_path / "c", Schema([Field("id", "long")]))
    assert DeltaTable(tmp_path / "c").history(1)[0]["operation"] == "CREATE TABLE"


def _strip_stats(path) -> None:
    """Drops the stats of every add action in the log (a writer that kept none)."""
    for f in (path / "_delta_log").glob("*.json"):
        lines = []
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                action["add"].pop("stats", None)
            lines.append(json.dumps(action))
        f.write_text("\n".join(lines) + "\n")


def test_a_delete_of_files_without_stats_leaves_the_deleted_row_count_out(tmp_path):
    # Whole partitions removed unread: with no numRecords the count is unknown, so it is left out
    # (Delta Spark's metadata-only delete) rather than reported as 0; with stats it is counted.
    write_deltalake(tmp_path, pa.table({"part": ["a", "a", "b", "c"], "v": [1, 2, 3, 4]}), partition_by=["part"])
    _strip_stats(tmp_path)
    dt = DeltaTable(tmp_path)
    metrics = dt.delete("part = 'a'")
    assert metrics["num_removed_files"] == 1
    assert "num_deleted_rows" not in metrics and metrics["rows_affected"] is None
    assert sorted(r["v"] for r in _rows(dt.to_pyarrow_table())) == [3, 4]
    write_deltalake(tmp_path, pa.table({"part": ["c"], "v": [5]}), mode="append")
    dt = DeltaTable(tmp_path)
    metrics = dt.delete("part = 'c'")
    assert "num_deleted_rows" not in metrics, "one of the two files has no stats"
    write_deltalake(tmp_path, pa.table({"part": ["d", "d"], "v": [6, 7]}), mode="append")
    metrics = DeltaTable(tmp_path).delete("part = 'd'")
    assert metrics["num_deleted_rows"] == 2


def test_post_commit_hook_create_checkpoint_false_skips_that_checkpoint_only(tmp_path):
    from delta_rlc import PostCommitHookProperties

    data = pa.table({"id": [1, 2, 3]})
    write_deltalake(tmp_path, data, configuration={"delta.checkpointInterval": "2"})
    write_deltalake(tmp_path, data, mode="append")
    write_deltalake(tmp_path, data, mode="append", post_commithook_properties=PostCommitHookProperties(create_checkpoint=False))
    log = tmp_path / "_delta_log"
    assert not list(log.glob("*.checkpoint.parquet")), "version 2 was committed without its checkpoint"
    DeltaTable(tmp_path).delete("id = 3", post_commithook_properties=PostCommitHookProperties(create_checkpoint=True))
    assert len(list(log.glob("*.checkpoint.parquet"))) == 0, "version 3 is not at the interval"
    DeltaTable(tmp_path).update(updates={"id": "4"}, predicate="id = 1")
    assert [p.name for p in log.glob("*.checkpoint.parquet")] == ["00000000000000000004.checkpoint.parquet"]
    assert DeltaTable(tmp_path).version() == 4 and sorted(r["id"] for r in _rows(DeltaTable(tmp_path).to_pyarrow_table())) == [2, 2, 2, 4, 4, 4]
    with pytest.raises(UnsupportedError, match="skip_checkpoint"):
        DeltaTable(tmp_path).vacuum(post_commithook_properties=PostCommitHookProperties(create_checkpoint=False))


def test_merge_star_except_with_schema_evolution_takes_the_new_source_columns(tmp_path):
    # INSERT * EXCEPT (sold) with merge_schema: every source column but `sold`, the new `customer`
    # included (it was once expanded from the target's columns alone, so customer came out NULL).
    write_deltalake(tmp_path, pa.table({"id": ["1", "2"], "sold": pa.array([1, 2], pa.int32())}))
    dt = DeltaTable(tmp_path)
    source = pa.table({"id": ["2", "9"], "sold": pa.array([20, 90], pa.int32()), "customer": ["ann", "doe"]})
    dt.merge(source, "t.id = s.id", source_alias="s", target_alias="t", merge_schema=True).when_matched_update_all(except_cols=["sold"]).when_not_matched_insert_all(except_cols=["sold"]).execute()
    rows = sorted(_rows(DeltaTable(tmp_path).to_pyarrow_table()), key=lambda r: r["id"])
    assert rows == [
        {"id": "1", "sold": 1, "customer": None},
        {"id": "2", "sold": 2, "customer": "ann"},
        {"id": "9", "sold": None, "customer": "doe"},
    ]


def test_two_handles_on_one_table_and_version_are_equal(tmp_path):
    write_deltalake(tmp_path, pa.table({"id": [1]}))
    a, b = DeltaTable(tmp_path), DeltaTable(str(tmp_path))
    assert a == b and hash(a) == hash(b)
    write_deltalake(tmp_path, pa.table({"id": [2]}), mode="append")
    assert DeltaTable(tmp_path) != a and DeltaTable(tmp_path, version=0) == a


def test_replace_where_with_schema_overwrite_only_keeps_the_schema(tmp_path):
    # The rows the predicate keeps must fit: the same schema is a plain replaceWhere, another
    # schema is refused (and nothing is committed).
    write_deltalake(tmp_path, pa.table({"utcDate": ["a", "b"], "score": ["0-1", "3-1"]}))
    write_deltalake(tmp_path, pa.table({"utcDate": ["c"], "score": ["0-1"]}), mode="overwrite", schema_mode="overwrite", predicate="score = '0-1'")
    dt = DeltaTable(tmp_path)
    assert sorted(r["utcDate"] for r in _rows(dt.to_pyarrow_table())) == ["b", "c"]
    with pytest.raises(DeltaError, match="replaceWhere"):
        write_deltalake(tmp_path, pa.table({"utcDate": ["d"], "score": ["0-1"], "extra": [1]}), mode="overwrite", schema_mode="overwrite", predicate="score = '0-1'")
    assert DeltaTable(tmp_path).version() == 1


def test_writer_properties_compression_and_a_columns_encoding_are_what_the_files_hold(tmp_path):
    import pyarrow.parquet as pq
    from delta_rlc import ColumnProperties, WriterProperties

    data = pa.table({"price": pa.array(range(100), pa.int64()), "sold": pa.array([i % 3 for i in range(100)], pa.int64())})
    for codec, stored in [("GZIP", "GZIP"), ("BROTLI", "BROTLI"), ("LZ4_RAW", "LZ4"), ("ZSTD", "ZSTD")]:
        path = tmp_path / codec
        props = WriterProperties(compression=codec, column_properties={"price": ColumnProperties(encoding="DELTA_BINARY_PACKED")})
        write_deltalake(path, data, writer_properties=props)
        dt = DeltaTable(path)
        meta = pq.read_metadata(dt.file_uris()[0]).to_dict()["row_groups"][0]["columns"]
        price = next(c for c in meta if c["path_in_schema"] == "price")
        sold = next(c for c in meta if c["path_in_schema"] == "sold")
        assert price["compression"] == stored and "DELTA_BINARY_PACKED" in price["encodings"]
        assert "RLE_DICTIONARY" in sold["encodings"], "other columns keep their dictionary"
        assert sorted(r["price"] for r in _rows(dt.to_pyarrow_table())) == list(range(100))
    with pytest.raises(UnsupportedError, match="LZO"):
        write_deltalake(tmp_path / "lzo", data, writer_properties=WriterProperties(compression="LZO"))
    assert not (tmp_path / "lzo" / "_delta_log").exists()


def test_datasets_with_large_types_or_a_given_schema(tmp_path):
    import pyarrow.dataset as pads

    schema = pa.schema([
        pa.field("name", pa.large_string()),
        pa.field("tags", pa.large_list(pa.field("element", pa.large_string()))),
        pa.field("attrs", pa.map_(pa.large_string(), pa.large_binary())),
    ])
    table = pa.Table.from_pylist([{"name": "a", "tags": ["x"], "attrs": [("k", b"v")]}, {"name": "b", "tags": [], "attrs": []}], schema=schema)
    write_deltalake(tmp_path / "plain", table)
    dt = DeltaTable(tmp_path / "plain")
    assert dt.schema().to_pyarrow(as_large_types=True) == schema, "map keys and values become large too"
    for ds_ in (dt.to_pyarrow_dataset(as_large_types=True), dt.to_pyarrow_dataset(schema=schema)):
        assert ds_.schema == schema
        both = pads.dataset([ds_, pads.dataset(table)]).to_table()
        assert sorted(both.column("name").to_pylist()) == ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match="columns in order"):
        dt.to_pyarrow_dataset(schema=pa.schema([pa.field("other", pa.string())]))
    # With a deletion vector the rows are read here, then given the schema.
    write_deltalake(tmp_path / "dv", table, configuration={"delta.enableDeletionVectors": "true"})
    dv = DeltaTable(tmp_path / "dv")
    dv.delete("name = 'a'")
    got = DeltaTable(tmp_path / "dv").to_pyarrow_dataset(as_large_types=True).to_table()
    assert got.schema == schema and got.column("name").to_pylist() == ["b"]


def test_query_builder_columns_carry_their_field_metadata_as_deltalake_does(tmp_path):
    import deltalake

    from delta_rlc import QueryBuilder

    schema = Schema([
        Field("id", PrimitiveType("integer"), nullable=True),
        Field("gc", PrimitiveType("integer"), nullable=True, metadata={"delta.generationExpression": "5"}),
    ])
    DeltaTable.create(tmp_path, schema=schema, configuration={"delta.columnMapping.mode": "name"})
    write_deltalake(tmp_path, pa.table({"id": pa.array([2, 1], pa.int32())}), mode="append")
    sql = "SELECT *, gc + 1 AS g1 FROM t ORDER BY id"
    ours = pa.table(QueryBuilder().register("t", DeltaTable(tmp_path)).execute(sql).read_all())
    peer = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(tmp_path))).execute(sql).read_all())
    assert ours.to_pylist() == [{"id": 1, "gc": 5, "g1": 6}, {"id": 2, "gc": 5, "g1": 6}]
    gc = ours.schema.field("gc").metadata
    assert gc[b"delta.generationExpression"] == b"5" and b"delta.columnMapping.physicalName" in gc
    # Read as stored: the table's metadata; computed: none. Field by field as deltalake has it.
    for name in ["id", "gc", "g1"]:
        assert ours.schema.field(name).metadata == peer.schema.field(name).metadata, name


def test_datafusion_table_provider_hook_refuses_with_a_way_out(tmp_path, monkeypatch):
    """deltalake's `__datafusion_table_provider__` exists and refuses: there is no DataFusion FFI
    provider to export. Without the datafusion package it is deltalake's RuntimeError; with it,
    UnsupportedError. Both name QueryBuilder."""
    import importlib.metadata

    write_deltalake(tmp_path, pa.table({"id": [1, 2, 3]}))
    dt = DeltaTable(tmp_path)

    def missing(pkg):
        raise importlib.metadata.PackageNotFoundError(pkg)

    monkeypatch.setattr("importlib.metadata.version", missing)
    with pytest.raises(RuntimeError, match="not installed") as e:
        dt.__datafusion_table_provider__()
    assert "QueryBuilder" in str(e.value)
    monkeypatch.setattr("importlib.metadata.version", lambda pkg: "54.0.0")
    with pytest.raises(UnsupportedError, match="QueryBuilder"):
        dt.__datafusion_table_provider__()


def test_timestamp_and_boolean_partition_filters_compare_as_values(tmp_path):
    """partitions()/file_uris() filters on a timestamp partition compare instants, not the log's
    text ('…T00:00:00.000000Z' never equalled a filter's '2020-01-01 00:00:00'); a boolean
    partition refuses a value that is no boolean (1 matched the false partition). Red team
    helper-49."""
    utc = dt_.timezone.utc
    ts = pa.array([dt_.datetime(2020, 1, 1), dt_.datetime(2020, 1, 1, 12), dt_.datetime(2019, 12, 31, 23)], pa.timestamp("us", tz="UTC"))
    write_deltalake(tmp_path / "ts", pa.table({"id": [1, 2, 3], "ts": ts}), partition_by=["ts"])
    t = DeltaTable(tmp_path / "ts")
    hours = lambda f: sorted(dt_.datetime.fromisoformat(p["ts"].replace("Z", "+00:00")).hour for p in t.partitions(f))  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert hours([("ts", "=", dt_.datetime(2020, 1, 1, tzinfo=utc))]) == [0]
        assert hours([("ts", "<", dt_.datetime(2020, 1, 1, 12, tzinfo=utc))]) == [0, 23]
        assert hours([("ts", ">", dt_.datetime(2020, 1, 1, tzinfo=utc))]) == [12]
        assert len(t.file_uris([("ts", ">", dt_.datetime(2020, 1, 1, tzinfo=utc))])) == 1
    write_deltalake(tmp_path / "b", pa.table({"id": [1, 2], "b": [True, False]}), partition_by=["b"])
    tb = DeltaTable(tmp_path / "b")
    assert [p["b"] for p in tb.partitions([("b", "=", True)])] == ["true"]
    for bad in ([("b", "=", 1)], [("b", "=", "yes")], [("b", "in", [0])]):
        with pytest.raises(DeltaError, match="as 'boolean'"):
            tb.partitions(bad)


def test_update_new_values_keep_a_negative_zero(tmp_path):
    """A Python -0.0 in new_values is stored as -0.0 (it went through a decimal, which has no
    negative zero, and 0.0 was stored). Red team helper-49."""
    import math

    write_deltalake(tmp_path, pa.table({"id": [1], "x": [1.5], "s": ["a"]}))
    dt = DeltaTable(tmp_path)
    dt.update(new_values={"x": -0.0, "s": -0.0})
    row = dt.to_pyarrow_table().to_pylist()[0]
    assert row["x"] == 0.0 and math.copysign(1.0, row["x"]) < 0
    assert row["s"] == "-0.0"
