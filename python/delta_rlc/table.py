"""``DeltaTable`` with deltalake's API, committing through row-level concurrency."""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import json
import re
from dataclasses import dataclass, field
import warnings
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Union

import pyarrow as pa

from delta_rlc import _internal
from delta_rlc._util import deprecate_positional_commit_args
from delta_rlc._arrow import as_reader, as_table, as_view_reader
from delta_rlc._filters import FilterType, typed_filters, value_array
from delta_rlc._operations import TableAlterer, TableMerger, TableOptimizer, _source_stream, _unsupported
from delta_rlc._partitions import logical_values, matches_filters
from delta_rlc.properties import _writer
from delta_rlc.schema import PrimitiveType, Schema
from delta_rlc.transaction import CommitProperties, PostCommitHookProperties, _after_commit, _commit


@dataclass
class ConflictConfig:
    """How commits are checked against concurrent ones.

    ``legacy=True`` reproduces open-source Delta exactly (abort whenever a concurrent commit might
    overlap); ``isolation`` is ``"Serializable"``, ``"WriteSerializable"`` (the default) or
    ``"SnapshotIsolation"``. ``retry_on_conflict=n`` re-runs a statement that aborted on a true
    conflict up to ``n`` more times (the default for every statement on the table). A
    ``write_deltalake`` streams its data and is read once, so it re-runs only when its own
    ``retry_on_conflict`` keyword asks (its data is then held in memory).
    """

    legacy: bool = False
    isolation: Optional[str] = None
    max_commit_attempts: Optional[int] = None
    #: Re-execution on a true conflict (0 = off): see ``DeltaTable.delete``'s ``retry_on_conflict``.
    retry_on_conflict: int = 0
    #: What the checks of one commit attempt may spend, in milliseconds and in bytes read (None:
    #: 30 s and 2 GiB). Past it the commit aborts with ``reason == "budget-exceeded"``.
    reconcile_max_millis: Optional[int] = None
    reconcile_max_bytes: Optional[int] = None

    def _to_dict(self) -> Dict[str, Any]:
        return {
            "legacy": self.legacy,
            "isolation": self.isolation,
            "max_commit_attempts": self.max_commit_attempts,
            "retry_on_conflict": self.retry_on_conflict,
            "reconcile_max_millis": self.reconcile_max_millis,
            "reconcile_max_bytes": self.reconcile_max_bytes,
        }


@dataclass
class Metadata:
    id: str
    name: Optional[str]
    description: Optional[str]
    partition_columns: List[str]
    created_time: Optional[int]
    configuration: Dict[str, str]


class ProtocolVersions(NamedTuple):
    min_reader_version: int
    min_writer_version: int
    writer_features: Optional[List[str]]
    reader_features: Optional[List[str]]


