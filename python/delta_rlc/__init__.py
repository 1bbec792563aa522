"""delta_rlc: Delta Lake tables with row-level concurrency, behind deltalake's API.

Switching from deltalake is an import change::

    from delta_rlc import DeltaTable, write_deltalake

Many processes may write one table at once: a commit aborts (``CommitFailedError``) only when a
concurrent commit truly touched the rows it read or changed; everything else is reconciled.
"""

from __future__ import annotations

import enum
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


class TableFeatures(enum.Enum):
    """Table features by deltalake's names (``dt.alter.add_feature``)."""

    ColumnMapping = "ColumnMapping"
    DeletionVectors = "DeletionVectors"
    TimestampWithoutTimezone = "TimestampWithoutTimezone"
    V2Checkpoint = "V2Checkpoint"
    AppendOnly = "AppendOnly"
    Invariants = "Invariants"
    CheckConstraints = "CheckConstraints"
    ChangeDataFeed = "ChangeDataFeed"
    GeneratedColumns = "GeneratedColumns"
    IdentityColumns = "IdentityColumns"
    RowTracking = "RowTracking"
    DomainMetadata = "DomainMetadata"
    IcebergCompatV1 = "IcebergCompatV1"
    VariantType = "VariantType"
    VariantTypePreview = "VariantTypePreview"


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
