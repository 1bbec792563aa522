"""The builders ``DeltaTable`` hands out: ``TableMerger`` (``dt.merge``), ``TableOptimizer``
(``dt.optimize``) and ``TableAlterer`` (``dt.alter``), with deltalake's methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Union

from datetime import timedelta

import json
import pyarrow as pa

from delta_rlc import _internal
from delta_rlc._util import deprecate_positional_commit_args
from delta_rlc._filters import FilterType, typed_filters
from delta_rlc.transaction import CommitProperties, PostCommitHookProperties, _after_commit, _commit

if TYPE_CHECKING:
    from delta_rlc.table import DeltaTable


def _unsupported(**options: Any) -> None:
    """deltalake options this package does not implement: accepted when left at their default
    (so scripts run unchanged), refused when set."""
    for name, value in options.items():
        if value is not None and value is not False:
            raise _internal.UnsupportedError(f"{name}={value!r} is not supported by delta_rlc")


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
    if isinstance(source, Iterable) and not isinstance(source, (str, bytes, dict)):
        # A sequence or generator of Arrow record batches (or tables): streamed, the first one
        # giving the schema.
        import itertools

        parts = iter(source)
        first = next(parts, None)
        if first is None:
            raise ValueError("cannot write an empty sequence of record batches (no schema)")
        first = pa.record_batch(first) if not isinstance(first, (pa.RecordBatch, pa.Table)) else first

        def batches() -> Iterable[pa.RecordBatch]:
            for part in itertools.chain([first], parts):
                part = part if isinstance(part, (pa.RecordBatch, pa.Table)) else pa.record_batch(part)
                yield from (part.to_batches() if isinstance(part, pa.Table) else [part])

        return pa.RecordBatchReader.from_batches(first.schema, batches())
    raise TypeError(f"cannot read Arrow data from {type(source).__name__}; pass a pyarrow Table/RecordBatchReader, a polars or pandas DataFrame, or anything with __arrow_c_stream__")


class TableMerger:
    """MERGE builder: add clauses in order, then ``execute()``."""

    def __init__(self, table: DeltaTable, source: Any, predicate: str, source_alias: str, target_alias: str, commit_properties: Optional[CommitProperties], merge_schema: bool = False, post_commithook_properties: Optional[PostCommitHookProperties] = None, writer: Optional[Dict[str, Any]] = None, error_on_type_mismatch: bool = True, retry_on_conflict: Optional[int] = None) -> None:
        self._hooks = post_commithook_properties
        _commit(None, None, retry_on_conflict)
        self._retry_on_conflict = retry_on_conflict
        self._writer = writer
        _commit(None, post_commithook_properties)
        self._table = table
        self._merge_schema = merge_schema
        self._source = _source_stream(source)
        self._predicate = predicate
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._commit = commit_properties
        self._clauses: List[Any] = []
        self._null_on_cast_failure = not error_on_type_mismatch

    def _add(self, kind: str, predicate: Optional[str], updates: Optional[Mapping[str, str]], from_source: Optional[List[str]] = None) -> "TableMerger":
        self._clauses.append((kind, predicate, None if updates is None else list(updates.items()), from_source))
        return self

    def _all(self, kind: str, predicate: Optional[str], except_cols: Optional[Iterable[str]]) -> "TableMerger":
        """Every column (``*``), or every column but ``except_cols``, each set from the source's
        column of the same name (named, not written into SQL)."""
        if not except_cols:
            return self._add(kind, predicate, None)
        skip = {c.lower() for c in except_cols}
        names = [f.name for f in self._table.schema().fields]
        if self._merge_schema:
            # With schema evolution ``*`` is every source column, the new ones included (as
            # Spark's INSERT * / UPDATE SET * under autoMerge): the source's schema is read
            # without consuming its rows.
            if not isinstance(self._source, pa.RecordBatchReader):
                self._source = pa.RecordBatchReader.from_stream(self._source)
            known = {n.lower() for n in names}
            names += [n for n in self._source.schema.names if n.lower() not in known]
        return self._add(kind, predicate, None, [n for n in names if n.lower() not in skip])

    def when_matched_update(self, updates: Mapping[str, str], predicate: Optional[str] = None) -> "TableMerger":
        return self._add("matched_update", predicate, updates)

    def when_matched_update_all(self, predicate: Optional[str] = None, except_cols: Optional[List[str]] = None) -> "TableMerger":
        return self._all("matched_update", predicate, except_cols)

    def when_matched_delete(self, predicate: Optional[str] = None) -> "TableMerger":
        return self._add("matched_delete", predicate, None)

    def when_not_matched_insert(self, updates: Mapping[str, str], predicate: Optional[str] = None) -> "TableMerger":
        return self._add("not_matched_insert", predicate, updates)

    def when_not_matched_insert_all(self, predicate: Optional[str] = None, except_cols: Optional[List[str]] = None) -> "TableMerger":
        return self._all("not_matched_insert", predicate, except_cols)

    def when_not_matched_by_source_update(self, updates: Mapping[str, str], predicate: Optional[str] = None) -> "TableMerger":
        return self._add("not_matched_by_source_update", predicate, updates)

    def when_not_matched_by_source_delete(self, predicate: Optional[str] = None) -> "TableMerger":
        return self._add("not_matched_by_source_delete", predicate, None)

    def execute(self) -> Dict[str, Any]:
        out = self._table._table.merge(self._source, self._predicate, self._source_alias, self._target_alias, self._clauses, _commit(self._commit, self._hooks, self._retry_on_conflict), self._table._version, self._merge_schema, self._writer, self._null_on_cast_failure)
        _after_commit(self._table._table.raw, self._hooks)
        return self._table._moved(out)


def _interval_ms(interval: Any) -> Optional[int]:
    """deltalake's ``min_commit_interval``: seconds (an int) or a ``timedelta``, as milliseconds."""
    if interval is None:
        return None
    if isinstance(interval, timedelta):
        ms = interval / timedelta(milliseconds=1)
    elif isinstance(interval, int) and not isinstance(interval, bool):
        ms = interval * 1000
    else:
        raise TypeError(f"min_commit_interval must be an int (seconds) or a timedelta, got {type(interval).__name__}")
    if ms < 0:
        raise ValueError("min_commit_interval must not be negative")
    return int(ms)


