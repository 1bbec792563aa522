"""deltalake 1.6's API beyond the basics, on delta_rlc: schema types, create, partitions, count,
add actions, deletion vectors, alter, restore, repair, checkpoints, app transactions, history,
QueryBuilder — each checked by outcome (rows, versions, metadata), with the refusals that must
not be silent. deltalake reads back what delta_rlc wrote where it matters."""

from __future__ import annotations

import json
import os
import warnings

import deltalake
import pyarrow as pa
import pytest

import delta_rlc
from delta_rlc import CommitProperties, DeltaTable, QueryBuilder, Transaction, write_deltalake
from delta_rlc.exceptions import ConcurrentTransactionError, DeltaError, UnsupportedError
from delta_rlc.schema import ArrayType, Field, MapType, PrimitiveType, Schema, StructType


def ids(dt: DeltaTable):
    return sorted(pa.table(dt.scan(columns=["id"]).read_all())["id"].to_pylist())


def every_kind_schema() -> Schema:
    return Schema(
        [
            Field("id", "long", nullable=False),
            Field("amount", PrimitiveType("decimal(10,2)")),
            Field("tags", ArrayType("string", contains_null=False)),
            Field("attrs", MapType("string", "integer")),
            Field("point", StructType([Field("x", "double"), Field("y", "double")])),
            Field("ts", "timestamp_ntz"),
        ]
    )


def test_schema_types_round_trip_json_and_arrow():
    s = every_kind_schema()
    back = Schema.from_json(s.to_json())
    assert back == s
    assert json.loads(s.to_json())["fields"][2]["type"] == {"type": "array", "elementType": "string", "containsNull": False}
    arrow = s.to_pyarrow()
    assert arrow.field("amount").type == pa.decimal128(10, 2)
    assert arrow.field("ts").type == pa.timestamp("us")
    assert Schema.from_arrow(arrow) == every_kind_schema()
    with pytest.raises(ValueError):
        PrimitiveType("decimal(39,2)")
    with pytest.raises(ValueError):
        PrimitiveType("varchar")
    # deltalake's own types agree on the JSON.
    assert deltalake.schema.Schema.from_json(s.to_json()).to_json() == s.to_json()


