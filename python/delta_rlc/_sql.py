"""Python values and deltalake-style filters as SQL text the engine parses."""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
from typing import Any, Iterable, List, Sequence, Tuple, Union

FilterLiteral = Tuple[str, str, Any]
FilterConjunction = List[FilterLiteral]
FilterType = Union[FilterConjunction, List[FilterConjunction]]


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(value: Any) -> str:
    """A Python value as a SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return "CAST('inf' AS DOUBLE)" if value > 0 else "CAST('-inf' AS DOUBLE)"
        return repr(value)
    if isinstance(value, _decimal.Decimal):
        return f"CAST('{value}' AS DECIMAL(38, {max(0, -value.as_tuple().exponent)}))"
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, (bytes, bytearray)):
        return "X'" + bytes(value).hex() + "'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"cannot use {type(value).__name__} as a SQL value: {value!r}")


_OPS = {"=": "=", "==": "=", "!=": "<>", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _one(f: Sequence[Any]) -> str:
    if len(f) != 3:
        raise ValueError(f"a filter is (column, op, value), got {f!r}")
    col, op, value = f
    c = quote_ident(col)
    op_l = str(op).strip().lower()
    if op_l in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise ValueError(f"filter {f!r}: '{op}' needs a list of values")
        values = ", ".join(literal(v) for v in value)
        return f"{c} {op_l.upper()} ({values})"
    if op_l not in _OPS:
        raise ValueError(f"filter {f!r}: unknown operator {op!r}")
    if value is None:
        if _OPS[op_l] == "=":
            return f"{c} IS NULL"
        if _OPS[op_l] == "<>":
            return f"{c} IS NOT NULL"
    return f"{c} {_OPS[op_l]} {literal(value)}"


def filters_to_sql(filters: FilterType | None) -> str | None:
    """deltalake filters (a conjunction of (col, op, value), or a list of them OR-ed) as SQL."""
    if not filters:
        return None
    if isinstance(filters[0], (list, tuple)) and filters[0] and isinstance(filters[0][0], (list, tuple)):
        ors = ["(" + " AND ".join(_one(f) for f in conj) + ")" for conj in filters]
        return " OR ".join(ors)
    return " AND ".join(_one(f) for f in filters)  # type: ignore[arg-type]
