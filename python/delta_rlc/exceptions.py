"""Exceptions, shaped like deltalake's: catch ``CommitFailedError`` (or one of its subclasses) for
a true conflict with a concurrent writer; its fields say who won and why the engine could not
reconcile the two commits."""

from delta_rlc._internal import (
    CommitFailedError,
    CommitUnknownError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    DeltaError,
    DeltaProtocolError,
    InvalidInputError,
    MetadataChangedError,
    ProtocolChangedError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedError,
)

__all__ = [
    "CommitFailedError",
    "CommitUnknownError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "DeltaError",
    "DeltaProtocolError",
    "InvalidInputError",
    "MetadataChangedError",
    "ProtocolChangedError",
    "SchemaMismatchError",
    "TableNotFoundError",
    "UnsupportedError",
]