def test_create_partitions_count_and_add_actions(tmp_path):
    uri = str(tmp_path / "t")
    schema = Schema([Field("id", "long"), Field("p", "string"), Field("n", "integer")])
    dt = DeltaTable.create(uri, schema, partition_by="p", name="events", configuration={"delta.appendOnly": "false", "delta.enableDeletionVectors": "true"})
    assert dt.version() == 0 and dt.schema() == schema and dt.metadata().name == "events"
    with pytest.raises(DeltaError):
        DeltaTable.create(uri, schema)
    assert DeltaTable.create(uri, schema, mode="ignore").version() == 0
    # deltalake's documented "append": an error when the table exists; nothing commits.
    with pytest.raises(DeltaError, match="already exists"):
        DeltaTable.create(uri, schema, mode="append")
    assert DeltaTable(uri).version() == 0
    write_deltalake(uri, pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"], "n": [1, 2, None]}), mode="append")
    dt = DeltaTable(uri)
    parts = dt.partitions()
    assert sorted(p["p"] for p in parts) == ["a", "b"]
    assert dt.partitions([("p", "=", "b")]) == [{"p": "b"}]
    assert len(dt.file_uris([("p", "in", ["a"])])) == 1
    assert dt.count() == 3
    adds = pa.table(dt.get_add_actions(flatten=True))
    assert sorted(adds["partition.p"].to_pylist()) == ["a", "b"]
    assert sorted(adds["num_records"].to_pylist()) == [1, 2]
    assert sorted(adds["max.id"].to_pylist()) == [2, 3]
    nested = pa.table(dt.get_add_actions())
    assert set(nested.column_names) >= {"path", "size_bytes", "modification_time", "num_records", "null_count", "min", "max", "partition"}
    dt.delete("id = 1")
    assert dt.count() == 2
    dvs = pa.table(dt.deletion_vectors()).to_pylist()
    assert len(dvs) == 1 and dvs[0]["selection_vector"].count(False) == 1
    # deltalake reads the table delta_rlc wrote.
    q = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute("SELECT id FROM t ORDER BY id")
    assert pa.table(q)["id"].to_pylist() == [2, 3]


def test_alter_changes_commit_and_keep_their_rules(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1, 2], "v": ["a", "b"]}))
    dt = DeltaTable(uri)
    dt.alter.add_constraint({"id_pos": "id > 0"}, commit_properties=CommitProperties(custom_metadata={"userName": "ann"}))
    assert dt.metadata().configuration["delta.constraints.id_pos"] == "id > 0"
    assert dt.history(1)[0]["userName"] == "ann"
    with pytest.raises(DeltaError):
        write_deltalake(dt, pa.table({"id": [-1], "v": ["x"]}), mode="append")
    with pytest.raises(DeltaError):
        dt.alter.add_constraint({"big": "id > 1"})  # row 1 violates it: nothing committed
    v = dt.version()
    dt.alter.drop_constraint("id_pos")
    dt.alter.drop_constraint("id_pos", raise_if_not_exists=False)
    with pytest.raises(DeltaError):
        dt.alter.drop_constraint("id_pos")
    dt.alter.add_columns([Field("w", "integer")])
    assert [f.name for f in dt.schema().fields] == ["id", "v", "w"]
    dt.alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    # A legacy feature on a legacy table: writer version 4, as deltalake and Delta Spark raise it.
    assert (dt.protocol().min_writer_version, dt.protocol().writer_features) == (4, None)
    dt.alter.set_table_name("orders")
    dt.alter.set_table_description("all orders")
    m = dt.metadata()
    assert (m.name, m.description) == ("orders", "all orders")
    dt.alter.add_feature(delta_rlc.TableFeatures.V2Checkpoint, allow_protocol_versions_increase=True)
    assert "v2Checkpoint" in dt.protocol().writer_features
    # Iceberg compatibility: supported (with column mapping, which it requires), never turned on.
    dt.alter.add_feature(delta_rlc.TableFeatures.IcebergCompatV1, allow_protocol_versions_increase=True)
    assert {"icebergCompatV1", "columnMapping"} <= set(dt.protocol().writer_features)
    with pytest.raises(DeltaError, match="enableIcebergCompatV1"):
        dt.alter.set_table_properties({"delta.enableIcebergCompatV1": "true"})
    assert dt.version() == v + 7
    assert ids(dt) == [1, 2]
    # Row tracking (with domainMetadata, which it needs): new files get base row ids from then on.
    dt.alter.add_feature(delta_rlc.TableFeatures.RowTracking, allow_protocol_versions_increase=True)
    assert {"rowTracking", "domainMetadata"} <= set(dt.protocol().writer_features)
    write_deltalake(dt, pa.table({"id": [3], "v": ["c"], "w": pa.array([1], pa.int32())}), mode="append")
    log = sorted((tmp_path / "t" / "_delta_log").glob("*.json"))[-1]
    adds = [json.loads(l)["add"] for l in log.read_text().splitlines() if '"add"' in l]
    assert len(adds) == 1 and adds[0]["baseRowId"] >= 0, adds
    # Column metadata: a comment and user keys; the protocol's delta.* keys are refused.
    dt.alter.set_column_metadata("v", {"comment": "a letter", "owner": "ops"})
    assert {f.name: f.metadata for f in dt.schema().fields}["v"] == {"comment": "a letter", "owner": "ops"}
    for bad in [("v", {"delta.generationExpression": "1"}), ("nope", {"comment": "x"})]:
        with pytest.raises(DeltaError):
            dt.alter.set_column_metadata(*bad)
    # Adding a feature the table has is recorded (ADD FEATURE), as deltalake and Spark record it.
    before = dt.version()
    dt.alter.add_feature(delta_rlc.TableFeatures.RowTracking)
    assert dt.version() == before + 1
    assert dt.history(1)[0]["operation"] == "ADD FEATURE"
    assert ids(dt) == [1, 2, 3]


def test_protocol_versions_requested_as_properties_are_not_stored(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1]}), configuration={"delta.enableDeletionVectors": "false", "delta.minWriterVersion": "4"})
    dt = DeltaTable(uri)
    assert (dt.protocol().min_reader_version, dt.protocol().min_writer_version) == (1, 4)
    assert "delta.minWriterVersion" not in dt.metadata().configuration
    dt.alter.set_table_properties({"delta.minWriterVersion": "7"})
    p = dt.protocol()
    assert p.min_writer_version == 7 and "checkConstraints" in p.writer_features
    with pytest.raises(DeltaError):
        dt.alter.set_table_properties({"delta.minWriterVersion": "8"})