class TableOptimizer:
    """``dt.optimize.compact()`` and ``dt.optimize.z_order(columns)``."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table

    def _run(self, zorder: List[str], partition_filters: Optional[FilterType], target_size: Optional[int], commit_properties: Optional[CommitProperties], hooks: Optional[PostCommitHookProperties] = None, writer_properties: Any = None, min_commit_interval: Any = None) -> Dict[str, Any]:
        from delta_rlc.properties import _writer

        out = self._table._table.optimize(zorder, target_size, typed_filters(partition_filters), _commit(commit_properties, hooks), self._table._version, _writer(writer_properties), _interval_ms(min_commit_interval))
        _after_commit(self._table._table.raw, hooks)
        return self._table._moved(out)

    def compact(
        self,
        partition_filters: Optional[FilterType] = None,
        target_size: Optional[int] = None,
        max_concurrent_tasks: Optional[int] = None,
        max_spill_size: Optional[int] = None,
        max_temp_directory_size: Optional[int] = None,
        min_commit_interval: Any = None,
        writer_properties: Any = None,
        *args: Any,
        commit_properties: Optional[CommitProperties] = None,
        post_commithook_properties: Optional[PostCommitHookProperties] = None,
    ) -> Dict[str, Any]:
        """Bin-packs small files. ``max_concurrent_tasks``, ``max_spill_size`` and
        ``max_temp_directory_size`` are resource hints deltalake takes; compaction here streams
        file by file and uses neither. ``min_commit_interval`` (seconds or a ``timedelta``)
        commits the bins done so far each time it has passed, so a long run lands in several
        versions; zero gives each bin its own commit."""
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("compact", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        return self._run([], partition_filters, target_size, commit_properties, post_commithook_properties, writer_properties, min_commit_interval)

    def z_order(
        self,
        columns: Iterable[str],
        partition_filters: Optional[FilterType] = None,
        target_size: Optional[int] = None,
        max_concurrent_tasks: Optional[int] = None,
        max_spill_size: Optional[int] = None,
        max_temp_directory_size: Optional[int] = None,
        min_commit_interval: Any = None,
        writer_properties: Any = None,
        *args: Any,
        commit_properties: Optional[CommitProperties] = None,
        post_commithook_properties: Optional[PostCommitHookProperties] = None,
    ) -> Dict[str, Any]:
        """Rewrites files in Z-order of ``columns`` (files already z-ordered by them are kept)."""
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("z_order", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        return self._run(list(columns), partition_filters, target_size, commit_properties, post_commithook_properties, writer_properties, min_commit_interval)

# deltalake's TableFeatures names → protocol feature names.
_FEATURE_NAMES = {
    "ColumnMapping": "columnMapping",
    "DeletionVectors": "deletionVectors",
    "TimestampWithoutTimezone": "timestampNtz",
    "TimestampNanos": "timestampNanos",
    "V2Checkpoint": "v2Checkpoint",
    "AppendOnly": "appendOnly",
    "Invariants": "invariants",
    "CheckConstraints": "checkConstraints",
    "ChangeDataFeed": "changeDataFeed",
    "GeneratedColumns": "generatedColumns",
    "IdentityColumns": "identityColumns",
    "RowTracking": "rowTracking",
    "DomainMetadata": "domainMetadata",
    "IcebergCompatV1": "icebergCompatV1",
    "VariantType": "variantType",
    "VariantTypePreview": "variantType-preview",
}


class TableAlterer:
    """``dt.alter``: schema, constraint, property, feature and name changes, one commit each."""

    def __init__(self, table: "DeltaTable") -> None:
        self._table = table

    def _alter(self, kind: str, arg: Any, commit_properties: Optional[CommitProperties], hooks: Optional[PostCommitHookProperties]) -> None:
        raw = self._table._table.raw
        out = _internal.alter(raw, kind, arg, _commit(commit_properties, hooks), self._table._version)
        _after_commit(raw, hooks)
        self._table._moved(out)

    def add_feature(self, feature: Any, allow_protocol_versions_increase: bool = False, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("add_feature", args, commit_properties, post_commithook_properties)
        features = feature if isinstance(feature, list) else [feature]
        names = []
        for f in features:
            key = getattr(f, "value", f)
            names.append(_FEATURE_NAMES.get(str(key), str(key)))
        self._alter("add_features", (names, bool(allow_protocol_versions_increase)), commit_properties, post_commithook_properties)

    def add_columns(self, fields: Any, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("add_columns", args, commit_properties, post_commithook_properties)
        from delta_rlc.schema import Field

        fields = fields if isinstance(fields, list) else [fields]
        pa_fields = []
        for f in fields:
            if isinstance(f, Field):
                # Metadata travels with the field: ADD COLUMNS keeps a comment and refuses the
                # protocol's keys (a generated or identity column) as SQL and Rust do.
                meta = {k: v if isinstance(v, str) else json.dumps(v) for k, v in f.metadata.items()}
                pa_fields.append(f.to_pyarrow().with_metadata(meta) if meta else f.to_pyarrow())
            else:
                pa_fields.append(pa.field(f))
        self._alter("add_columns", pa.schema(pa_fields), commit_properties, post_commithook_properties)

    def add_constraint(self, constraints: Dict[str, str], *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("add_constraint", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        if not constraints:
            raise ValueError("add_constraint needs at least one constraint")
        self._alter("add_constraints", dict(constraints), commit_properties, post_commithook_properties)

    def drop_constraint(self, name: str, raise_if_not_exists: bool = True, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("drop_constraint", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        self._alter("drop_constraint", (name, not raise_if_not_exists), commit_properties, post_commithook_properties)

    def drop_column_not_null(self, column_name: str, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        self._alter("drop_not_null", column_name, commit_properties, post_commithook_properties)

    def set_table_properties(self, properties: Dict[str, str], raise_if_not_exists: bool = True, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("set_table_properties", args, commit_properties, post_commithook_properties)
        # Unknown delta.* keys are refused either way: the engine does not write a property it
        # cannot honour.
        self._alter("set_properties", {str(k): str(v) for k, v in properties.items()}, commit_properties, post_commithook_properties)

    def set_table_name(self, name: str, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("set_table_name", args, commit_properties, post_commithook_properties)
        self._alter("set_name", name, commit_properties, post_commithook_properties)

    def set_table_description(self, description: str, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("set_table_description", args, commit_properties, post_commithook_properties)
        self._alter("set_description", description, commit_properties, post_commithook_properties)

    def set_column_metadata(self, column: str, metadata: Dict[str, str], *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        """Sets entries of a column's metadata (a comment, your own keys); the protocol's
        ``delta.*`` keys are refused. A dotted name reaches a nested field."""
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("set_column_metadata", args, commit_properties, post_commithook_properties)
        self._alter("set_column_metadata", (column, {str(k): str(v) for k, v in dict(metadata).items()}), commit_properties, post_commithook_properties)
