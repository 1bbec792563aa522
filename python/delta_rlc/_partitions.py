"""Partition filters over the files' partition values, and the add-actions table: deltalake's
``partitions()``, ``file_uris(filters)`` and ``get_add_actions()`` shapes."""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import json
from typing import Any, Dict, List, Optional, Sequence

import pyarrow as pa

from delta_rlc import _internal
from delta_rlc._util import encode_partition_value
from delta_rlc.schema import PrimitiveType, Schema


def _typed(text: Optional[str], t: Any) -> Any:
    """A partition value (its log string) as a value of the column's type, for comparisons."""
    if text is None:
        return None
    name = t.type if isinstance(t, PrimitiveType) else "string"
    if name in ("long", "integer", "short", "byte"):
        return int(text)
    if name in ("double", "float"):
        return float(text)
    if name == "boolean":
        # Only the log's two spellings: "1" or "yes" is no boolean (deltalake refuses it too;
        # read as False it matched the false partition).
        if text.lower() not in ("true", "false"):
            raise ValueError(f"Failed to parse value '{text}' as 'boolean'")
        return text.lower() == "true"
    if name == "date":
        return _dt.date.fromisoformat(text)
    if name in ("timestamp", "timestamp_ntz"):
        # The log holds '2020-01-01 00:00:00' (Spark) or '2020-01-01T00:00:00.000000Z' (others):
        # compared as instants (a zoned column) or local values, never as text, where the two
        # spellings of one instant differ.
        value = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if name == "timestamp":
            return value.replace(tzinfo=_dt.timezone.utc) if value.tzinfo is None else value.astimezone(_dt.timezone.utc)
        return value.replace(tzinfo=None)
    if name.startswith("decimal"):
        return _decimal.Decimal(text)
    return text


def _coerce(value: Any, t: Any) -> Any:
    if value is None:
        return None
    given = value
    if not isinstance(value, str):
        # deltalake sends each filter value to the engine as the text the log would hold for it
        # (``encode_partition_value``: 3 -> "3", 2021.0 -> "2021.0", True -> "true", a date
        # -> "2023-01-01") and reads that text as the column's type, so 3 matches the string
        # partition "3" and True the string "true". A value it cannot encode (a dict, …) is its
        # ValueError; a Decimal is also taken here, as its text.
        value = str(value) if isinstance(value, _decimal.Decimal) else encode_partition_value(value)
    if value == "":
        return None  # deltalake: the empty string stands for the null partition
    try:
        return _typed(value, t)
    except (ValueError, _decimal.InvalidOperation) as e:
        if isinstance(t, PrimitiveType) and t.type in ("boolean", "timestamp", "timestamp_ntz"):
            raise _internal.DeltaError(f"Invalid partition filter value {given!r}: {e}") from None
        return given  # not a value of the column's type (3.5 for an integer): compared as given


def _rust_debug(value: Any) -> str:
    """A filter as deltalake's message prints it (Rust's Debug of the string tuple)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_rust_debug(v) for v in value) + "]"
    return json.dumps(value if isinstance(value, str) else _encoded(value), ensure_ascii=False)


def _encoded(value: Any) -> str:
    try:
        return encode_partition_value(value)
    except ValueError:
        return str(value)


_SINGLE_OPS = {"=", "==", "!=", "<>", "<", "<=", ">", ">="}
_LIST_OPS = {"in", "not in"}


def _check(f: Sequence[Any], schema_names: List[str]) -> None:
    """deltalake's refusals of a malformed filter, with its messages."""
    if not isinstance(f, (list, tuple)) or len(f) != 3:
        raise ValueError(f"a filter is (column, op, value), got {f!r}")
    col, op, value = f
    op_n = str(op).strip().lower()
    is_list = isinstance(value, (list, tuple, set, frozenset))
    if not col or (op_n not in (_LIST_OPS if is_list else _SINGLE_OPS)):
        shown = (col, op, sorted(value, key=str) if isinstance(value, (set, frozenset)) else value)
        raise _internal.DeltaError(f"Invalid partition filter found: ({', '.join(_rust_debug(x) for x in shown)}).")
    if col not in schema_names:
        raise _internal.SchemaMismatchError(f"Data does not match the schema or partitions of the table: Field '{col}' is not a root table field.")


def _holds(pv: Dict[str, Optional[str]], f: Sequence[Any], types: Dict[str, Any], partition_columns: List[str]) -> bool:
    _check(f, list(types))
    col, op, value = f
    if col not in partition_columns:
        raise ValueError(f"{col} is not a partition column (partition columns: {partition_columns})")
    t = types.get(col)
    raw = pv.get(col)
    have = None if raw is None or raw == "" else _typed(raw, t)
    op = str(op).strip().lower()
    # deltalake's (SQL's) three-valued logic: a null partition satisfies only "= ''" (the null
    # partition) and "!= ''" is the non-null ones; a comparison with a null is never true.
    if op in ("in", "not in"):
        values = [_coerce(v, t) for v in value]
        if have is None:
            return False
        if op == "in":
            return have in [v for v in values if v is not None]
        return None not in values and have not in values
    want = _coerce(value, t)
    if op in ("=", "=="):
        return have is None if want is None else (have is not None and have == want)
    if op in ("!=", "<>"):
        return have is not None if want is None else (have is not None and have != want)
    if have is None or want is None:
        return False
    return {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want}[op]