def test_restore_repair_checkpoint_and_cleanup(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1, 2, 3]}))
    dt = DeltaTable(uri)
    dt.delete("id = 2")
    write_deltalake(dt, pa.table({"id": [4]}), mode="append")
    out = dt.restore(0)
    assert out["num_restored_file"] == 1 and ids(dt) == [1, 2, 3]
    assert DeltaTable(uri).history(1)[0]["operation"] == "RESTORE"
    dt.create_checkpoint()
    assert os.path.exists(os.path.join(uri, "_delta_log", f"{dt.version():020}.checkpoint.parquet"))
    dt.cleanup_metadata()  # nothing is old enough
    assert DeltaTable(uri, version=0).count() == 3
    # A data file deleted outside Delta: repair lists it (dry run), then removes it.
    write_deltalake(dt, pa.table({"id": [9]}), mode="append")
    lost = [f for f in dt.files() if "9" not in str(dt.version())][-1]
    newest = max(dt.files(), key=lambda f: os.path.getmtime(os.path.join(uri, f)))
    os.remove(os.path.join(uri, newest))
    before = dt.version()
    dry = dt.repair(dry_run=True)
    assert dry["files_removed"] == [newest] and dt.version() == before
    done = dt.repair()
    assert done["files_removed"] == [newest] and dt.version() == before + 1
    assert ids(dt) == [1, 2, 3]
    assert lost is not None


def test_app_transactions_make_writes_idempotent(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1]}), commit_properties=CommitProperties(app_transactions=[Transaction("job", 1)]))
    dt = DeltaTable(uri)
    assert dt.transaction_version("job") == 1 and dt.transaction_version("other") is None
    a, b = DeltaTable(uri), DeltaTable(uri)
    write_deltalake(a, pa.table({"id": [2]}), mode="append", commit_properties=CommitProperties(app_transactions=[Transaction("job", 2)]))
    with pytest.raises(ConcurrentTransactionError):
        write_deltalake(b, pa.table({"id": [3]}), mode="append", commit_properties=CommitProperties(app_transactions=[Transaction("job", 2)]))
    assert ids(DeltaTable(uri)) == [1, 2]
    assert deltalake.DeltaTable(uri).transaction_version("job") == 2


def test_query_builder_reads_loaded_versions_and_only_queries(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1, 2], "s": ["x", "y"]}))
    old = DeltaTable(uri)
    write_deltalake(uri, pa.table({"id": [3], "s": ["z"]}), mode="append")
    new = DeltaTable(uri)
    qb = QueryBuilder().register("old", old).register("new", new)
    got = pa.table(qb.execute("SELECT (SELECT count(*) FROM old) AS o, (SELECT count(*) FROM new) AS n"))
    assert got.to_pylist() == [{"o": 2, "n": 3}]
    strings = pa.table(qb.execute("SELECT s FROM new ORDER BY s"))
    assert strings.schema.field("s").type == pa.string_view()  # deltalake's reads give views
    with pytest.raises(DeltaError):
        qb.execute("DELETE FROM new WHERE id = 1")
    assert DeltaTable(uri).count() == 3


def test_query_builder_keeps_external_tables_and_views_it_defined(tmp_path):
    """deltalake's QueryBuilder keeps what its statements define for its later queries: an
    external table over CSV files and a view (nothing written); the definitions of one builder
    are not another's."""
    csv = tmp_path / "csv_data"
    csv.write_text("id,name\n1,a\n2,b\n3,c\n")
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [2, 3, 4]}))
    qb = QueryBuilder().register("t", DeltaTable(uri))
    assert pa.table(qb.execute(f"CREATE EXTERNAL TABLE raw_csv STORED AS CSV LOCATION '{csv}'")).num_rows == 0
    qb.execute("CREATE VIEW joined AS SELECT r.name FROM raw_csv r JOIN t ON r.id = t.id")
    got = pa.table(qb.execute("SELECT name FROM joined ORDER BY name"))
    assert got.column("name").to_pylist() == ["b", "c"]
    write_deltalake(str(tmp_path / "copy"), qb.execute("SELECT * FROM raw_csv"), mode="overwrite")
    assert DeltaTable(str(tmp_path / "copy")).count() == 3
    with pytest.raises(DeltaError):
        QueryBuilder().execute("SELECT * FROM raw_csv")
    assert sorted(os.listdir(tmp_path)) == ["copy", "csv_data", "t"]


