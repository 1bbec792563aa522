"""delta_rlc: Delta Lake tables with row-level concurrency, behind deltalake's API.

Switching from deltalake is an import change::

    from delta_rlc import DeltaTable, write_deltalake

Many processes may write one table at once: a commit aborts (``CommitFailedError``) only when a
concurrent commit truly touched the rows it read or changed; everything else is reconciled.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

try:
    from importlib.metadata import version as _version

    __version__ = _version("delta-rlc")
except Exception:  # running from a source tree that was never installed
    __version__ = "0.1.0"

from delta_rlc import _internal
from delta_rlc.exceptions import *  # noqa: F401,F403 (the exception classes)
from delta_rlc.exceptions import __all__ as _exceptions
from delta_rlc.query import QueryBuilder
from delta_rlc.schema import DataType, Field, Schema, VariantType
from delta_rlc.table import ConflictConfig, DeltaTable, DeltaTableConfig, Metadata, ProtocolVersions, TableAlterer, TableMerger, TableOptimizer
from delta_rlc.transaction import CommitProperties, PostCommitHookProperties, Transaction
from delta_rlc.writer import BloomFilterProperties, ColumnProperties, WriterProperties, convert_to_deltalake, write_deltalake


class TableFeatures:
    """Table features by deltalake's names (``dt.alter.add_feature``). As deltalake's, a plain
    class of constants (not an ``enum.Enum``): ``str`` gives ``TableFeatures.DeletionVectors``;
    ``.name`` / ``.value`` give the name."""

    __slots__ = ("name",)

    ColumnMapping: "TableFeatures"
    DeletionVectors: "TableFeatures"
    TimestampWithoutTimezone: "TableFeatures"
    TimestampNanos: "TableFeatures"
    V2Checkpoint: "TableFeatures"
    AppendOnly: "TableFeatures"
    Invariants: "TableFeatures"
    CheckConstraints: "TableFeatures"
    ChangeDataFeed: "TableFeatures"
    GeneratedColumns: "TableFeatures"
    IdentityColumns: "TableFeatures"
    RowTracking: "TableFeatures"
    DomainMetadata: "TableFeatures"
    IcebergCompatV1: "TableFeatures"
    VariantType: "TableFeatures"
    VariantTypePreview: "TableFeatures"

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def value(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"TableFeatures.{self.name}"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableFeatures) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("TableFeatures", self.name))


for _name in TableFeatures.__annotations__:
    setattr(TableFeatures, _name, TableFeatures(_name))
del _name


def rust_core_version() -> str:
    """The engine's version (deltalake reports its Rust core's)."""
    return __version__


def init_tracing(endpoint: Optional[str] = None) -> None:
    raise UnsupportedError("init_tracing (OpenTelemetry export) is not supported by delta_rlc")  # noqa: F405


def enable_nanosecond_timestamps() -> None:
    raise RuntimeError("nanosecond timestamps are not supported by delta_rlc (Delta stores microseconds)")


def _disable_nanosecond_timestamps() -> None:
    """Nanosecond timestamps are never on here (deltalake's test hook)."""


def _nanosecond_timestamps_enabled() -> bool:
    return False


def sql(statement: str, storage_options: Optional[Dict[str, str]] = None, conflict: Optional[ConflictConfig] = None) -> Any:
    """Runs one SQL statement naming tables by path (``SELECT * FROM './t'``).

    Queries return a ``pyarrow.RecordBatchReader``; writes return the commit's metrics; other
    statements their message (or None).
    """
    rows, commit, message = _internal.sql(statement, storage_options, (conflict or ConflictConfig())._to_dict())
    if rows is not None:
        return rows
    if commit is not None:
        return commit
    return message


__all__ = _exceptions + [
    "BloomFilterProperties",
    "ColumnProperties",
    "CommitProperties",
    "ConflictConfig",
    "DataType",
    "DeltaTable",
    "DeltaTableConfig",
    "Field",
    "Metadata",
    "PostCommitHookProperties",
    "ProtocolVersions",
    "QueryBuilder",
    "Schema",
    "TableAlterer",
    "TableFeatures",
    "TableMerger",
    "TableOptimizer",
    "Transaction",
    "VariantType",
    "WriterProperties",
    "__version__",
    "convert_to_deltalake",
    "enable_nanosecond_timestamps",
    "init_tracing",
    "rust_core_version",
    "sql",
    "write_deltalake",
]
