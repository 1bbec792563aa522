"""``DeltaTable`` with deltalake's API, committing through row-level concurrency."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

import pyarrow as pa

from delta_rlc import _internal
from delta_rlc._sql import FilterType, filters_to_sql, literal, quote_ident


@dataclass
class CommitProperties:
    """Options of one commit, as in deltalake.

    ``custom_metadata`` is written into the commit's ``commitInfo``; ``max_commit_retries`` bounds
    how many lost races the commit reconciles before giving up. ``app_transactions`` (idempotent
    writes) is not supported yet and raises ``UnsupportedError``.
    """

    custom_metadata: Optional[Dict[str, str]] = None
    max_commit_retries: Optional[int] = None
    app_transactions: Optional[List[Any]] = None

    def _to_dict(self) -> Dict[str, Any]:
        if self.app_transactions:
            raise _internal.UnsupportedError("CommitProperties.app_transactions is not supported yet")
        return {"custom_metadata": self.custom_metadata, "max_commit_retries": self.max_commit_retries}


@dataclass
class ConflictConfig:
    """How commits are checked against concurrent ones.

    ``legacy=True`` reproduces open-source Delta exactly (abort whenever a concurrent commit might
    overlap); ``isolation`` is ``"Serializable"``, ``"WriteSerializable"`` (the default) or
    ``"SnapshotIsolation"``.
    """

    legacy: bool = False
    isolation: Optional[str] = None
    max_commit_attempts: Optional[int] = None

    def _to_dict(self) -> Dict[str, Any]:
        return {"legacy": self.legacy, "isolation": self.isolation, "max_commit_attempts": self.max_commit_attempts}


def _commit(props: Optional[CommitProperties]) -> Optional[Dict[str, Any]]:
    return props._to_dict() if props is not None else None


def _unsupported(**options: Any) -> None:
    """deltalake options this package does not implement: accepted when left at their default
    (so scripts run unchanged), refused when set."""
    for name, value in options.items():
        if value is not None and value is not False:
            raise _internal.UnsupportedError(f"{name}={value!r} is not supported by delta_rlc")


@dataclass
class Metadata:
    id: str
    name: Optional[str]
    description: Optional[str]
    partition_columns: List[str]
    created_time: Optional[int]
    configuration: Dict[str, str]


@dataclass
class ProtocolVersions:
    min_reader_version: int
    min_writer_version: int
    writer_features: Optional[List[str]] = None
    reader_features: Optional[List[str]] = None


@dataclass
class Field:
    name: str
    type: pa.DataType
    nullable: bool


@dataclass
class Schema:
    """The table schema; ``to_pyarrow()`` (or ``to_arrow()``) gives the Arrow schema."""

    _arrow: pa.Schema
    fields: List[Field] = field(default_factory=list)

    def to_pyarrow(self) -> pa.Schema:
        return self._arrow

    def to_arrow(self) -> pa.Schema:
        return self._arrow

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Schema):
            return self._arrow == other._arrow
        if isinstance(other, pa.Schema):
            return self._arrow == other
        return NotImplemented


def _timestamp_ms(value: Union[str, _dt.datetime]) -> int:
    if isinstance(value, str):
        value = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return int(value.timestamp() * 1000)


class DeltaTable:
    """A Delta table, pinned to a version (the latest when opened, or ``version``).

    As in deltalake, writes through this object read its pinned version and commit on top of
    every later version, after which the object is at the version they committed. A commit
    aborts (``CommitFailedError``) only when a later commit truly conflicts with what it read and
    changed; otherwise it is reconciled (``num_commit_attempts`` > 1).
    """

    def __init__(
        self,
        table_uri: Union[str, Any],
        version: Optional[int] = None,
        storage_options: Optional[Dict[str, str]] = None,
        *,
        conflict: Optional[ConflictConfig] = None,
        legacy: Optional[bool] = None,
        isolation: Optional[str] = None,
    ) -> None:
        cfg = conflict or ConflictConfig()
        if legacy is not None:
            cfg.legacy = legacy
        if isolation is not None:
            cfg.isolation = isolation
        self._storage_options = storage_options
        self._conflict = cfg
        self._table = _internal.RawTable.open(str(table_uri), storage_options, cfg._to_dict())
        self._version = self._table.latest_version() if version is None else int(version)
        self._snap: Optional[Dict[str, Any]] = None
        if version is not None:
            self._load()

    @classmethod
    def _wrap(cls, raw: Any, storage_options: Optional[Dict[str, str]], conflict: ConflictConfig) -> "DeltaTable":
        self = cls.__new__(cls)
        self._storage_options = storage_options
        self._conflict = conflict
        self._table = raw
        self._version = raw.latest_version()
        self._snap = None
        return self

    @staticmethod
    def is_deltatable(table_uri: str, storage_options: Optional[Dict[str, str]] = None) -> bool:
        try:
            _internal.RawTable.open(str(table_uri), storage_options, None)
            return True
        except _internal.TableNotFoundError:
            return False

    # --- state -------------------------------------------------------------------------------
    def _load(self) -> Dict[str, Any]:
        if self._snap is None or self._snap["version"] != self._version:
            self._snap = self._table.snapshot(self._version)
        return self._snap

    def _moved(self, metrics: Dict[str, Any]) -> Dict[str, Any]:
        v = metrics.get("version")
        self._version = int(v) if v is not None else self._table.latest_version()
        return metrics

    @property
    def table_uri(self) -> str:
        return self._table.uri()

    def version(self) -> int:
        return self._version

    def update_incremental(self) -> None:
        """Moves to the latest version."""
        self._version = self._table.latest_version()

    def load_as_version(self, version: Union[int, str, _dt.datetime]) -> None:
        """Pins the table to a version number, or to the latest version at a timestamp."""
        if isinstance(version, int):
            self._version = version
        else:
            self._version = self._table.version_at(_timestamp_ms(version))
        self._load()

    def schema(self) -> Schema:
        s = self._load()["schema"]
        return Schema(s, [Field(f.name, f.type, f.nullable) for f in s])

    def metadata(self) -> Metadata:
        s = self._load()
        return Metadata(s["id"], s["name"], s["description"], list(s["partition_columns"]), s["created_time"], dict(s["configuration"]))

    def protocol(self) -> ProtocolVersions:
        s = self._load()
        return ProtocolVersions(s["min_reader_version"], s["min_writer_version"], s["writer_features"], s["reader_features"])

    def partition_columns(self) -> List[str]:
        return list(self._load()["partition_columns"])

    def files(self, partition_filters: Optional[FilterType] = None) -> List[str]:
        if partition_filters:
            raise _internal.UnsupportedError("files(partition_filters=...) is not supported yet")
        return list(self._load()["files"])

    def file_uris(self) -> List[str]:
        root = self.table_uri.rstrip("/")
        return [f"{root}/{f}" for f in self.files()]

    def history(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Commit information, newest first (like deltalake's ``history``)."""
        stmt = "DESCRIBE HISTORY t" + (f" LIMIT {int(limit)}" if limit is not None else "")
        rows, _, _ = self._table.sql(stmt)
        out: List[Dict[str, Any]] = []
        if rows is None:
            return out
        for r in rows.read_all().to_pylist():
            entry: Dict[str, Any] = {}
            for k, v in r.items():
                if k in ("operationParameters", "operationMetrics") and isinstance(v, str):
                    try:
                        v = json.loads(v) if v else {}
                    except ValueError:
                        pass
                if k == "timestamp" and isinstance(v, str):
                    v = _timestamp_ms(v)
                entry[k] = v
            out.append(entry)
        return out

    # --- reads -------------------------------------------------------------------------------
    def _reader(self, columns: Optional[List[str]] = None, filters: Optional[FilterType] = None, predicate: Optional[str] = None) -> pa.RecordBatchReader:
        pred = filters_to_sql(filters)
        if predicate:
            pred = f"({pred}) AND ({predicate})" if pred else predicate
        return self._table.scan(self._version, columns, pred)

    def to_pyarrow_table(self, partitions: Optional[FilterType] = None, columns: Optional[List[str]] = None, filesystem: Any = None, filters: Optional[FilterType] = None) -> pa.Table:
        _unsupported(filesystem=filesystem)
        both = list(partitions or []) + list(filters or []) if (partitions and filters) else (partitions or filters)
        return self._reader(columns, both).read_all()

    def to_pyarrow_dataset(self, partitions: Optional[FilterType] = None, filesystem: Any = None) -> Any:
        """An in-memory pyarrow dataset of this version (deletion vectors applied)."""
        import pyarrow.dataset as ds

        return ds.dataset(self.to_pyarrow_table(partitions=partitions))

    def to_pyarrow_reader(self, columns: Optional[List[str]] = None, filters: Optional[FilterType] = None) -> pa.RecordBatchReader:
        """Rows as a stream of record batches, read file by file."""
        return self._reader(columns, filters)

    def to_pandas(self, partitions: Optional[FilterType] = None, columns: Optional[List[str]] = None, filesystem: Any = None, filters: Optional[FilterType] = None, types_mapper: Any = None) -> Any:
        return self.to_pyarrow_table(partitions=partitions, columns=columns, filters=filters).to_pandas(types_mapper=types_mapper)

    def to_polars(self, columns: Optional[List[str]] = None, filters: Optional[FilterType] = None) -> Any:
        import polars as pl

        return pl.from_arrow(self.to_pyarrow_table(columns=columns, filters=filters))

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._reader().__arrow_c_stream__(requested_schema)

    def load_cdf(
        self,
        starting_version: Optional[int] = None,
        ending_version: Optional[int] = None,
        starting_timestamp: Optional[Union[str, _dt.datetime]] = None,
        ending_timestamp: Optional[Union[str, _dt.datetime]] = None,
        columns: Optional[List[str]] = None,
        predicate: Optional[str] = None,
        allow_out_of_range: bool = False,
    ) -> pa.RecordBatchReader:
        """The change data feed between two versions or timestamps (inclusive), as deltalake's
        ``load_cdf``: the table's columns plus ``_change_type``, ``_commit_version`` and
        ``_commit_timestamp``. ``predicate`` is a SQL condition over those columns. With
        ``allow_out_of_range``, a start after the latest version gives no rows instead of an error."""

        def bound(version: Optional[int], ts: Optional[Union[str, _dt.datetime]]) -> Optional[str]:
            if version is not None and ts is not None:
                raise ValueError("pass a version or a timestamp for each bound, not both")
            if ts is not None:
                ms = _timestamp_ms(ts)
                return literal(_dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).isoformat())
            return None if version is None else str(int(version))

        start = bound(starting_version, starting_timestamp) or "0"
        end = bound(ending_version, ending_timestamp)
        where = f" WHERE {predicate}" if predicate else ""
        if allow_out_of_range and starting_version is not None and starting_version > self._table.latest_version():
            latest = self._table.latest_version()
            start, end, where = str(latest), str(latest), " WHERE false"
        cols = ", ".join(quote_ident(c) for c in columns) if columns else "*"
        args = f"'t', {start}" + (f", {end}" if end is not None else "")
        rows, _, _ = self._table.sql(f"SELECT {cols} FROM table_changes({args}){where}")
        return rows

    # --- writes ------------------------------------------------------------------------------
    def delete(self, predicate: Optional[str] = None, writer_properties: Any = None, post_commithook_properties: Any = None, commit_properties: Optional[CommitProperties] = None) -> Dict[str, Any]:
        """Deletes the rows matching the SQL ``predicate`` (every row without one)."""
        _unsupported(writer_properties=writer_properties, post_commithook_properties=post_commithook_properties)
        return self._moved(self._table.delete(predicate, _commit(commit_properties), self._version))

    def update(
        self,
        updates: Optional[Mapping[str, str]] = None,
        new_values: Optional[Mapping[str, Any]] = None,
        predicate: Optional[str] = None,
        writer_properties: Any = None,
        error_on_type_mismatch: bool = True,
        post_commithook_properties: Any = None,
        commit_properties: Optional[CommitProperties] = None,
    ) -> Dict[str, Any]:
        """Sets columns to SQL expressions (``updates``) or Python values (``new_values``)."""
        _unsupported(writer_properties=writer_properties, post_commithook_properties=post_commithook_properties, error_on_type_mismatch=not error_on_type_mismatch)
        if (updates is None) == (new_values is None):
            raise ValueError("pass either updates (SQL expressions) or new_values (Python values)")
        pairs = list(updates.items()) if updates is not None else [(k, literal(v)) for k, v in (new_values or {}).items()]
        return self._moved(self._table.update(pairs, predicate, _commit(commit_properties), self._version))

    def merge(
        self,
        source: Any,
        predicate: str,
        source_alias: Optional[str] = "source",
        target_alias: Optional[str] = "target",
        error_on_type_mismatch: bool = True,
        writer_properties: Any = None,
        streamed_exec: bool = False,
        post_commithook_properties: Any = None,
        commit_properties: Optional[CommitProperties] = None,
        merge_schema: bool = False,
    ) -> "TableMerger":
        """MERGE builder; ``merge_schema=True`` adds the source's new columns to the table
        (schema evolution, in the MERGE's own commit)."""
        _unsupported(writer_properties=writer_properties, post_commithook_properties=post_commithook_properties, error_on_type_mismatch=not error_on_type_mismatch)
        return TableMerger(self, source, predicate, source_alias or "source", target_alias or "target", commit_properties, merge_schema)

    @property
    def optimize(self) -> "TableOptimizer":
        return TableOptimizer(self)

    def vacuum(self, retention_hours: Optional[int] = None, dry_run: bool = True, enforce_retention_duration: bool = True, post_commithook_properties: Any = None, commit_properties: Optional[CommitProperties] = None, full: bool = False, keep_versions: Any = None) -> List[str]:
        """Deletes (or, with ``dry_run``, lists) files no version within the retention uses."""
        _unsupported(post_commithook_properties=post_commithook_properties, commit_properties=commit_properties, full=full, keep_versions=keep_versions)
        return self._table.vacuum(None if retention_hours is None else float(retention_hours), dry_run, enforce_retention_duration)

    def sql(self, statement: str) -> Any:
        """Runs SQL with this table as ``t``: a pyarrow Table for queries, else the commit's metrics."""
        rows, commit, message = self._table.sql(statement)
        if commit is not None:
            self._moved(commit)
            return commit
        if rows is not None:
            return rows.read_all()
        return message

    def __repr__(self) -> str:
        return f"DeltaTable({self.table_uri!r}, version={self._version})"