def test_writes_match_struct_fields_by_name_and_refuse_narrower_decimals(tmp_path):
    """write_deltalake matches a struct's fields by name (a struct with another field set is
    refused, never dropped or matched by position), and refuses a DECIMAL type narrower than the
    column's before reading a value, as deltalake and Delta Spark do."""
    from decimal import Decimal

    uri = str(tmp_path / "t")
    st = pa.struct([("a", pa.int64()), ("b", pa.int64())])
    write_deltalake(uri, pa.table({"s": pa.array([{"a": 1, "b": 2}], st), "d": pa.array([Decimal("10.1")], pa.decimal128(4, 1))}))
    swapped = pa.struct([("b", pa.int64()), ("a", pa.int64())])
    write_deltalake(uri, pa.table({"s": pa.array([{"b": 3, "a": 4}], swapped), "d": pa.array([Decimal("1.5")], pa.decimal128(3, 1))}), mode="append")
    rows = sorted((r["s"]["a"], r["s"]["b"]) for r in DeltaTable(uri).to_pyarrow_table().to_pylist())
    assert rows == [(1, 2), (4, 3)]
    other = pa.struct([("a", pa.int64()), ("c", pa.int64())])
    with pytest.raises(DeltaError):
        write_deltalake(uri, pa.table({"s": pa.array([{"a": 5, "c": 6}], other), "d": pa.array([Decimal("1.5")], pa.decimal128(3, 1))}), mode="append")
    with pytest.raises(delta_rlc.SchemaMismatchError, match=r"Cannot cast field d from Decimal128\(5, 1\) to Decimal128\(4, 1\)"):
        write_deltalake(uri, pa.table({"s": pa.array([{"a": 5, "b": 6}], st), "d": pa.array([Decimal("10.1")], pa.decimal128(5, 1))}), mode="append")
    assert DeltaTable(uri).count() == 2


def test_writer_properties_shape_the_files(tmp_path):
    import pyarrow.parquet as pq

    uri = str(tmp_path / "t")
    props = delta_rlc.WriterProperties(compression="ZSTD", compression_level=3, max_row_group_size=1000, column_properties={"v": delta_rlc.ColumnProperties(dictionary_enabled=False)})
    write_deltalake(uri, pa.table({"id": list(range(2500)), "v": ["x"] * 2500}), writer_properties=props)
    dt = DeltaTable(uri)
    meta = pq.ParquetFile(os.path.join(uri, dt.files()[0])).metadata
    assert meta.num_row_groups == 3
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert "PLAIN_DICTIONARY" not in meta.row_group(0).column(1).encodings and "RLE_DICTIONARY" not in meta.row_group(0).column(1).encodings
    # DML rewrites and OPTIMIZE take them too; a codec this build lacks or an unknown column is
    # refused before anything is written.
    dt.update({"v": "'y'"}, predicate="id < 10", writer_properties=delta_rlc.WriterProperties(compression="SNAPPY"))
    with pytest.raises(UnsupportedError):
        write_deltalake(uri, pa.table({"id": [1], "v": ["z"]}), mode="append", writer_properties=delta_rlc.WriterProperties(compression="LZO"))
    with pytest.raises(DeltaError):
        write_deltalake(uri, pa.table({"id": [1], "v": ["z"]}), mode="append", writer_properties=delta_rlc.WriterProperties(column_properties={"nope": delta_rlc.ColumnProperties(dictionary_enabled=False)}))
    assert DeltaTable(uri).count() == 2500


