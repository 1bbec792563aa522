"""``write_deltalake`` with deltalake's signature."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

import pyarrow as pa

from delta_rlc import _internal
from delta_rlc._operations import _source_stream, _unsupported
from delta_rlc.properties import BloomFilterProperties, ColumnProperties, WriterProperties, _writer
from delta_rlc.table import ConflictConfig, DeltaTable
from delta_rlc.transaction import CommitProperties, PostCommitHookProperties, _after_commit, _commit

__all__ = ["BloomFilterProperties", "ColumnProperties", "WriterProperties", "convert_to_deltalake", "write_deltalake"]


def _listed(names: List[str]) -> str:
    """A list of names as deltalake's messages print it (Rust's Debug: ``["a", "b"]``)."""
    return "[" + ", ".join(json.dumps(n, ensure_ascii=False) for n in names) + "]"


def _schema_of(data: Any) -> pa.Schema:
    schema = getattr(data, "schema", None)
    if isinstance(schema, pa.Schema):
        return schema
    return pa.RecordBatchReader.from_stream(data).schema  # PyCapsule sources


def write_deltalake(
    table_or_uri: Union[str, Any, DeltaTable],
    data: Any,
    *,
    partition_by: Optional[Union[List[str], str]] = None,
    mode: str = "error",
    name: Optional[str] = None,
    description: Optional[str] = None,
    configuration: Optional[Dict[str, Optional[str]]] = None,
    schema_mode: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    predicate: Optional[str] = None,
    target_file_size: Optional[int] = None,
    writer_properties: Any = None,
    commit_properties: Optional[CommitProperties] = None,
    post_commithook_properties: Optional[PostCommitHookProperties] = None,
    conflict: Optional[ConflictConfig] = None,
    retry_on_conflict: Optional[int] = None,
) -> Dict[str, Any]:
    """Writes Arrow data (pyarrow, polars, pandas, DuckDB results, anything with
    ``__arrow_c_stream__``) to a Delta table, creating it if it does not exist.

    ``mode``: ``"error"`` (fail if the table exists), ``"append"``, ``"overwrite"`` (with
    ``predicate``: replace only the rows it matches) or ``"ignore"`` (do nothing if it exists).
    Columns are matched by name; ``schema_mode="merge"`` adds the data's new columns to the table
    (and writes NULL for the columns it lacks), ``schema_mode="overwrite"`` (with
    ``mode="overwrite"``) replaces the schema. Returns the commit's metrics (``version``,
    ``num_commit_attempts``, ``reconcile_events``, …). ``retry_on_conflict=n`` (delta_rlc's own,
    off by default) re-runs a write that aborted on a true conflict (an overwrite or replace-where
    racing another writer) up to ``n`` more times at the latest version; the data is then held
    in memory so it can be written again.
    """
    _unsupported(target_file_size=target_file_size)
    writer = _writer(writer_properties)
    _commit(None, post_commithook_properties)
    if mode not in ("error", "append", "overwrite", "ignore"):
        raise ValueError(f"mode must be 'error', 'append', 'overwrite' or 'ignore', got {mode!r}")
    if schema_mode not in (None, "merge", "overwrite"):
        raise ValueError(f"schema_mode must be 'merge' or 'overwrite', got {schema_mode!r}")
    # schema_mode='overwrite' with another mode is refused by the write itself (InvalidInputError,
    # a DeltaError and a ValueError), as the Rust API refuses it.
    if predicate is not None and mode != "overwrite":
        raise ValueError("predicate (replaceWhere) needs mode='overwrite'")
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    cfg = conflict or ConflictConfig()
    data = _source_stream(data)
    if isinstance(table_or_uri, DeltaTable):
        table: Optional[DeltaTable] = table_or_uri
    else:
        uri = str(table_or_uri)
        table = DeltaTable(uri, storage_options=storage_options, conflict=cfg) if DeltaTable.is_deltatable(uri, storage_options) else None
        if table is None:
            data = pa.RecordBatchReader.from_stream(data)
            raw = _internal.RawTable.create(
                uri,
                data.schema,
                list(partition_by or []),
                {k: v for k, v in (configuration or {}).items() if v is not None},
                name,
                description,
                storage_options,
                cfg._to_dict(),
                data,
                _commit(commit_properties, post_commithook_properties),
                None,
                writer,
                False,
                mode,
            )
            # The table and its first rows are one commit (version 0), as deltalake writes them.
            table = DeltaTable._wrap(raw, storage_options, cfg)
            return {"version": table.version(), "num_commit_attempts": 1}
    if mode == "error":
        raise _internal.DeltaError(f"a table already exists at {table.table_uri} (mode='error')")
    if mode == "ignore":
        return {"version": None, "num_commit_attempts": 0}
    repartition = None
    if partition_by is not None and list(partition_by) != table.partition_columns():
        expected, got = table.partition_columns(), list(partition_by)
        if mode == "overwrite" and schema_mode == "overwrite" and predicate is None:
            # A full overwrite with the schema replaced lays every row out anew.
            repartition = got
        else:
            # deltalake's error, word for word (callers match on it).
            raise _internal.DeltaError(f"Generic error: Specified table partitioning does not match table partitioning: expected: {_listed(expected)}, got: {_listed(got)}. To change partition columns, use full table overwrite with schema overwrite and no replaceWhere predicate.")
    out = table._table.write(data, mode, predicate, _commit(commit_properties, post_commithook_properties, retry_on_conflict), table._version if isinstance(table_or_uri, DeltaTable) else None, schema_mode, writer, repartition)
    _after_commit(table._table.raw, post_commithook_properties)
    return table._moved(out)


def convert_to_deltalake(uri: Any, mode: str = "error", partition_by: Any = None, partition_strategy: Optional[str] = None, name: Optional[str] = None, description: Optional[str] = None, configuration: Any = None, storage_options: Optional[Dict[str, str]] = None, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
    """Converts the Parquet files under ``uri`` into a Delta table in place (Delta Spark's
    ``CONVERT TO DELTA``): version 0 adds every file where it lies, with its row count. Files
    below hive directories (``k=v``) need ``partition_by`` (a schema of the partition columns)
    and ``partition_strategy="hive"``; files whose schemas differ are refused.
    ``mode="ignore"`` leaves an existing table alone; ``"error"`` raises."""
    from delta_rlc._util import deprecate_positional_commit_args

    commit_properties, post_commithook_properties = deprecate_positional_commit_args("convert_to_deltalake", args, commit_properties, post_commithook_properties)
    if mode not in ("error", "ignore"):
        raise ValueError(f"mode must be 'error' or 'ignore', got {mode!r}")
    if partition_by is not None and partition_strategy is None:
        raise ValueError("Partition strategy has to be provided with partition_by.")
    if partition_strategy is not None and partition_strategy != "hive":
        raise ValueError("Currently only `hive` partition strategy is supported to be converted.")
    schema = None
    if partition_by is not None:
        schema = partition_by if isinstance(partition_by, pa.Schema) else pa.schema(partition_by.to_arrow() if not hasattr(partition_by, "to_pyarrow") else partition_by.to_pyarrow())
    uri = str(uri)
    if DeltaTable.is_deltatable(uri, storage_options):
        if mode == "ignore":
            return
        raise _internal.DeltaError(f"a Delta table already exists at {uri} (mode='error')")
    config = None if configuration is None else {str(k): str(v) for k, v in dict(configuration).items() if v is not None}
    raw = _internal.convert_to_delta(uri, schema, config, name, description, storage_options, _commit(commit_properties, post_commithook_properties))
    _after_commit(raw, post_commithook_properties)


def try_get_table_and_table_uri(table_or_uri: Any, storage_options: Optional[Dict[str, str]] = None) -> Any:
    """(the table at ``table_or_uri`` or None when there is none, its URI) — deltalake's helper."""
    from pathlib import Path

    if not isinstance(table_or_uri, (str, Path, DeltaTable)):
        raise ValueError("table_or_uri must be a str, Path or DeltaTable")
    if isinstance(table_or_uri, DeltaTable):
        return table_or_uri, table_or_uri.table_uri
    uri = str(table_or_uri)
    try:
        return DeltaTable(uri, storage_options=storage_options), uri
    except _internal.TableNotFoundError:
        return None, uri