def _source_stream(source: Any) -> Any:
    """Anything with ``__arrow_c_stream__`` passes through; pandas goes through pyarrow."""
    if hasattr(source, "__arrow_c_stream__"):
        return source
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    try:
        import pandas as pd

        if isinstance(source, pd.DataFrame):
            return pa.Table.from_pandas(source, preserve_index=False)
    except ImportError:
        pass
    if isinstance(source, (list, tuple)) and source and isinstance(source[0], pa.RecordBatch):
        return pa.Table.from_batches(list(source))
    raise TypeError(f"cannot read Arrow data from {type(source).__name__}; pass a pyarrow Table/RecordBatchReader, a polars or pandas DataFrame, or anything with __arrow_c_stream__")


class TableMerger:
    """MERGE builder: add clauses in order, then ``execute()``."""

    def __init__(self, table: DeltaTable, source: Any, predicate: str, source_alias: str, target_alias: str, commit_properties: Optional[CommitProperties], merge_schema: bool = False) -> None:
        self._table = table
        self._merge_schema = merge_schema
        self._source = _source_stream(source)
        self._predicate = predicate
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._commit = commit_properties
        self._clauses: List[Any] = []

    def _add(self, kind: str, predicate: Optional[str], updates: Optional[Mapping[str, str]]) -> "TableMerger":
        self._clauses.append((kind, predicate, None if updates is None else list(updates.items())))
        return self

    def _all(self, except_cols: Optional[Iterable[str]]) -> Optional[Dict[str, str]]:
        if not except_cols:
            return None
        skip = {c.lower() for c in except_cols}
        names = [f.name for f in self._table.schema().fields]
        return {n: f"{self._source_alias}.{quote_ident(n)}" for n in names if n.lower() not in skip}

    def when_matched_update(self, updates: Mapping[str, str], predicate: Optional[str] = None) -> "TableMerger":
        return self._add("matched_update", predicate, updates)

    def when_matched_update_all(self, predicate: Optional[str] = None, except_cols: Optional[List[str]] = None) -> "TableMerger":
        return self._add("matched_update", predicate, self._all(except_cols))

    def when_matched_delete(self, predicate: Optional[str] = None) -> "TableMerger":
        return self._add("matched_delete", predicate, None)

    def when_not_matched_insert(self, updates: Mapping[str, str], predicate: Optional[str] = None) -> "TableMerger":
        return self._add("not_matched_insert", predicate, updates)

    def when_not_matched_insert_all(self, predicate: Optional[str] = None, except_cols: Optional[List[str]] = None) -> "TableMerger":
        return self._add("not_matched_insert", predicate, self._all(except_cols))

    def when_not_matched_by_source_update(self, updates: Mapping[str, str], predicate: Optional[str] = None) -> "TableMerger":
        return self._add("not_matched_by_source_update", predicate, updates)

    def when_not_matched_by_source_delete(self, predicate: Optional[str] = None) -> "TableMerger":
        return self._add("not_matched_by_source_delete", predicate, None)

    def execute(self) -> Dict[str, Any]:
        out = self._table._table.merge(self._source, self._predicate, self._source_alias, self._target_alias, self._clauses, _commit(self._commit), self._table._version, self._merge_schema)
        return self._table._moved(out)