def test_options_that_cannot_be_honoured_are_refused(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1]}))
    dt = DeltaTable(uri)
    with pytest.raises(UnsupportedError):
        dt.restore(0, protocol_downgrade_allowed=True)
    with pytest.raises(DeltaError, match="must be below the ending version"):
        dt.compact_logs(0, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dt.delete("id = 1", None, None, CommitProperties(custom_metadata={"k": "v"}))
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    assert dt.history(1)[0]["k"] == "v"
    # Files written elsewhere, with caller-given statistics, are not committed unchecked.
    from delta_rlc.transaction import AddAction, RemoveAction

    before = dt.version()
    with pytest.raises(UnsupportedError, match="create_write_transaction"):
        dt.create_write_transaction([AddAction("x.parquet", 1, {}, 0, True, "{}"), RemoveAction("y.parquet", True, 0)], "append", dt.schema())
    assert DeltaTable(uri).version() == before


def test_writes_stream_generators_and_readers(tmp_path):
    uri = str(tmp_path / "t")

    def batches(n):
        for i in range(n):
            yield pa.record_batch({"id": pa.array(range(i * 1000, (i + 1) * 1000), pa.int64())})

    write_deltalake(uri, batches(50))
    assert DeltaTable(uri).count() == 50_000
    schema = pa.schema([("id", pa.int64())])
    write_deltalake(uri, pa.RecordBatchReader.from_batches(schema, batches(5)), mode="append")
    assert DeltaTable(uri).count() == 55_000
    # A stream whose schema does not fit the table writes nothing.
    bad = pa.RecordBatchReader.from_batches(pa.schema([("x", pa.int64())]), iter([pa.record_batch({"x": [1]})]))
    with pytest.raises(delta_rlc.SchemaMismatchError):
        write_deltalake(uri, bad, mode="append")

    def failing():
        yield pa.record_batch({"id": pa.array([1], pa.int64())})
        raise RuntimeError("the source broke")

    before = DeltaTable(uri).version()
    with pytest.raises(Exception):
        write_deltalake(uri, failing(), mode="append")
    assert DeltaTable(uri).version() == before and DeltaTable(uri).count() == 55_000


def test_column_mapping_tables_list_partitions_and_stats_by_logical_name(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"]}), partition_by=["p"], configuration={"delta.columnMapping.mode": "name"})
    dt = DeltaTable(uri)
    assert sorted(x["p"] for x in dt.partitions()) == ["a", "b"]
    assert len(dt.files([("p", "=", "a")])) == 1
    adds = pa.table(dt.get_add_actions(flatten=True))
    assert sorted(adds["partition.p"].to_pylist()) == ["a", "b"] and sorted(adds["max.id"].to_pylist()) == [2, 3]
    # A schema copied from this table makes a new table with fresh column ids.
    other = str(tmp_path / "u")
    DeltaTable.create(other, dt.schema(), configuration={"delta.columnMapping.mode": "name"})
    u = DeltaTable(other)
    u.alter.add_columns([Field("w", "integer")])
    ids_ = [f.metadata["delta.columnMapping.id"] for f in u.schema().fields]
    assert len(set(ids_)) == 3


def test_legacy_writer_version_then_column_mapping_raises_the_reader(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1]}), configuration={"delta.enableDeletionVectors": "false", "delta.minWriterVersion": "5"})
    dt = DeltaTable(uri)
    assert (dt.protocol().min_reader_version, dt.protocol().min_writer_version) == (1, 5)
    dt.alter.set_table_properties({"delta.columnMapping.mode": "name"})
    assert dt.protocol().min_reader_version >= 2


def test_writer_properties_encoding_must_fit_the_column(tmp_path):
    uri = str(tmp_path / "t")
    data = pa.table({"id": [1, 2], "f": [0.5, 1.5]})
    bad = delta_rlc.WriterProperties(column_properties={"f": delta_rlc.ColumnProperties(dictionary_enabled=False, encoding="DELTA_BINARY_PACKED")})
    with pytest.raises(DeltaError):
        write_deltalake(uri, data, writer_properties=bad)
    with pytest.raises(UnsupportedError):
        write_deltalake(uri, data, writer_properties=delta_rlc.WriterProperties(default_column_properties=delta_rlc.ColumnProperties(dictionary_enabled=False, encoding="DELTA_BINARY_PACKED")))
    with pytest.raises(ValueError):
        delta_rlc.WriterProperties(compression_level=3)
    good = delta_rlc.WriterProperties(column_properties={"id": delta_rlc.ColumnProperties(dictionary_enabled=False, encoding="DELTA_BINARY_PACKED")})
    write_deltalake(uri, data, writer_properties=good)
    assert DeltaTable(uri).count() == 2


def test_suite_findings_positional_types_update_messages_and_optimize_metrics(tmp_path):
    # Found by deltalake's own suite: its runtime takes these arguments positionally.
    f = Field("x", ArrayType(PrimitiveType("long"), False), False, {"k": "v"})
    assert (f.nullable, f.type.contains_null, f.metadata) == (False, False, {"k": "v"})
    assert MapType(PrimitiveType("date"), PrimitiveType("long"), False).value_contains_null is False
    data = pa.table({"id": pa.array(range(8), pa.int64()), "p": pa.array(["a", "b"] * 4)})
    write_deltalake(tmp_path, data, partition_by=["p"])
    write_deltalake(tmp_path, data, mode="append")
    dt = DeltaTable(tmp_path)
    # deltalake's messages, word for word; nothing is committed.
    for kwargs, message in [
        ({}, "Either updates or new_values need to be passed to update the table."),
        ({"updates": {}, "new_values": {}}, "Passing updates and new_values at same time is not allowed, pick one."),
        ({"new_values": {"id": {}}}, "Invalid datatype provided in new_values, only int, float, bool, list, str or datetime or accepted."),
    ]:
        with pytest.raises(Exception) as e:
            dt.update(**kwargs)
        assert str(e.value) == message
    assert dt.version() == 1
    # A target beyond a long is refused by the operation (so from SQL and Rust too), as ValueError.
    with pytest.raises(ValueError, match="target_file_size must be between 1 and"):
        dt.optimize.compact(target_size=2**63)
    assert DeltaTable(tmp_path).version() == 1
    # Spark's partitionsOptimized: both partitions had two files each.
    metrics = dt.optimize.compact()
    assert (metrics["partitionsOptimized"], metrics["numFilesRemoved"], metrics["numFilesAdded"]) == (2, 4, 2)
    assert ids(DeltaTable(tmp_path)) == sorted(list(range(8)) * 2)


