"""Small helpers deltalake exposes in ``deltalake._util``: partition value encoding (the Delta
protocol's rules) and the deprecation path for commit options passed positionally."""

from __future__ import annotations

import warnings
from datetime import date, datetime
from typing import Any, Tuple


def encode_partition_value(val: Any) -> str:
    """A Python value as the Delta log writes it as a partition value."""
    if isinstance(val, bool):
        return str(val).lower()
    if isinstance(val, str):
        return val
    if isinstance(val, (int, float)):
        return str(val)
    if isinstance(val, datetime):
        return val.isoformat(sep=" ")
    if isinstance(val, date):
        return val.isoformat()
    if isinstance(val, bytes):
        return val.decode("unicode_escape", "backslashreplace")
    raise ValueError(f"Could not encode partition value for type: {val}")


def deprecate_positional_commit_args(
    method_name: str,
    args: Tuple[Any, ...],
    commit_properties: Any = None,
    post_commithook_properties: Any = None,
    legacy_order: Tuple[str, ...] = ("commit_properties", "post_commithook_properties"),
) -> Tuple[Any, Any]:
    """Commit options given positionally (the old signatures): mapped in ``legacy_order`` with a
    DeprecationWarning; too many, or one given twice, is a TypeError."""
    if not args:
        return commit_properties, post_commithook_properties
    if len(args) > len(legacy_order):
        raise TypeError(f"{method_name}() takes at most {len(legacy_order)} positional commit argument(s), got {len(args)}")
    warnings.warn(
        f"Passing commit arguments positionally to {method_name}() is deprecated and will be removed in a future release. Use keyword arguments instead.",
        DeprecationWarning,
        stacklevel=3,
    )
    mapped = dict(zip(legacy_order, args))
    if "commit_properties" in mapped and commit_properties is not None:
        raise TypeError(f"{method_name}() got multiple values for 'commit_properties'")
    if "post_commithook_properties" in mapped and post_commithook_properties is not None:
        raise TypeError(f"{method_name}() got multiple values for 'post_commithook_properties'")
    return mapped.get("commit_properties", commit_properties), mapped.get("post_commithook_properties", post_commithook_properties)
