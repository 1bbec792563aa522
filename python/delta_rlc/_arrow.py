"""The Arrow objects deltalake returns: arro3 readers and tables when arro3 is installed (as
with deltalake), else pyarrow's."""

from __future__ import annotations

from typing import Any


def as_reader(reader: Any) -> Any:
    """A pyarrow RecordBatchReader as arro3's (zero-copy, through the C stream interface)."""
    try:
        from arro3.core import RecordBatchReader
    except ImportError:
        return reader
    return RecordBatchReader.from_stream(reader)


def as_table(table: Any) -> Any:
    try:
        from arro3.core import Table
    except ImportError:
        return table
    return Table.from_arrow(table)