def test_create_overwrite_replaces_the_table_in_one_commit(tmp_path):
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by="p")
    old = DeltaTable(uri)
    schema = Schema([Field("k", "long"), Field("note", "string")])
    dt = DeltaTable.create(uri, schema, mode="overwrite", partition_by="note", name="renewed")
    assert dt.version() == 1 and dt.schema() == schema and dt.metadata().partition_columns == ["note"]
    assert dt.metadata().name == "renewed" and dt.metadata().id == old.metadata().id
    assert dt.to_pyarrow_table().num_rows == 0 and dt.history(1)[0]["operation"] == "CREATE OR REPLACE TABLE"
    # The old version still reads its rows.
    assert sorted(DeltaTable(uri, version=0).to_pyarrow_table().column("id").to_pylist()) == [1, 2]


def test_new_tables_get_deltalakes_protocol_and_configuration(tmp_path):
    # deltalake's API creates a table with what its properties and schema need and nothing more:
    # no deletion vectors unless asked for, so readers without them keep reading the table. SQL
    # and the Rust library keep this engine's default (deletion vectors on).
    write_deltalake(tmp_path / "w", pa.table({"id": [1, 2]}))
    dt = DeltaTable(tmp_path / "w")
    p = dt.protocol()
    assert (p.min_reader_version, p.min_writer_version, p.reader_features, p.writer_features) == (1, 2, None, None)
    assert dt.metadata().configuration == {}
    # DML on it rewrites the file (no DV), and the rows are right.
    dt.delete("id = 1")
    assert pa.table(dt.to_pyarrow_table())["id"].to_pylist() == [2]
    assert pa.table(dt.deletion_vectors()).num_rows == 0
    created = DeltaTable.create(tmp_path / "c", Schema([Field("id", "long")]), configuration={"delta.enableDeletionVectors": "true"})
    assert "deletionVectors" in (created.protocol().reader_features or [])
    from delta_rlc import sql
    sql(f"CREATE TABLE '{tmp_path / 's'}' (id BIGINT)")
    assert DeltaTable(tmp_path / "s").metadata().configuration == {"delta.enableDeletionVectors": "true"}


def test_opendal_fs_locations_are_the_directory_under_their_root(tmp_path):
    # deltalake's `fs://` and `opendal+fs://` (OpenDAL's local file system): the path under
    # `opendal.root`. The table is the plain local directory, which any reader opens by path.
    options = {"opendal.root": str(tmp_path)}
    data = pa.table({"id": pa.array([1, 2], pa.int32())})
    write_deltalake("fs://localhost/t", data, storage_options=options)
    write_deltalake("opendal+fs://localhost/t", data, mode="append", storage_options=options)
    assert DeltaTable(str(tmp_path / "t")).version() == 1
    assert sorted(DeltaTable("fs://x/t", storage_options=options).to_pyarrow_table()["id"].to_pylist()) == [1, 1, 2, 2]
    assert deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table().num_rows == 4
    # Another OpenDAL service or option would open another store than the one named: refused.
    with pytest.raises(DeltaError, match='OpenDAL service "s3" is not supported'):
        DeltaTable("opendal+s3://bucket/t", storage_options=options)
    with pytest.raises(DeltaError, match="opendal.endpoint"):
        DeltaTable("fs://x/t", storage_options={**options, "opendal.endpoint": "e"})
    with pytest.raises(DeltaError, match="leaves the OpenDAL root"):
        write_deltalake("fs://x/../escape", data, storage_options=options)
    assert not (tmp_path.parent / "escape").exists()
