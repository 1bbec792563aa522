"""``QueryBuilder``: SQL over Delta tables registered by name, as deltalake's
``deltalake.query``. Queries, and definitions that write nothing (``CREATE EXTERNAL TABLE … STORED
AS CSV|PARQUET|JSON LOCATION …``, ``CREATE VIEW``), kept for the builder's later queries; a
statement that would change something is refused before it runs."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from delta_rlc import _internal
from delta_rlc._arrow import as_view_reader

__all__ = ["QueryBuilder"]


class QueryBuilder:
    """``QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()``: each registered
    table is read at the version its ``DeltaTable`` is loaded at."""

    def __init__(self, session_config: Optional[Dict[str, str]] = None) -> None:
        if session_config:
            raise _internal.UnsupportedError(f"QueryBuilder(session_config={session_config!r}) is not supported by delta_rlc")
        self._tables: List[Tuple[str, Any]] = []
        # CREATE EXTERNAL TABLE / CREATE VIEW statements run so far, defined again in each query's
        # session (they write nothing; deltalake's QueryBuilder keeps them in its context).
        self._definitions: List[str] = []

    def register(self, table_name: str, delta_table: Any) -> "QueryBuilder":
        self._tables = [(n, t) for n, t in self._tables if n.lower() != table_name.lower()]
        self._tables.append((table_name, delta_table))
        return self

    def execute(self, sql: str) -> Any:
        tables = [(name, dt._table.raw, dt.version()) for name, dt in self._tables]
        rows, defined = _internal.query(sql, tables, self._definitions)
        if defined:
            self._definitions.append(sql)
        return as_view_reader(rows)
