"""Commit options and transactions, as deltalake's ``deltalake.transaction``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from delta_rlc import _internal

__all__ = ["AddAction", "CommitProperties", "PostCommitHookProperties", "RemoveAction", "Transaction", "create_table_with_add_actions"]


class Transaction:
    """An application's progress marker committed with the data (a ``txn`` action): read it back
    with ``DeltaTable.transaction_version(app_id)`` to make a pipeline's writes idempotent. Two
    concurrent commits of the same ``app_id`` never both land (the second aborts with
    ``ConcurrentTransactionError``)."""

    def __init__(self, app_id: str, version: int, last_updated: Optional[int] = None) -> None:
        if not isinstance(app_id, str) or not app_id:
            raise ValueError("a Transaction needs an app_id")
        self.app_id = app_id
        self.version = int(version)
        self.last_updated = None if last_updated is None else int(last_updated)

    def __repr__(self) -> str:
        return f"Transaction(app_id={self.app_id!r}, version={self.version}, last_updated={self.last_updated})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transaction) and (other.app_id, other.version, other.last_updated) == (self.app_id, self.version, self.last_updated)


@dataclass
class AddAction:
    path: str
    size: int
    partition_values: Mapping[str, Optional[str]]
    modification_time: int
    data_change: bool
    stats: str


@dataclass
class RemoveAction:
    """deltalake's file removal for ``DeltaTable.create_write_transaction`` (which delta_rlc
    refuses: see there)."""

    path: str
    data_change: bool
    deletion_timestamp: Optional[int]
    size: Optional[int] = None
    partition_values: Optional[Mapping[str, Optional[str]]] = None


class PostCommitHookProperties:
    """What runs after a commit. ``create_checkpoint=True`` writes the checkpoint the table's
    ``delta.checkpointInterval`` asks for at this version (``False``: none now; a later commit at
    an interval writes one); ``cleanup_expired_logs=True`` deletes expired log entries after the
    commit (``None``/``False``: not)."""

    def __init__(self, create_checkpoint: bool = True, cleanup_expired_logs: Optional[bool] = None) -> None:
        self.create_checkpoint = create_checkpoint
        self.cleanup_expired_logs = cleanup_expired_logs

    def _check(self) -> None:
        if not isinstance(self.create_checkpoint, bool):
            raise TypeError(f"create_checkpoint must be a bool, got {type(self.create_checkpoint).__name__}")


class CommitProperties:
    """Options of one commit: ``custom_metadata`` (written into ``commitInfo``),
    ``max_commit_retries`` (lost races reconciled before giving up) and ``app_transactions``
    (``Transaction`` markers committed with the data)."""

    def __init__(self, custom_metadata: Optional[Dict[str, Any]] = None, max_commit_retries: Optional[int] = None, app_transactions: Optional[List[Transaction]] = None) -> None:
        self.custom_metadata = custom_metadata
        self.max_commit_retries = max_commit_retries
        self.app_transactions = app_transactions

    def _to_dict(self) -> Dict[str, Any]:
        meta = None
        if self.custom_metadata is not None:
            import json
            from collections.abc import Mapping

            # deltalake's rules: a mapping with string keys whose values are JSON (no NaN).
            if not isinstance(self.custom_metadata, Mapping):
                raise ValueError(f"custom_metadata must be a mapping, got {type(self.custom_metadata).__name__}")
            if not all(isinstance(k, str) for k in self.custom_metadata):
                raise ValueError("custom_metadata keys must be strings")
            def _check_ints(v: Any) -> None:
                # JSON numbers are read as 64-bit integers or doubles: a wider int would change.
                if isinstance(v, int) and not isinstance(v, bool) and not (-(2**63) <= v < 2**64):
                    raise ValueError(f"custom_metadata values must be JSON numbers a 64-bit integer holds, got {v}")
                if isinstance(v, Mapping):
                    for x in v.values():
                        _check_ints(x)
                elif isinstance(v, (list, tuple)):
                    for x in v:
                        _check_ints(x)

            _check_ints(dict(self.custom_metadata))
            try:
                meta = json.dumps(dict(self.custom_metadata), allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"custom_metadata values must be JSON: {e}") from None
        txns = None
        if self.app_transactions:
            txns = []
            for t in self.app_transactions:
                if not isinstance(t, Transaction):
                    raise TypeError(f"app_transactions takes Transaction objects, got {type(t).__name__}")
                txns.append((t.app_id, t.version, t.last_updated))
        return {"custom_metadata": meta, "max_commit_retries": self.max_commit_retries, "app_transactions": txns}

    def __repr__(self) -> str:
        return f"CommitProperties(custom_metadata={self.custom_metadata!r}, max_commit_retries={self.max_commit_retries!r}, app_transactions={self.app_transactions!r})"


def _commit(props: Optional[CommitProperties], hooks: Optional[PostCommitHookProperties] = None, retry_on_conflict: Optional[int] = None) -> Optional[Dict[str, Any]]:
    if hooks is not None:
        hooks._check()
    out = props._to_dict() if props is not None else None
    if hooks is not None and not hooks.create_checkpoint:
        out = dict(out or {})
        out["create_checkpoint"] = False
    if retry_on_conflict is not None:
        # Re-execution on a true conflict (delta_rlc's own keyword; off unless asked for).
        if isinstance(retry_on_conflict, bool) or not isinstance(retry_on_conflict, int) or retry_on_conflict < 0:
            raise ValueError(f"retry_on_conflict must be a non-negative int, got {retry_on_conflict!r}")
        out = dict(out or {})
        out["retry_on_conflict"] = retry_on_conflict
    return out


def _after_commit(raw: Any, hooks: Optional[PostCommitHookProperties]) -> None:
    if hooks is not None and hooks.cleanup_expired_logs:
        _internal.cleanup_metadata(raw)


def create_table_with_add_actions(table_uri: str, schema: Any, add_actions: List[AddAction], mode: str = "error", partition_by: Any = None, name: Optional[str] = None, description: Optional[str] = None, configuration: Any = None, storage_options: Optional[Dict[str, str]] = None, *args: Any, commit_properties: Optional[CommitProperties] = None, post_commithook_properties: Optional[PostCommitHookProperties] = None) -> None:
    """Not supported: a table made of files written elsewhere is not checked against its schema
    or statistics here (use ``write_deltalake``)."""
    raise _internal.UnsupportedError("create_table_with_add_actions is not supported by delta_rlc (files written elsewhere are not validated)")