class TableOptimizer:
    """``dt.optimize.compact()`` and ``dt.optimize.z_order(columns)``."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table

    def _run(self, zorder: List[str], partition_filters: Optional[FilterType], target_size: Optional[int], commit_properties: Optional[CommitProperties]) -> Dict[str, Any]:
        out = self._table._table.optimize(zorder, target_size, filters_to_sql(partition_filters), _commit(commit_properties), self._table._version)
        return self._table._moved(out)

    def compact(self, partition_filters: Optional[FilterType] = None, target_size: Optional[int] = None, max_concurrent_tasks: Optional[int] = None, min_commit_interval: Any = None, writer_properties: Any = None, post_commithook_properties: Any = None, commit_properties: Optional[CommitProperties] = None) -> Dict[str, Any]:
        _unsupported(min_commit_interval=min_commit_interval, writer_properties=writer_properties, post_commithook_properties=post_commithook_properties)
        return self._run([], partition_filters, target_size, commit_properties)

    def z_order(self, columns: Iterable[str], partition_filters: Optional[FilterType] = None, target_size: Optional[int] = None, max_concurrent_tasks: Optional[int] = None, max_spill_size: Any = None, min_commit_interval: Any = None, writer_properties: Any = None, post_commithook_properties: Any = None, commit_properties: Optional[CommitProperties] = None) -> Dict[str, Any]:
        _unsupported(min_commit_interval=min_commit_interval, writer_properties=writer_properties, post_commithook_properties=post_commithook_properties)
        return self._run(list(columns), partition_filters, target_size, commit_properties)
