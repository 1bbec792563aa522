"""deltalake's Parquet writer options, as data: ``WriterProperties``, ``ColumnProperties`` and
``BloomFilterProperties``. delta_rlc writes with its own Parquet settings; passing these to a
write refuses it with ``UnsupportedError`` (they are never silently ignored)."""

from __future__ import annotations

from typing import Dict, Optional

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

    def __str__(self) -> str:
        return f"dictionary_enabled: {self.dictionary_enabled}, statistics_enabled: {self.statistics_enabled}, bloom_filter_properties: {self.bloom_filter_properties}, encoding: {self.encoding}"


_LEVELS = {"GZIP": (1, 9, 6), "BROTLI": (1, 11, 1), "ZSTD": (1, 22, 1)}


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

    def __str__(self) -> str:
        return f"WriterProperties(compression={self.compression}, max_row_group_size={self.max_row_group_size})"
