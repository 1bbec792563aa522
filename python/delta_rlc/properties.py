"""deltalake's Parquet writer options: ``WriterProperties``, ``ColumnProperties`` and
``BloomFilterProperties``, passed as ``writer_properties=`` to writes, DML, MERGE and OPTIMIZE.
The engine checks every value (a codec this build lacks, an unknown encoding or column is
refused, never ignored)."""

from __future__ import annotations

from typing import Any, Dict, Optional

__all__ = ["BloomFilterProperties", "ColumnProperties", "WriterProperties"]


class BloomFilterProperties:
    def __init__(self, set_bloom_filter_enabled: Optional[bool], fpp: Optional[float] = None, ndv: Optional[int] = None) -> None:
        if fpp is not None and (fpp <= 0 or fpp >= 1):
            raise ValueError("fpp must be between 0 and 1 exclusive")
        self.set_bloom_filter_enabled = set_bloom_filter_enabled
        self.fpp = fpp
        self.ndv = ndv

    def __str__(self) -> str:
        return f"set_bloom_filter_enabled: {self.set_bloom_filter_enabled}, fpp: {self.fpp}, ndv: {self.ndv}"


class ColumnProperties:
    def __init__(self, dictionary_enabled: Optional[bool] = None, statistics_enabled: Optional[str] = None, bloom_filter_properties: Optional[BloomFilterProperties] = None, encoding: Optional[str] = None) -> None:
        if isinstance(encoding, str) and dictionary_enabled:
            raise ValueError("Cannot specify dictionary_enabled=True and encoding")
        self.dictionary_enabled = dictionary_enabled
        self.statistics_enabled = statistics_enabled
        self.bloom_filter_properties = bloom_filter_properties
        self.encoding = encoding

    def _to_dict(self) -> Dict[str, Any]:
        bloom = None
        b = self.bloom_filter_properties
        if b is not None and b.set_bloom_filter_enabled:
            bloom = (b.fpp, b.ndv)
        return {"dictionary_enabled": self.dictionary_enabled, "encoding": self.encoding, "statistics_enabled": self.statistics_enabled, "bloom_filter": bloom}

    def __str__(self) -> str:
        return f"dictionary_enabled: {self.dictionary_enabled}, statistics_enabled: {self.statistics_enabled}, bloom_filter_properties: {self.bloom_filter_properties}, encoding: {self.encoding}"


_LEVELS = {"GZIP": (0, 10, 6), "BROTLI": (0, 11, 1), "ZSTD": (1, 22, 1)}


class WriterProperties:
    def __init__(
        self,
        data_page_size_limit: Optional[int] = None,
        dictionary_page_size_limit: Optional[int] = None,
        data_page_row_count_limit: Optional[int] = None,
        write_batch_size: Optional[int] = None,
        max_row_group_size: Optional[int] = None,
        compression: Optional[str] = None,
        compression_level: Optional[int] = None,
        statistics_truncate_length: Optional[int] = None,
        default_column_properties: Optional[ColumnProperties] = None,
        column_properties: Optional[Dict[str, ColumnProperties]] = None,
    ) -> None:
        self.data_page_size_limit = data_page_size_limit
        self.dictionary_page_size_limit = dictionary_page_size_limit
        self.data_page_row_count_limit = data_page_row_count_limit
        self.write_batch_size = write_batch_size
        self.max_row_group_size = max_row_group_size
        self.compression = None
        self.statistics_truncate_length = statistics_truncate_length
        self.default_column_properties = default_column_properties
        self.column_properties = column_properties
        if compression is None and compression_level is not None:
            raise ValueError("Providing a compression_level without the compression type is not possible")
        if compression is not None:
            name = compression.upper()
            if name in _LEVELS:
                lo, hi, default = _LEVELS[name]
                level = default if compression_level is None else compression_level
                if not lo <= level <= hi:
                    raise ValueError(f"Compression level for {name} should fall between {lo}-{hi}")
                self.compression = f"{name}({level})"
            else:
                self.compression = name

    def _to_dict(self) -> Dict[str, Any]:
        return {
            "compression": self.compression,
            "max_row_group_size": self.max_row_group_size,
            "data_page_size_limit": self.data_page_size_limit,
            "dictionary_page_size_limit": self.dictionary_page_size_limit,
            "data_page_row_count_limit": self.data_page_row_count_limit,
            "write_batch_size": self.write_batch_size,
            "statistics_truncate_length": self.statistics_truncate_length,
            "default_column": self.default_column_properties._to_dict() if self.default_column_properties else None,
            "columns": {k: v._to_dict() for k, v in (self.column_properties or {}).items()},
        }

    def __str__(self) -> str:
        return f"WriterProperties(compression={self.compression}, max_row_group_size={self.max_row_group_size})"


def _writer(props: Optional[WriterProperties]) -> Optional[Dict[str, Any]]:
    if props is None:
        return None
    if not isinstance(props, WriterProperties):
        raise TypeError(f"writer_properties takes a WriterProperties, got {type(props).__name__}")
    return props._to_dict()