class DeltaTableConfig(NamedTuple):
    """deltalake's (deprecated) loading options; every table here loads with its files and stats."""

    without_files: bool
    log_buffer_size: int
    skip_stats: bool = False


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _timestamp_ms(value: Union[str, _dt.datetime]) -> int:
    """A point in time as milliseconds since the epoch: a datetime (naive = UTC) or, as in
    deltalake, an RFC 3339 string with its offset (``2020-05-01T00:47:31Z``,
    ``…-07:00``); a string without one is refused rather than guessed."""
    if isinstance(value, str):
        if not _RFC3339.fullmatch(value.strip()):
            raise ValueError(f"Failed to parse datetime string: {value!r} is not RFC 3339 with an offset (e.g. 2020-05-01T00:47:31Z)")
        value = _dt.datetime.fromisoformat(value.strip().replace("z", "+00:00").replace("Z", "+00:00").replace("t", "T"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return int(value.timestamp() * 1000)


class _KeywordArgDefault:
    """A keyword's default that tells "not given" from the same value given (deltalake's
    ``_DEFAULT_TRUE``): ``create`` refuses a value passed both positionally and by keyword."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


_DEFAULT_TRUE = _KeywordArgDefault(True)


def _stats_guarantees(stats_json: Optional[str], columns: List[pa.Field]) -> List[Any]:
    """What a file's statistics prove about its rows, as pyarrow expressions (deltalake's
    fragment expressions): ``is_valid`` for a column without nulls, ``is_null`` for one with
    only nulls, and ``>= min`` / ``<= max`` (``or is_null`` when it has some) for integer,
    date and boolean columns; microsecond timestamps — whose bounds writers truncate to
    milliseconds, so a maximum is widened by 999 µs to stay a bound, as the engine widens it; and
    strings — a minimum always (a truncated prefix is still a lower bound), a maximum only when it
    cannot be a truncated prefix (the engine's rule). Bounds of floats (NaN) and decimals are not
    used: pruning with them could drop rows."""
    import pyarrow.dataset as ds

    if not stats_json:
        return []
    try:
        stats = json.loads(stats_json)
    except ValueError:
        return []
    rows = stats.get("numRecords")
    nulls, lows, highs = (stats.get(k) or {} for k in ("nullCount", "minValues", "maxValues"))
    out: List[Any] = []
    for f in columns:
        if pa.types.is_nested(f.type):
            continue
        n = nulls.get(f.name)
        some_nulls = False
        if isinstance(n, int) and not isinstance(n, bool):
            if n == 0:
                out.append(ds.field(f.name).is_valid())
            elif isinstance(rows, int) and n == rows:
                out.append(ds.field(f.name).is_null())
                continue
            else:
                some_nulls = True
        elif n is not None:
            continue
        micros = pa.types.is_timestamp(f.type) and f.type.unit == "us"
        text = pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        if not (pa.types.is_integer(f.type) or pa.types.is_date32(f.type) or pa.types.is_boolean(f.type) or micros or text):
            continue
        for bound, op in ((lows.get(f.name), "__ge__"), (highs.get(f.name), "__le__")):
            if bound is None or isinstance(bound, (dict, list)):
                continue
            try:
                if micros:
                    value = _timestamp_bound(bound, f.type, op == "__le__")
                    if value is None:
                        continue
                elif text:
                    # A minimum may be a truncated prefix: still a lower bound. A maximum of 32 or
                    # more characters may be one too (not an upper bound) unless it ends with a
                    # writer's tie-breaker character — the engine's rule (arrow_conv.rs).
                    if not isinstance(bound, str):
                        continue
                    if op == "__le__" and len(bound) >= 32 and not bound.endswith(("\U0010ffff", "\x7f")):
                        continue
                    value = pa.scalar(bound, f.type)
                elif pa.types.is_date32(f.type):
                    value = pa.scalar(_dt.date.fromisoformat(str(bound)), pa.date32())
                elif pa.types.is_boolean(f.type):
                    if not isinstance(bound, bool):
                        continue
                    value = pa.scalar(bound, pa.bool_())
                else:
                    if isinstance(bound, bool) or not isinstance(bound, int):
                        continue
                    value = pa.scalar(bound, f.type)
            except (ValueError, TypeError, OverflowError, pa.ArrowInvalid):
                continue
            e = getattr(ds.field(f.name), op)(value)
            out.append(e | ds.field(f.name).is_null() if some_nulls else e)
    return out


def _timestamp_bound(bound: Any, t: pa.DataType, is_max: bool) -> Any:
    """A timestamp statistic as a bound of a column of type ``t`` (microseconds): zoned
    statistics name their offset (``Z``) and a zoned column needs one, a TIMESTAMP_NTZ column
    takes none; a maximum is widened by 999 µs (writers truncate to milliseconds). None when the
    text is not such a time or the widened maximum does not fit."""
    if not isinstance(bound, str):
        return None
    text = bound[:-1] + "+00:00" if bound.endswith("Z") else bound
    parsed = _dt.datetime.fromisoformat(text)
    if (parsed.tzinfo is None) != (t.tz is None):
        return None
    if is_max:
        parsed = parsed + _dt.timedelta(microseconds=999)
    return pa.scalar(parsed, t)


class _TableHandle:
    """The engine's handle on a table (``_internal.RawTable``, as ``raw``) with the calls
    deltalake's ``RawDeltaTable`` has as methods and the binding has as functions
    (``history``); any other attribute is the handle's own."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def __getattr__(self, name: str) -> Any:
        if name == "raw":
            raise AttributeError(name)
        return getattr(self.raw, name)

    def history(self, limit: Optional[int] = None) -> List[Any]:
        """(version, commitInfo JSON) pairs, newest first, from the latest version."""
        return _internal.history(self.raw, limit)

    def vacuum(self, dry_run: bool, retention_hours: Optional[int], enforce_retention_duration: bool, commit_properties: Optional[CommitProperties], post_commithook_properties: Optional[PostCommitHookProperties], full: bool, keep_versions: Optional[List[int]]) -> List[str]:
        """deltalake's ``RawDeltaTable.vacuum``, in its argument order: the relative paths
        deleted (or that a dry run would delete). ``full=False`` is deltalake's lite mode: only
        the files the log's tombstones name."""
        kept = None if keep_versions is None else [int(v) for v in keep_versions]
        retention = None if retention_hours is None else float(retention_hours)
        return self.raw.vacuum(retention, dry_run, enforce_retention_duration, bool(full), kept, _commit(commit_properties, post_commithook_properties))

    def get_add_file_sizes(self) -> Dict[str, int]:
        """Each live data file's size by its path, at the latest version — what deltalake's
        ``RawDeltaTable.get_add_file_sizes`` gives readers such as polars, to pass to
        ``DeltaStorageHandler(known_sizes=…)``. A file's size never changes, so an older version's
        reader gets correct sizes for the files they share and reads the others' as it would."""
        adds = _internal.add_actions(self.raw, self.raw.latest_version())
        return {a["path"]: int(a["size_bytes"]) for a in adds}


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
        without_files: bool = False,
        log_buffer_size: Optional[int] = None,
        skip_stats: bool = False,
        *,
        conflict: Optional[ConflictConfig] = None,
        legacy: Optional[bool] = None,
        isolation: Optional[str] = None,
    ) -> None:
        for name, given in (("without_files", without_files), ("log_buffer_size", log_buffer_size is not None), ("skip_stats", skip_stats)):
            if given:
                warnings.warn(f"The '{name}' parameter is deprecated and ignored. Table loading materializes active-file metadata.", DeprecationWarning, stacklevel=2)
        cfg = conflict or ConflictConfig()
        if legacy is not None:
            cfg.legacy = legacy
        if isolation is not None:
            cfg.isolation = isolation
        self._storage_options = storage_options
        self._conflict = cfg
        self._table = _TableHandle(_internal.RawTable.open(str(table_uri), storage_options, cfg._to_dict()))
        self._version = self._table.latest_version() if version is None else int(version)
        self._snap: Optional[Dict[str, Any]] = None
        if version is not None:
            self._load()

    @classmethod
    def _wrap(cls, raw: Any, storage_options: Optional[Dict[str, str]], conflict: ConflictConfig) -> "DeltaTable":
        self = cls.__new__(cls)
        self._storage_options = storage_options
        self._conflict = conflict
        self._table = _TableHandle(raw)
        self._version = raw.latest_version()
        self._snap = None
        return self

    @staticmethod
    def is_deltatable(table_uri: Union[str, Any], storage_options: Optional[Dict[str, str]] = None) -> bool:
        try:
            _internal.RawTable.open(str(table_uri), storage_options, None)
            return True
        except _internal.TableNotFoundError:
            return False

    @classmethod
    def create(
        cls,
        table_uri: Union[str, Any],
        schema: Any,
        mode: str = "error",
        partition_by: Optional[Union[List[str], str]] = None,
        name: Optional[str] = None,
        description: Optional[str] = None,
        configuration: Optional[Mapping[str, Optional[str]]] = None,
        storage_options: Optional[Dict[str, str]] = None,
        *args: Any,
        commit_properties: Optional[CommitProperties] = None,
        post_commithook_properties: Optional[PostCommitHookProperties] = None,
        raise_if_key_not_exists: bool = _DEFAULT_TRUE,  # type: ignore[assignment]
    ) -> "DeltaTable":
        """Creates an empty table with ``schema`` (a ``Schema`` or any Arrow schema). ``mode``:
        ``"error"`` or ``"append"`` (fail if a table exists, as deltalake documents), ``"ignore"``
        (keep it) or ``"overwrite"`` (CREATE OR REPLACE TABLE: one commit with the new schema,
        partitioning and properties that removes every row; the table keeps its id and history).
        As in deltalake, ``commit_properties``, ``post_commithook_properties`` and
        ``raise_if_key_not_exists`` may still be passed positionally (deprecated)."""
        raise_if_key_not_exists_is_default = raise_if_key_not_exists is _DEFAULT_TRUE
        if args:
            # deltalake's legacy positional order and messages, word for word.
            warnings.warn("Passing commit arguments positionally to create() is deprecated and will be removed in a future release. Use keyword arguments instead.", DeprecationWarning, stacklevel=2)
            if len(args) > 3:
                raise TypeError("create() got unexpected positional arguments")
            if commit_properties is not None:
                raise TypeError("create() got multiple values for 'commit_properties'")
            commit_properties = args[0]
            if len(args) >= 2:
                if post_commithook_properties is not None:
                    raise TypeError("create() got multiple values for 'post_commithook_properties'")
                post_commithook_properties = args[1]
            if len(args) == 3:
                if not raise_if_key_not_exists_is_default:
                    raise TypeError("create() got multiple values for 'raise_if_key_not_exists'")
                raise_if_key_not_exists = args[2]
                raise_if_key_not_exists_is_default = False
        if raise_if_key_not_exists_is_default:
            raise_if_key_not_exists = True
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        uri = str(table_uri)
        delta_schema = schema if isinstance(schema, Schema) else Schema.from_arrow(schema)
        raw = _create_deltalake(uri, delta_schema, list(partition_by or []), mode, raise_if_key_not_exists, name, description, configuration, storage_options, commit_properties, post_commithook_properties)
        if raw is None:  # an existing table kept (mode "ignore")
            return cls(table_uri=uri, storage_options=storage_options)
        return cls._wrap(raw, storage_options, ConflictConfig())

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
        """The table's root URI, as deltalake spells it (``file:///…/t/``)."""
        return self._table.table_uri()

    @property
    def table_config(self) -> DeltaTableConfig:
        warnings.warn("The 'table_config' property is deprecated and will be removed in a future release.", DeprecationWarning, stacklevel=2)
        return DeltaTableConfig(False, 0, False)

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
        return Schema.from_json(self._load()["schema_string"])

    def metadata(self) -> Metadata:
        s = self._load()
        return Metadata(s["id"], s["name"], s["description"], list(s["partition_columns"]), s["created_time"], dict(s["configuration"]))

    def protocol(self) -> ProtocolVersions:
        s = self._load()
        return ProtocolVersions(s["min_reader_version"], s["min_writer_version"], s["writer_features"], s["reader_features"])

    def partition_columns(self) -> List[str]:
        return list(self._load()["partition_columns"])

    def _adds(self) -> List[Dict[str, Any]]:
        return _internal.add_actions(self._table.raw, self._version)

    def _matching(self, partition_filters: Optional[FilterType]) -> List[Dict[str, Any]]:
        adds = self._adds()
        if not partition_filters:
            return adds
        schema = self.schema()
        return [a for a in adds if matches_filters(logical_values(a["partition_values"], schema), partition_filters, schema, self.partition_columns())]

    def files(self, partition_filters: Optional[FilterType] = None) -> List[str]:
        """Paths of the live data files (relative to the table root)."""
        return [a["path"] for a in self._matching(partition_filters)]

    def file_uris(self, partition_filters: Optional[FilterType] = None, *, file_pruning_predicate: Any = None) -> List[str]:
        filters = partition_filters if partition_filters is not None else file_pruning_predicate
        root = self.table_uri.rstrip("/")
        if root.startswith("file://"):
            root = root[len("file://") :]
        return [f"{root}/{p}" for p in self.files(filters)]

    def partitions(self, partition_filters: Optional[FilterType] = None, *, file_pruning_predicate: Any = None) -> List[Dict[str, Optional[str]]]:
        """The distinct partition values of the live files (as strings, None for null); none
        for an unpartitioned table, as in deltalake."""
        filters = partition_filters if partition_filters is not None else file_pruning_predicate
        out: List[Dict[str, Optional[str]]] = []
        schema = self.schema()
        columns = self.partition_columns()
        for a in self._matching(filters):
            values = logical_values(a["partition_values"], schema)
            pv = {c: values.get(c) for c in columns}
            if pv and pv not in out:
                out.append(pv)
        return out

    def count(self) -> int:
        """Live rows: from the files' statistics (deletion vectors subtracted), or by reading
        when a file has none."""
        n = self._load().get("num_rows")
        if n is not None:
            return int(n)
        rows = self._reader(columns=[]).read_all()
        return rows.num_rows

    def get_add_actions(self, flatten: bool = False) -> Any:
        """The live files' add actions as an Arrow table (deltalake's columns: path, size_bytes,
        modification_time, num_records, null_count, min, max, partition — nested, or flattened
        to ``min.id`` … with ``flatten=True``)."""
        from delta_rlc._partitions import add_actions_table

        return as_table(add_actions_table(self._adds(), self.schema(), self.partition_columns(), flatten, self.metadata().configuration))

    def deletion_vectors(self) -> Any:
        """One row per file with a deletion vector: ``filepath`` and ``selection_vector`` (True
        keeps the row)."""
        return as_reader(_internal.deletion_vectors(self._table.raw, self._version))

    def transaction_version(self, app_id: str) -> Optional[int]:
        """The version ``app_id`` last recorded with ``CommitProperties(app_transactions=…)``."""
        return _internal.app_transaction_version(self._table.raw, self._version, app_id)

    def history(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Each version's ``commitInfo`` as its writer recorded it, plus ``version``; newest
        first, from this object's version (deltalake's ``history`` of the loaded snapshot: a
        later commit is not listed until ``update_incremental``)."""
        pinned = self._version
        # The engine lists from the latest version: ask for the later versions too, and again
        # for more if one landed in between.
        want = None if limit is None else limit + max(0, self._table.latest_version() - pinned)
        while True:
            pairs = list(self._table.history(want))
            kept = [(v, info) for v, info in pairs if v <= pinned]
            if want is None or limit is None or len(kept) >= limit or len(pairs) < want:
                break
            want += limit - len(kept)
        out: List[Dict[str, Any]] = []
        for version, info in kept[:limit] if limit is not None else kept:
            entry = json.loads(info)
            entry["version"] = version
            out.append(entry)
        return out

    # --- reads -------------------------------------------------------------------------------
    def _reader(self, columns: Optional[List[str]] = None, filters: Optional[FilterType] = None, predicate: Optional[str] = None) -> pa.RecordBatchReader:
        return self._table.scan(self._version, columns, predicate, typed_filters(filters))

    def scan(self, columns: Optional[List[str]] = None, predicate: Optional[str] = None) -> Any:
        """Rows of this version as a stream of record batches (``predicate``: a SQL condition)."""
        return as_view_reader(self._reader(columns, None, predicate))

    def to_pyarrow_table(self, partitions: Optional[FilterType] = None, columns: Optional[List[str]] = None, filesystem: Any = None, filters: Any = None) -> pa.Table:
        """The rows of this version as a pyarrow Table. ``partitions``: partition filters (a
        value is matched as the text the log holds for it, as deltalake does); ``filters``:
        row filters, as (column, op, value) lists or a ``pyarrow.dataset.Expression``."""
        import pyarrow.dataset as ds

        _unsupported(filesystem=filesystem)
        if isinstance(filters, ds.Expression):
            # deltalake: the filter is applied to the dataset of the files the partition
            # filters choose.
            return self.to_pyarrow_dataset(partitions).to_table(columns=columns, filter=filters)
        partitions = self._as_partition_text(partitions)
        both = list(partitions or []) + list(filters or []) if (partitions and filters) else (partitions or filters)
        return self._reader(columns, both).read_all()

    def _as_partition_text(self, filters: Optional[FilterType]) -> Optional[FilterType]:
        """Partition filters with each value on a string column given as the text deltalake
        sends for it (``encode_partition_value``: 2021.0 -> "2021.0", True -> "true", a date
        -> "2023-01-01"), so that it compares with the string column as in deltalake."""
        from delta_rlc._util import encode_partition_value

        if not filters:
            return filters
        strings = {f.name for f in self.schema().fields if isinstance(f.type, PrimitiveType) and f.type.type == "string"}

        def text(v: Any) -> Any:
            if v is None or isinstance(v, str):
                return v
            return str(v) if isinstance(v, _decimal.Decimal) else encode_partition_value(v)  # a dict: deltalake's ValueError

        def term(f: Any) -> Any:
            if not isinstance(f, (list, tuple)) or len(f) != 3 or f[0] not in strings:
                return f
            col, op, value = f
            if isinstance(value, (list, tuple, set, frozenset)):
                return (col, op, [text(v) for v in value])
            return (col, op, text(value))

        if isinstance(filters[0], (list, tuple)) and filters[0] and isinstance(filters[0][0], (list, tuple)):
            return [[term(f) for f in conj] for conj in filters]  # type: ignore[union-attr]
        return [term(f) for f in filters]

    def _filters_compare_here(self, filters: FilterType) -> bool:
        """Whether the partition filters' columns have types whose log text this module
        compares as the engine does (strings, numbers, booleans, dates, decimals). Timestamps
        and binary partition values are left to the engine's typed filters."""
        types = {f.name: f.type for f in self.schema().fields}
        conjunctions = filters if isinstance(filters[0], (list, tuple)) and filters[0] and isinstance(filters[0][0], (list, tuple)) else [filters]
        for conj in conjunctions:
            for f in conj:  # type: ignore[union-attr]
                if not isinstance(f, (list, tuple)) or len(f) != 3 or f[0] not in types:
                    continue  # malformed or unknown: refused with deltalake's message below
                t = types[f[0]]
                if not isinstance(t, PrimitiveType) or t.type in ("timestamp", "timestamp_ntz", "binary"):
                    return False
        return True

    def to_pyarrow_dataset(self, partitions: Optional[FilterType] = None, filesystem: Any = None, parquet_read_options: Any = None, schema: Any = None, as_large_types: bool = False, file_pruning_predicate: Any = None) -> Any:
        """A pyarrow dataset of this version. Lazy — the data files themselves, read when the
        dataset is scanned — where the files hold exactly the table's rows: a local table
        without deletion vectors on the chosen files and without column mapping. As in
        deltalake, each file's partition expression holds its partition values and what its
        statistics prove (a column with no nulls or only nulls, integer and date bounds), so
        pyarrow skips files a filter rules out; ``partitions`` chooses the files, in the log's
        order. Otherwise (rows a deletion vector removes are still in the files, or the files
        name columns by id) the rows are read now, with the deletion vectors applied, into an
        in-memory dataset."""
        import pyarrow.dataset as ds

        _unsupported(filesystem=filesystem)
        # The dataset's schema: the table's, with large string/binary/list types when asked
        # (deltalake's as_large_types), or the caller's own — the same columns, in order, which
        # pyarrow casts the files' columns to as it reads them.
        dataset_schema = self.schema().to_pyarrow(as_large_types=bool(as_large_types))
        if schema is not None:
            given = schema if isinstance(schema, pa.Schema) else pa.schema(schema)
            if [f.name for f in given] != [f.name for f in dataset_schema]:
                raise ValueError(f"schema must name the table's columns in order {[f.name for f in dataset_schema]}, got {[f.name for f in given]}")
            dataset_schema = given
        filters = partitions or file_pruning_predicate
        # Partition filters on timestamp or binary columns: the engine chooses the rows (its
        # typed filters read those partition values as their types).
        adds = None if filters and not self._filters_compare_here(filters) else self._matching(filters)
        lazy = None if adds is None else self._file_dataset(adds, parquet_read_options, dataset_schema)
        if lazy is not None:
            return lazy
        # pyarrow's Parquet options shape how pyarrow reads the files; here the engine reads
        # them, so they would be ignored: refused instead.
        _unsupported(parquet_read_options=parquet_read_options)
        return ds.dataset(self.to_pyarrow_table(partitions=filters).cast(dataset_schema))

    def _file_dataset(self, adds: Optional[List[Dict[str, Any]]] = None, read_options: Any = None, schema: Optional[pa.Schema] = None) -> Any:
        """The live files (or ``adds``) as a pyarrow FileSystemDataset, or None when the files'
        rows are not the table's rows (deletion vectors, column mapping) or are not on the
        local disk."""
        import pyarrow.dataset as ds
        import pyarrow.fs as pafs

        root = self.table_uri.rstrip("/")
        if root.startswith("file://"):
            root = root[len("file://") :]
        if "://" in root:
            return None
        if (self.metadata().configuration.get("delta.columnMapping.mode") or "none") != "none":
            return None
        if adds is None:
            adds = self._adds()
        if any(a["deletion_vector"] is not None or "://" in a["path"] for a in adds):
            return None
        arrow_schema = self.schema().to_pyarrow() if schema is None else schema
        types = {f.name: f.type for f in arrow_schema}
        from delta_rlc._partitions import _stats_columns

        stats_columns = [f for f in _stats_columns(arrow_schema, self.partition_columns(), self.metadata().configuration)]
        expressions = []
        try:
            for a in adds:
                e = ds.scalar(True)
                for c in self.partition_columns():
                    v = a["partition_values"].get(c)
                    # An empty partition value is NULL, as the engine reads it.
                    e = e & (ds.field(c).is_null() if v is None or v == "" else ds.field(c) == pa.array([v]).cast(types[c])[0])
                for s in _stats_guarantees(a.get("stats"), stats_columns):
                    e = e & s
                expressions.append(e)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError):
            return None  # a partition value pyarrow does not parse as its type: read it here
        paths = [f"{root}/{a['path']}" for a in adds]  # the add actions' paths, already decoded
        parquet = ds.ParquetFileFormat() if read_options is None else ds.ParquetFileFormat(read_options=read_options)
        if read_options is not None and read_options.dictionary_columns:
            # deltalake's `dictionary_columns`: those string or binary columns read dictionary-encoded.
            arrow_schema = pa.schema(
                [
                    f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in read_options.dictionary_columns and (pa.types.is_string(f.type) or pa.types.is_binary(f.type)) else f
                    for f in arrow_schema
                ]
            )
        return ds.FileSystemDataset.from_paths(paths, schema=arrow_schema, format=parquet, filesystem=pafs.LocalFileSystem(), partitions=expressions)

    def to_pyarrow_reader(self, columns: Optional[List[str]] = None, filters: Optional[FilterType] = None) -> pa.RecordBatchReader:
        """Rows as a stream of pyarrow record batches, read file by file."""
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
        ``allow_out_of_range``, a start after the latest version (or the latest commit's time)
        gives no rows instead of an error."""

        for version, ts in ((starting_version, starting_timestamp), (ending_version, ending_timestamp)):
            if version is not None and ts is not None:
                raise ValueError("pass a version or a timestamp for each bound, not both")
        start_ms = None if starting_timestamp is None else _timestamp_ms(starting_timestamp)
        end_ms = None if ending_timestamp is None else _timestamp_ms(ending_timestamp)
        out_of_range = allow_out_of_range and starting_version is not None and starting_version > self._table.latest_version()
        if allow_out_of_range and start_ms is not None:
            try:
                self._table.version_at(start_ms)
            except _internal.InvalidInputError:
                # The only input version_at refuses: a time after the latest commit (a time
                # before the first one is not found).
                out_of_range = True
        if out_of_range:
            latest = self._table.latest_version()
            starting_version, ending_version, start_ms, end_ms = latest, latest, None, None
        batch = self._table.changes(starting_version, start_ms, ending_version, end_ms, columns, predicate)
        if out_of_range:
            batch = batch.slice(0, 0)
        return pa.RecordBatchReader.from_batches(batch.schema, [batch])

    # --- writes ------------------------------------------------------------------------------
    def delete(self, predicate: Optional[str] = None, writer_properties: Any = None, *args: Any, post_commithook_properties: Optional[PostCommitHookProperties] = None, commit_properties: Optional[CommitProperties] = None, retry_on_conflict: Optional[int] = None) -> Dict[str, Any]:
        """Deletes the rows matching the SQL ``predicate`` (every row without one).

        ``retry_on_conflict=n`` (delta_rlc's own, off by default): when the commit aborts on a
        true conflict, the statement is planned again at the table's latest version and run
        again, up to ``n`` more times, with backoff; the result's ``statement_runs`` and
        ``earlier_runs`` say how often and why. Use it only when the statement's input does not
        come from reading this table outside the statement (a value read first and written
        back by a later call may be stale at the newer version).
        """
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("delete", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        out = self._table.delete(predicate, _commit(commit_properties, post_commithook_properties, retry_on_conflict), self._version, _writer(writer_properties))
        _after_commit(self._table.raw, post_commithook_properties)
        return self._moved(out)

    def update(
        self,
        updates: Optional[Mapping[str, str]] = None,
        new_values: Optional[Mapping[str, Any]] = None,
        predicate: Optional[str] = None,
        writer_properties: Any = None,
        error_on_type_mismatch: bool = True,
        *args: Any,
        post_commithook_properties: Optional[PostCommitHookProperties] = None,
        commit_properties: Optional[CommitProperties] = None,
        retry_on_conflict: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Sets columns to SQL expressions (``updates``) or Python values (``new_values``).
        ``retry_on_conflict``: as for ``delete``."""
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("update", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        # deltalake's messages, word for word (callers match on them).
        if updates is None and new_values is None:
            raise ValueError("Either updates or new_values need to be passed to update the table.")
        if updates is not None and new_values is not None:
            raise ValueError("Passing updates and new_values at same time is not allowed, pick one.")
        if updates is not None:
            pairs = list(updates.items())
        else:
            try:
                # deltalake's value kinds (plus None, bytes, dates and decimals); a dict or another
                # object is refused, not guessed into a struct.
                kinds = (type(None), bool, int, float, str, bytes, _decimal.Decimal, _dt.date, list)
                if not all(isinstance(v, kinds) for v in (new_values or {}).values()):
                    raise TypeError
                pairs = [(k, value_array([v])) for k, v in (new_values or {}).items()]
            except TypeError:
                raise TypeError("Invalid datatype provided in new_values, only int, float, bool, list, str or datetime or accepted.") from None
        # error_on_type_mismatch=False: a value that does not cast to its column is stored as
        # NULL (a NOT NULL column still fails), as deltalake does.
        out = self._table.update(pairs, predicate, _commit(commit_properties, post_commithook_properties, retry_on_conflict), self._version, _writer(writer_properties), not error_on_type_mismatch)
        _after_commit(self._table.raw, post_commithook_properties)
        return self._moved(out)

    def merge(
        self,
        source: Any,
        predicate: str,
        source_alias: Optional[str] = None,
        target_alias: Optional[str] = None,
        merge_schema: bool = False,
        error_on_type_mismatch: bool = True,
        writer_properties: Any = None,
        streamed_exec: bool = True,
        max_spill_size: Optional[int] = None,
        max_temp_directory_size: Optional[int] = None,
        *args: Any,
        post_commithook_properties: Optional[PostCommitHookProperties] = None,
        commit_properties: Optional[CommitProperties] = None,
        retry_on_conflict: Optional[int] = None,
    ) -> TableMerger:
        """MERGE builder; ``merge_schema=True`` adds the source's new columns to the table
        (schema evolution, in the MERGE's own commit). Columns are qualified by the aliases
        (``source`` and ``target`` unless given). ``retry_on_conflict``: as for ``delete`` (the
        source's rows are held, so a re-run reads them again)."""
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("merge", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        return TableMerger(self, source, predicate, source_alias or "source", target_alias or "target", commit_properties, merge_schema, post_commithook_properties, _writer(writer_properties), error_on_type_mismatch, retry_on_conflict)

    @property
    def optimize(self) -> TableOptimizer:
        return TableOptimizer(self)

    @property
    def alter(self) -> TableAlterer:
        return TableAlterer(self)

    def restore(self, target: Union[int, _dt.datetime, str], *, ignore_missing_files: bool = False, protocol_downgrade_allowed: bool = False, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> Dict[str, Any]:
        """Commits the files (and metadata) of an earlier version or timestamp as a new version.
        The protocol is kept (``protocol_downgrade_allowed=True`` is refused)."""
        _unsupported(protocol_downgrade_allowed=protocol_downgrade_allowed)
        commit = _commit(commit_properties, post_commithook_properties)
        if isinstance(target, int):
            out = _internal.restore(self._table.raw, target, None, ignore_missing_files, commit)
        else:
            out = _internal.restore(self._table.raw, None, _timestamp_ms(target), ignore_missing_files, commit)
        _after_commit(self._table.raw, post_commithook_properties)
        self._moved(out)
        out.setdefault("num_removed_file", out.get("num_removed_files"))
        out.setdefault("num_restored_file", out.get("num_restored_files"))
        return out

    def create_checkpoint(self) -> None:
        """Writes a checkpoint of this object's version (as deltalake does)."""
        _internal.create_checkpoint(self._table.raw, self._version)

    def cleanup_metadata(self) -> None:
        """Deletes log entries older than ``delta.logRetentionDuration`` that precede a
        checkpoint."""
        _internal.cleanup_metadata(self._table.raw)

    def compact_logs(self, starting_version: int, ending_version: int) -> None:
        """Writes ``_delta_log/<start>.<end>.compacted.json``: the reconciled actions of commits
        ``starting_version..=ending_version`` (below this object's version or at it), which readers
        may replay in their place."""
        if starting_version < 0 or ending_version < 0:
            raise ValueError(f"compact_logs: versions are not negative (got {starting_version}, {ending_version})")
        _internal.compact_logs(self._table.raw, starting_version, ending_version, self._version)

    def repair(self, dry_run: bool = False, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> Dict[str, Any]:
        """Removes live files that are missing from storage (deltalake's FSCK)."""
        commit_properties, post_commithook_properties = deprecate_positional_commit_args("repair", args, commit_properties, post_commithook_properties, legacy_order=("post_commithook_properties", "commit_properties"))
        out = _internal.repair(self._table.raw, dry_run, _commit(commit_properties, post_commithook_properties))
        if not dry_run:
            _after_commit(self._table.raw, post_commithook_properties)
            self._version = self._table.latest_version()
        return out

    def generate(self) -> None:
        raise _internal.UnsupportedError("generate (symlink manifests) is not supported by delta_rlc")

    def create_write_transaction(self, actions: List[Any], mode: str, schema: Any, partition_by: Any = None, partition_filters: Optional[FilterType] = None, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
        """Not supported, as ``create_table_with_add_actions``: files written elsewhere would be
        committed unchecked against the table's schema, and their caller-given statistics would
        decide what concurrent writers' conflict checks may skip (a wrong bound skips a true
        conflict). Write the data with ``write_deltalake``."""
        raise _internal.UnsupportedError("create_write_transaction is not supported by delta_rlc (files written elsewhere, and their statistics, are not validated): write the data with write_deltalake")

    def __datafusion_table_provider__(self, session: Any = None) -> Any:
        """deltalake's hook for DataFusion's ``SessionContext.register_table``: delta_rlc exports no
        DataFusion FFI table provider, so it refuses — RuntimeError when the ``datafusion``
        package is not installed (as deltalake), UnsupportedError otherwise. Query the table with
        SQL through ``QueryBuilder`` instead."""
        import importlib.metadata as _metadata

        try:
            installed = _metadata.version("datafusion")
        except _metadata.PackageNotFoundError:
            raise RuntimeError("the datafusion package is not installed, and delta_rlc exports no DataFusion table provider: use delta_rlc.QueryBuilder to query this table with SQL") from None
        raise _internal.UnsupportedError(f"the DataFusion table provider (__datafusion_table_provider__, datafusion=={installed}) is not supported by delta_rlc: use delta_rlc.QueryBuilder to query this table with SQL")

    def vacuum(self, retention_hours: Optional[int] = None, dry_run: bool = True, enforce_retention_duration: bool = True, *args: Any, post_commithook_properties: Any = None, commit_properties: Optional[CommitProperties] = None, full: bool = False, keep_versions: Any = None) -> List[str]:
        """Deletes (or, with ``dry_run``, lists) files no version within the retention uses."""
        if args:
            if len(args) > 4:
                raise TypeError(f"vacuum() takes at most 4 positional commit argument(s), got {len(args)}")
            warnings.warn("Passing commit arguments positionally to vacuum() is deprecated and will be removed in a future release. Use keyword arguments instead.", DeprecationWarning, stacklevel=2)
            given = dict(zip(("post_commithook_properties", "commit_properties", "full", "keep_versions"), args))
            for k, v in given.items():
                if {"post_commithook_properties": post_commithook_properties, "commit_properties": commit_properties, "full": full or None, "keep_versions": keep_versions}[k] is not None:
                    raise TypeError(f"vacuum() got multiple values for '{k}'")
            post_commithook_properties = given.get("post_commithook_properties", post_commithook_properties)
            commit_properties = given.get("commit_properties", commit_properties)
            full = given.get("full", full)
            keep_versions = given.get("keep_versions", keep_versions)
        if retention_hours is not None and retention_hours < 0:
            raise ValueError("The retention periods should be positive.")  # deltalake's message
        out = self._table.vacuum(dry_run, retention_hours, enforce_retention_duration, commit_properties, post_commithook_properties, full, keep_versions)
        if not dry_run:
            # The run committed VACUUM START and VACUUM END.
            self._version = self._table.latest_version()
            _after_commit(self._table.raw, post_commithook_properties)
        return out

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

    def __eq__(self, other: object) -> bool:
        # Two handles on one table at one version read the same rows (deltalake's DeltaTable, a
        # field-less dataclass, calls any two handles equal; here the table and version count).
        if not isinstance(other, DeltaTable):
            return NotImplemented
        return (self.table_uri, self._version) == (other.table_uri, other._version)

    def __hash__(self) -> int:
        return hash((self.table_uri, self._version))


def _create_deltalake(
    table_uri: str,
    schema: Schema,
    partition_by: List[str],
    mode: str,
    raise_if_key_not_exists: bool,
    name: Optional[str],
    description: Optional[str],
    configuration: Optional[Mapping[str, Optional[str]]],
    storage_options: Optional[Dict[str, str]],
    commit_properties: Optional[CommitProperties],
    post_commithook_properties: Optional[PostCommitHookProperties],
) -> Any:
    """``DeltaTable.create``'s work, with the arguments in deltalake's order (its
    ``deltalake.table._create_deltalake``): the new table's handle, or None when an existing
    table is kept (``mode="ignore"``).
    Unknown ``delta.*`` properties are refused by the engine whatever
    ``raise_if_key_not_exists`` says."""
    if mode not in ("error", "append", "overwrite", "ignore"):
        raise ValueError(f"mode must be 'error', 'append', 'overwrite' or 'ignore', got {mode!r}")
    # "overwrite" over a table is CREATE OR REPLACE TABLE: one commit with the new schema,
    # partitioning and properties that removes every file; the table keeps its id and history.
    replace = False
    if DeltaTable.is_deltatable(table_uri, storage_options):
        if mode == "error":
            raise _internal.DeltaError(f"a table already exists at {table_uri} (mode='error')")
        if mode == "ignore":
            return None
        if mode == "append":
            # deltalake's documented mode: "append" is an error when the table exists (create
            # never adds to a table; write_deltalake does).
            raise _internal.DeltaError(f"a table already exists at {table_uri} (DeltaTable.create with mode='append' does not add to it; use write_deltalake)")
        replace = True
    _commit(None, post_commithook_properties)
    return _internal.RawTable.create(
        table_uri,
        schema.to_pyarrow(),
        list(partition_by),
        {k: v for k, v in (configuration or {}).items() if v is not None},
        name,
        description,
        storage_options,
        None,
        None,
        _commit(commit_properties, post_commithook_properties),
        schema.to_json(),
        None,
        replace,
    )