def physical_names(schema: Schema) -> Dict[str, str]:
    """Logical column name → the name the log keys partition values and stats by (the physical
    name under column mapping, else the same)."""
    return {f.name: str(f.metadata.get("delta.columnMapping.physicalName", f.name)) for f in schema.fields}


def logical_values(pv: Dict[str, Optional[str]], schema: Schema) -> Dict[str, Optional[str]]:
    """A file's partition values keyed by logical column name."""
    return {logical: pv.get(physical) for logical, physical in physical_names(schema).items() if physical in pv}


def matches_filters(pv: Dict[str, Optional[str]], filters: Any, schema: Schema, partition_columns: List[str]) -> bool:
    """Whether a file's partition values (keyed by logical name) satisfy deltalake-style filters
    (a conjunction of (column, op, value), or a list of conjunctions OR-ed)."""
    types = {f.name: f.type for f in schema.fields}
    if filters and isinstance(filters[0], (list, tuple)) and filters[0] and isinstance(filters[0][0], (list, tuple)):
        return any(all(_holds(pv, f, types, partition_columns) for f in conj) for conj in filters)
    return all(_holds(pv, f, types, partition_columns) for f in filters)


def _stats_columns(arrow: pa.Schema, partition_columns: List[str], configuration: Dict[str, str]) -> List[pa.Field]:
    """The columns the table collects statistics for (the protocol's rule, as deltalake lists
    them): ``delta.dataSkippingStatsColumns`` when set, else the first
    ``delta.dataSkippingNumIndexedCols`` (default 32; -1 = all) data columns."""
    data = [f for f in arrow if f.name not in partition_columns]
    named = configuration.get("delta.dataSkippingStatsColumns")
    if named:
        wanted = {n.strip().strip("`").lower() for n in named.split(",") if n.strip()}
        data = [f for f in data if f.name.lower() in wanted]
    else:
        try:
            n = int(configuration.get("delta.dataSkippingNumIndexedCols", "32"))
        except ValueError:
            n = 32
        if n >= 0:
            data = data[:n]
    return [f for f in data if not pa.types.is_nested(f.type)]


def add_actions_table(adds: List[Dict[str, Any]], schema: Schema, partition_columns: List[str], flatten: bool, configuration: Optional[Dict[str, str]] = None) -> pa.Table:
    """deltalake's ``get_add_actions`` columns: path, size_bytes, modification_time,
    num_records, null_count / min / max (structs over the stats columns) and partition."""
    arrow = schema.to_pyarrow()
    physical = physical_names(schema)
    stats = [json.loads(a["stats"]) if a.get("stats") else {} for a in adds]
    data_cols = _stats_columns(arrow, partition_columns, configuration or {})
    cols: Dict[str, pa.Array] = {
        "path": pa.array([a["path"] for a in adds], pa.string()),
        "size_bytes": pa.array([a["size_bytes"] for a in adds], pa.int64()),
        "modification_time": pa.array([a["modification_time"] for a in adds], pa.int64()),
        "num_records": pa.array([s.get("numRecords") for s in stats], pa.int64()),
    }
    fields = [pa.field("path", pa.string(), False), pa.field("size_bytes", pa.int64(), False), pa.field("modification_time", pa.int64(), False), pa.field("num_records", pa.int64())]

    def stat_array(key: str, f: pa.Field) -> pa.Array:
        values = [(s.get(key) or {}).get(physical.get(f.name, f.name)) for s in stats]
        t = pa.int64() if key == "nullCount" else f.type
        try:
            return pa.array(values, t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            return pa.array([None if v is None else str(v) for v in values], pa.string()).cast(t, safe=False)

    for key, name in (("nullCount", "null_count"), ("minValues", "min"), ("maxValues", "max")):
        arrays = [stat_array(key, f) for f in data_cols]
        if flatten:
            for f, arr in zip(data_cols, arrays):
                cols[f"{name}.{f.name}"] = arr
                fields.append(pa.field(f"{name}.{f.name}", arr.type))
        elif data_cols:
            arr = pa.StructArray.from_arrays(arrays, names=[f.name for f in data_cols])
            cols[name] = arr
            fields.append(pa.field(name, arr.type))
    if partition_columns:
        types = {f.name: f.type for f in arrow}
        parts = []
        for c in partition_columns:
            raw = pa.array([a["partition_values"].get(physical.get(c, c)) for a in adds], pa.string())
            try:
                parts.append(raw.cast(types.get(c, pa.string())))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                parts.append(raw)
        if flatten:
            for c, arr in zip(partition_columns, parts):
                cols[f"partition.{c}"] = arr
                fields.append(pa.field(f"partition.{c}", arr.type))
        else:
            arr = pa.StructArray.from_arrays(parts, names=partition_columns)
            cols["partition"] = arr
            fields.append(pa.field("partition", arr.type))
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))
