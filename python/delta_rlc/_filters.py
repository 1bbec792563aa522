"""deltalake-style filters and Python values as typed terms for the engine. Each value becomes a
pyarrow array (``pa.array`` picks its Arrow type) that the binding turns into a literal: no value
is ever printed into SQL text, so a string holding quotes is only ever that string."""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

FilterLiteral = Tuple[str, str, Any]
FilterConjunction = List[FilterLiteral]
FilterType = Union[FilterConjunction, List[FilterConjunction]]
Term = Tuple[str, str, pa.Array]

# deltalake's operator spellings, each as the one the binding knows.
_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "in": "in", "not in": "not in"}


def _normalized(value: Any) -> Any:
    # An aware datetime as the UTC instant it names (timestamps are stored in UTC).
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        return value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    # A float as the decimal its shortest repr spells, as Spark reads the literal `1.005` (and as
    # Spark casts a double to DECIMAL): 1.005 into DECIMAL(10,2) is 1.01, not the binary
    # double's 1.00. A repr with an exponent, NaN and infinities stay doubles.
    # -0.0 stays a double: a decimal has no negative zero, and `new_values={"x": -0.0}` stored
    # 0.0 (red team helper-49).
    if isinstance(value, float) and math.isfinite(value) and "e" not in repr(value) and math.copysign(1.0, value) > 0:
        return _decimal.Decimal(repr(value))
    return value


def _normalized_list(values: Sequence[Any]) -> List[Any]:
    out = [_normalized(v) for v in values]
    if any(isinstance(v, _decimal.Decimal) for v in out):
        # pyarrow does not mix ints and decimals in one array: the ints as decimals.
        out = [_decimal.Decimal(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in out]
    return out


def value_array(values: Sequence[Any]) -> pa.Array:
    """Python values as one pyarrow array (raises TypeError when they have no common type)."""
    try:
        return pa.array(_normalized_list(values))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as e:
        raise TypeError(f"cannot use {list(values)!r} as values: {e}") from None


def _term(f: Sequence[Any]) -> Term:
    if not isinstance(f, (list, tuple)) or len(f) != 3:
        raise ValueError(f"a filter is (column, op, value), got {f!r}")
    col, op, value = f
    op_n = _OPS.get(str(op).strip().lower())
    if op_n is None:
        raise ValueError(f"filter {tuple(f)!r}: unknown operator {op!r}")
    if op_n in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise ValueError(f"filter {tuple(f)!r}: '{op}' needs a list of values")
        return (str(col), op_n, value_array(list(value)))
    return (str(col), op_n, value_array([value]))


def typed_filters(filters: Optional[FilterType]) -> Optional[List[List[Term]]]:
    """deltalake filters — a conjunction of (column, op, value), or a list of them OR-ed — as an
    OR of ANDs of typed terms; None for no filter."""
    if not filters:
        return None
    if isinstance(filters[0], (list, tuple)) and filters[0] and isinstance(filters[0][0], (list, tuple)):
        return [[_term(f) for f in conj] for conj in filters]  # type: ignore[union-attr]
    return [[_term(f) for f in filters]]  # type: ignore[arg-type]
