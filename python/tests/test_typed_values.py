"""Python values, deltalake filters, load_cdf and merge's except_cols reach the engine typed:
values as Arrow literals, columns by their exact names — never printed into SQL text. Each case
uses a value or a name that SQL text would have read otherwise, and checks the rows."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from delta_rlc import DeltaTable, write_deltalake

TRICKY = "x'' OR ''1''=''1"  # as SQL text with doubled quotes: a condition true for every row
QUOTED = "it's"


def _table(tmp_path, **kwargs) -> str:
    uri = str(tmp_path / "t")
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "s": pa.array([TRICKY, QUOTED, "c"]),
            "a.b": pa.array(["p", "q'", "r"]),
            "amount": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25"), None], pa.decimal128(10, 2)),
            "ts": pa.array([dt.datetime(2026, 1, 1, 12), dt.datetime(2026, 1, 2), None], pa.timestamp("us", tz="UTC")),
            "day": pa.array([dt.date(2026, 1, 1), dt.date(2026, 1, 2), dt.date(2026, 1, 3)]),
        }
    )
    write_deltalake(uri, data, **kwargs)
    return uri


def _ids(table: pa.Table) -> list:
    return sorted(table.column("id").to_pylist())


def test_filters_compare_values_never_sql_text(tmp_path):
    dt_ = DeltaTable(_table(tmp_path))
    assert _ids(dt_.to_pyarrow_table(filters=[("s", "=", TRICKY)])) == [1]
    assert _ids(dt_.to_pyarrow_table(filters=[("s", "=", "x' OR '1'='1")])) == []
    assert _ids(dt_.to_pyarrow_table(filters=[("s", "in", [QUOTED, "nope"])])) == [2]
    assert _ids(dt_.to_pyarrow_table(filters=[("a.b", "not in", ["q'"])])) == [1, 3]
    assert _ids(dt_.to_pyarrow_table(filters=[("amount", ">=", decimal.Decimal("2"))])) == [2]
    assert _ids(dt_.to_pyarrow_table(filters=[("amount", "=", None)])) == [3]
    assert _ids(dt_.to_pyarrow_table(filters=[("amount", "!=", None)])) == [1, 2]
    noon = dt.datetime(2026, 1, 1, 13, tzinfo=dt.timezone(dt.timedelta(hours=1)))  # 12:00 UTC
    assert _ids(dt_.to_pyarrow_table(filters=[("ts", "=", noon)])) == [1]
    assert _ids(dt_.to_pyarrow_table(filters=[("day", "<", dt.date(2026, 1, 3))])) == [1, 2]
    # OR of ANDs.
    assert _ids(dt_.to_pyarrow_table(filters=[[("id", "=", 1), ("s", "=", TRICKY)], [("id", ">", 2)]])) == [1, 3]
    with pytest.raises(ValueError, match="unknown operator"):
        dt_.to_pyarrow_table(filters=[("id", "like", 1)])
    with pytest.raises(TypeError, match="as values"):
        dt_.to_pyarrow_table(filters=[("id", "in", [1, "a"])])


def test_update_new_values_are_literals(tmp_path):
    uri = _table(tmp_path)
    dt_ = DeltaTable(uri)
    dt_.update(new_values={"s": TRICKY + "!", "amount": decimal.Decimal("9.99"), "a.b": None}, predicate="id = 2")
    rows = {r["id"]: r for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert rows[2]["s"] == TRICKY + "!" and rows[2]["amount"] == decimal.Decimal("9.99") and rows[2]["a.b"] is None
    assert rows[1]["s"] == TRICKY and rows[3]["s"] == "c"
    assert rows[1]["amount"] == decimal.Decimal("1.50")
    later = dt.datetime(2027, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)
    DeltaTable(uri).update(new_values={"ts": later}, predicate="id = 3")
    rows = {r["id"]: r for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert rows[3]["ts"] == later and rows[1]["ts"] == dt.datetime(2026, 1, 1, 12, tzinfo=dt.timezone.utc)


def test_optimize_partition_filters_are_typed(tmp_path):
    uri = str(tmp_path / "p")
    for part in ["a'b", "a'b", "c", "c"]:
        write_deltalake(uri, pa.table({"id": [1], "p": [part]}), partition_by=["p"], mode="append")
    dt_ = DeltaTable(uri)
    out = dt_.optimize.compact(partition_filters=[("p", "=", "a'b")])
    assert out["numFilesRemoved"] == 2 and out["numFilesAdded"] == 1
    assert DeltaTable(uri).to_pyarrow_table().num_rows == 4
    assert len(DeltaTable(uri).files([("p", "=", "c")])) == 2


def test_load_cdf_columns_and_predicate_through_the_library(tmp_path):
    uri = _table(tmp_path, configuration={"delta.enableChangeDataFeed": "true"})
    DeltaTable(uri).delete("id = 2")
    dt_ = DeltaTable(uri)
    rows = dt_.load_cdf(starting_version=0, columns=["id", "_change_type"], predicate="_change_type = 'delete'").read_all()
    assert rows.column_names == ["id", "_change_type"]
    assert rows.to_pylist() == [{"id": 2, "_change_type": "delete"}]
    assert dt_.load_cdf(starting_version=1).read_all().num_rows == 1
    assert dt_.load_cdf(starting_version=7, allow_out_of_range=True).read_all().num_rows == 0
    # A commit's time is Delta Spark's: its file's modification time (no in-commit timestamps).
    import os

    first = os.path.getmtime(os.path.join(uri, "_delta_log", "00000000000000000000.json"))
    since = dt.datetime.fromtimestamp(int(first * 1000) / 1000, tz=dt.timezone.utc)
    assert dt_.load_cdf(starting_timestamp=since).read_all().num_rows == 4
    with pytest.raises(ValueError, match="not both"):
        dt_.load_cdf(starting_version=0, starting_timestamp=since)


def test_merge_except_cols_names_source_columns(tmp_path):
    uri = _table(tmp_path)
    source = pa.table({"id": pa.array([1, 4], pa.int64()), "s": ["new", "four"], "a.b": ["src", "src4"]})
    out = (
        DeltaTable(uri)
        .merge(source, "t.id = src.id", source_alias="src", target_alias="t")
        .when_matched_update_all(except_cols=["amount", "ts", "day"])
        .when_not_matched_insert_all(except_cols=["amount", "ts", "day"])
        .execute()
    )
    # MERGE's file counts by Delta Spark's and deltalake's names: one file, read whole.
    assert (out["num_target_files_scanned"], out["num_target_files_skipped_during_scan"]) == (1, 0)
    assert out["num_target_rows_copied"] == out["numTargetRowsCopied"]
    assert out["num_target_files_added"] >= 1
    rows = {r["id"]: r for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert sorted(rows) == [1, 2, 3, 4]
    assert (rows[1]["s"], rows[1]["a.b"], rows[1]["amount"]) == ("new", "src", decimal.Decimal("1.50"))
    assert (rows[4]["s"], rows[4]["a.b"], rows[4]["amount"]) == ("four", "src4", None)
    assert rows[2]["s"] == QUOTED


def test_error_on_type_mismatch_false_stores_null_only_where_allowed(tmp_path):
    uri = str(tmp_path / "c")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64()), pa.field("w", pa.int32())])
    write_deltalake(uri, pa.table({"id": [1, 2], "v": [10, 20], "w": [1, 2]}, schema=schema))
    source = pa.table({"id": pa.array([1, 3], pa.int64()), "v": ["abc", "30"], "w": pa.array([2**40, 3], pa.int64())})

    def merge(**kw):
        return (
            DeltaTable(uri)
            .merge(source, "t.id = s.id", source_alias="s", target_alias="t", **kw)
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    # The default: the first value that does not cast fails the statement, nothing commits.
    with pytest.raises(ValueError, match="Cannot cast string 'abc'"):
        merge()
    assert DeltaTable(uri).version() == 0
    out = merge(error_on_type_mismatch=False)
    rows = {r["id"]: r for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    # 'abc' and 2**40 (too big for INT) became NULL; '30' and 3 kept their exact casts.
    assert rows == {1: {"id": 1, "v": None, "w": None}, 2: {"id": 2, "v": 20, "w": 2}, 3: {"id": 3, "v": 30, "w": 3}}
    assert out["num_target_rows_updated"] == 1 and out["num_target_rows_inserted"] == 1
    # A NOT NULL column still refuses a value it cannot hold.
    bad_id = pa.table({"id": ["x"], "v": pa.array([1], pa.int64()), "w": pa.array([1], pa.int32())})
    with pytest.raises(ValueError):
        DeltaTable(uri).merge(bad_id, "t.id = 5", source_alias="s", target_alias="t", error_on_type_mismatch=False).when_not_matched_insert_all().execute()
    # UPDATE alike.
    with pytest.raises(ValueError, match="cannot cast"):
        DeltaTable(uri).update({"w": "id * 10000000000"}, predicate="id = 2")
    DeltaTable(uri).update({"w": "id * 10000000000"}, predicate="id >= 2", error_on_type_mismatch=False)
    rows = {r["id"]: r["w"] for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert rows == {1: None, 2: None, 3: None}
    DeltaTable(uri).update({"w": "id"}, error_on_type_mismatch=False)
    assert sorted(r["w"] for r in DeltaTable(uri).to_pyarrow_table().to_pylist()) == [1, 2, 3]


def test_null_on_cast_failure_never_reconciles_a_widening_of_the_assigned_column(tmp_path):
    """The twin of the rule in design.md's type-widening row: a MERGE that stored NULL for a
    value its INT column could not hold aborts when a concurrent commit widened that column to
    BIGINT (re-run after it, the value would fit); the same MERGE beside a widening of a column
    it does not touch commits."""
    import delta_rlc
    from delta_rlc.exceptions import CommitFailedError

    for widened, aborts in (("w", True), ("z", False)):
        uri = str(tmp_path / f"wide-{widened}")
        schema = pa.schema([pa.field("id", pa.int64()), pa.field("w", pa.int32()), pa.field("z", pa.int32())])
        write_deltalake(uri, pa.table({"id": [1, 2], "w": [1, 2], "z": [5, 6]}, schema=schema), configuration={"delta.enableTypeWidening": "true"})
        loser = DeltaTable(uri)  # pinned at version 0
        delta_rlc.sql(f"ALTER TABLE '{uri}' ALTER COLUMN {widened} TYPE BIGINT")
        source = pa.table({"id": pa.array([1], pa.int64()), "w": pa.array([2**40], pa.int64())})
        merge = loser.merge(source, "t.id = s.id", source_alias="s", target_alias="t", error_on_type_mismatch=False).when_matched_update({"w": "s.w"})
        if aborts:
            with pytest.raises(CommitFailedError):
                merge.execute()
            rows = {r["id"]: r["w"] for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
            assert rows == {1: 1, 2: 2}
        else:
            merge.execute()
            rows = {r["id"]: (r["w"], r["z"]) for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
            assert rows == {1: (None, 5), 2: (2, 6)}


def test_to_pyarrow_dataset_is_lazy_where_the_files_are_the_rows(tmp_path):
    import pyarrow.dataset as ds

    uri = str(tmp_path / "lazy")
    for part, ids in (("a b", [1, 2]), ("c'd", [3]), (None, [4])):
        write_deltalake(uri, pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([part] * len(ids), pa.string()), "day": [dt.date(2026, 1, ids[0])] * len(ids)}), partition_by=["p", "day"], mode="append", configuration={"delta.enableDeletionVectors": "true"})
    dataset = DeltaTable(uri).to_pyarrow_dataset()
    assert isinstance(dataset, ds.FileSystemDataset)
    assert len(dataset.files) == 3
    rows = sorted(dataset.to_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": i, "p": p, "day": dt.date(2026, 1, d)} for i, p, d in ((1, "a b", 1), (2, "a b", 1), (3, "c'd", 3), (4, None, 4))]
    assert sorted(dataset.to_table(filter=ds.field("p") == "c'd").column("id").to_pylist()) == [3]
    assert DeltaTable(uri).to_pyarrow_dataset(partitions=[("p", "=", "a b")]).count_rows() == 2
    # The twin: once a deletion vector hides a row, the files are not the rows: read with it applied.
    DeltaTable(uri).delete("id = 1")
    dataset = DeltaTable(uri).to_pyarrow_dataset()
    assert not isinstance(dataset, ds.FileSystemDataset)
    assert sorted(dataset.to_table().column("id").to_pylist()) == [2, 3, 4]


def test_review_findings_floats_empty_conjunctions_nested_not_null(tmp_path):
    # A float is the decimal its repr spells (Spark's reading of 1.005), not the binary double.
    uri = _table(tmp_path)
    DeltaTable(uri).update(new_values={"amount": 1.005}, predicate="id = 1")
    rows = {r["id"]: r["amount"] for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert rows[1] == decimal.Decimal("1.01")
    assert _ids(DeltaTable(uri).to_pyarrow_table(filters=[("amount", "in", [2.25, 1])])) == [2]
    # An empty AND inside an OR is TRUE: every row.
    assert _ids(DeltaTable(uri).to_pyarrow_table(filters=[[("id", "=", 1)], []])) == [1, 2, 3]
    # A NULL inside a NOT NULL child is refused even with error_on_type_mismatch=False (the
    # struct is not stored as NULL).
    nested = str(tmp_path / "nested")
    addr = pa.struct([pa.field("city", pa.string(), nullable=False), pa.field("zip", pa.string())])
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("addr", addr)])
    write_deltalake(nested, pa.table({"id": [1], "addr": pa.array([{"city": "x", "zip": "1"}], addr)}, schema=schema))
    loose = pa.struct([pa.field("city", pa.string()), pa.field("zip", pa.string())])
    source = pa.table({"id": [1], "addr": pa.array([{"city": None, "zip": "2"}], loose)})
    with pytest.raises(ValueError, match="NOT NULL"):
        DeltaTable(nested).merge(source, "t.id = s.id", source_alias="s", target_alias="t", error_on_type_mismatch=False).when_matched_update_all().execute()
    assert DeltaTable(nested).to_pyarrow_table().to_pylist() == [{"id": 1, "addr": {"city": "x", "zip": "1"}}]


def test_lazy_dataset_reads_an_empty_partition_value_as_null(tmp_path):
    import pyarrow.dataset as ds

    uri = str(tmp_path / "e")
    write_deltalake(uri, pa.table({"id": [1, 2], "p": ["", "a"]}), partition_by=["p"])
    dataset = DeltaTable(uri).to_pyarrow_dataset()
    assert isinstance(dataset, ds.FileSystemDataset)
    lazy = sorted(dataset.to_table().to_pylist(), key=lambda r: r["id"])
    assert lazy == sorted(DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert lazy[0]["p"] is None
