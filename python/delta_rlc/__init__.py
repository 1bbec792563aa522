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
from delta_rlc.table import (
    CommitProperties,
    ConflictConfig,
    DeltaTable,
    Metadata,
    ProtocolVersions,
    Schema,
    TableMerger,
    TableOptimizer,
)
from delta_rlc.writer import write_deltalake


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
    "CommitProperties",
    "ConflictConfig",
    "DeltaTable",
    "Metadata",
    "ProtocolVersions",
    "Schema",
    "TableMerger",
    "TableOptimizer",
    "sql",
    "write_deltalake",
]
