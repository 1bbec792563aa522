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


def _view(t: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.string_view()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.binary_view()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _view(f.type), f.nullable, f.metadata) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        f = t.value_field
        return pa.list_(pa.field(f.name, _view(f.type), f.nullable))
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", _view(t.key_type), False), pa.field("value", _view(t.item_type), t.item_field.nullable))
    return t


def as_view_reader(reader: Any) -> Any:
    """A pyarrow reader's rows with strings and binaries as view types (``Utf8View``,
    ``BinaryView``), as deltalake's DataFusion-backed reads return them, batch by batch; as arro3."""
    import pyarrow as pa

    schema = reader.schema
    viewed = pa.schema([pa.field(f.name, _view(f.type), f.nullable, f.metadata) for f in schema], metadata=schema.metadata)
    if viewed == schema:
        return as_reader(reader)
    return as_reader(pa.RecordBatchReader.from_batches(viewed, (b.cast(viewed) for b in reader)))
