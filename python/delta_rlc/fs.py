"""deltalake.fs: a pyarrow file system over a table's store.

``DeltaStorageHandler(table_uri, options, known_sizes)`` is a ``pyarrow.fs.FileSystemHandler``;
``pyarrow.fs.PyFileSystem(DeltaStorageHandler(uri))`` reads and writes the objects under
``table_uri`` through the same store, storage options and retries a ``DeltaTable`` there uses
(local disk, S3, Azure, GCS). Paths are relative to ``table_uri``. Directories are key
prefixes: ``create_dir`` does nothing, and a directory exists while a file lies under it.

Nothing written here is a commit: writing into ``_delta_log`` through it is not how a table is
changed (use the table's own operations, which commit with put-if-absent).
"""

from __future__ import annotations

import io
import warnings
from typing import Any, Dict, List, Optional

import pyarrow as pa
from pyarrow.fs import FileInfo, FileSelector, FileSystemHandler, FileType

from delta_rlc import _internal

__all__ = ["DeltaStorageHandler"]

# Object stores take multipart parts of at least 5 MiB (deltalake warns below it).
_MIN_PART = 5 * 1024 * 1024


def _rel(path: str) -> str:
    return str(path).strip("/")


class _InputFile(io.RawIOBase):
    """A file read by ranges as it is read (nothing is fetched until asked for)."""

    def __init__(self, store: Any, path: str, size: int) -> None:
        super().__init__()
        self._store, self._path, self._size, self._pos = store, path, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def size(self) -> int:
        return self._size

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}.get(whence)
        if base is None:
            raise ValueError(f"invalid whence {whence}")
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def read(self, size: int = -1) -> bytes:
        end = self._size if size is None or size < 0 else min(self._size, self._pos + size)
        if end <= self._pos:
            return b""
        try:
            data = self._store.read_range(self._path, self._pos, end)
        except _internal.TableNotFoundError as e:
            raise FileNotFoundError(f"{self._path}: no such file") from e
        self._pos += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


class _OutputFile(io.RawIOBase):
    """A file written in one put when it is closed (a reader never sees part of it)."""

    def __init__(self, store: Any, path: str) -> None:
        super().__init__()
        self._store, self._path, self._buf = store, path, io.BytesIO()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        return self._buf.write(b)

    def tell(self) -> int:
        return self._buf.tell()

    def close(self) -> None:
        if not self.closed:
            self._store.write(self._path, self._buf.getvalue())
            self._buf = io.BytesIO()
        super().close()

    def __del__(self) -> None:
        # A stream dropped without being closed wrote nothing: it is discarded, not published.
        if not self.closed:
            self._buf = io.BytesIO()
            io.RawIOBase.close(self)


class DeltaStorageHandler(FileSystemHandler):
    """A ``pyarrow.fs.FileSystemHandler`` over the objects under ``table_uri`` (deltalake's)."""

    def __init__(self, table_uri: str, options: Optional[Dict[str, str]] = None, known_sizes: Optional[Dict[str, int]] = None) -> None:
        self._uri = str(table_uri)
        self._options = dict(options or {})
        self._known_sizes = dict(known_sizes or {})
        store_options = dict(self._options)
        # deltalake's handler option, not the store's: the size of each part written.
        self._buffer_size = int(store_options.pop("max_buffer_size", _MIN_PART))
        self._store = _internal.RawFileStore(self._uri, store_options)

    @classmethod
    def from_table(cls, table: Any, options: Optional[Dict[str, str]] = None, known_sizes: Optional[Dict[str, int]] = None) -> "DeltaStorageHandler":
        """The handler of ``table``'s location (a ``DeltaTable`` or its ``_table``)."""
        uri = table.table_uri if isinstance(getattr(table, "table_uri", None), str) else table.table_uri()
        return cls(uri, options, known_sizes)

    def __reduce__(self) -> Any:
        return (DeltaStorageHandler, (self._uri, self._options, self._known_sizes))

    def __eq__(self, other: Any) -> bool:
        return self.equals(other)

    def __ne__(self, other: Any) -> bool:
        return not self.equals(other)

    def equals(self, other: Any) -> bool:
        return isinstance(other, DeltaStorageHandler) and (self._uri, self._options) == (other._uri, other._options)

    def get_type_name(self) -> str:
        return "object-store"

    def normalize_path(self, path: str) -> str:
        suffix = "/" if str(path).endswith("/") else ""
        return "/".join(p for p in str(path).split("/") if p) + suffix

    def _info(self, path: str) -> FileInfo:
        rel = _rel(path)
        if rel == "":
            return FileInfo(path, FileType.Directory)
        found = self._store.file(rel)
        if found is not None:
            size, mtime_ns = found
            return FileInfo(rel, FileType.File, size=size, mtime_ns=mtime_ns)
        files, dirs = self._store.list_dir(rel)
        return FileInfo(rel, FileType.Directory if files or dirs else FileType.NotFound)

    def get_file_info(self, paths: List[str]) -> List[FileInfo]:
        return [self._info(p) for p in paths]

    def get_file_info_selector(self, selector: FileSelector) -> List[FileInfo]:
        base = _rel(selector.base_dir)
        if selector.recursive:
            files = self._store.list_all(base)
            dirs = set()
            for path, _, _ in files:
                parts = path.split("/")[:-1]
                for i in range(len(base.split("/")) if base else 0, len(parts)):
                    dirs.add("/".join(parts[: i + 1]))
        else:
            files, listed = self._store.list_dir(base)
            dirs = set(listed)
        if not files and not dirs and not selector.allow_not_found and base:
            raise FileNotFoundError(f"{selector.base_dir}: no such directory")
        out = [FileInfo(d, FileType.Directory) for d in sorted(dirs)]
        out += [FileInfo(p, FileType.File, size=size, mtime_ns=mtime_ns) for p, size, mtime_ns in files]
        return out

    def create_dir(self, path: str, recursive: bool = True) -> None:
        """Nothing to do: a directory exists while a file lies under it."""

    def delete_dir(self, path: str) -> None:
        """Deletes every file under ``path`` (nothing when there is none); never the root's
        (``delete_root_dir_contents``)."""
        if _rel(path) == "":
            raise ValueError("delete_dir of the root: use delete_root_dir_contents")
        for f, _, _ in self._store.list_all(_rel(path)):
            self._store.delete(f)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False, *, accept_root_dir: bool = False) -> None:
        rel = _rel(path)
        if rel == "" and not accept_root_dir:
            raise ValueError("delete_dir_contents of the root needs accept_root_dir=True (or delete_root_dir_contents)")
        files = self._store.list_all(rel)
        if not files and not missing_dir_ok and rel:
            raise FileNotFoundError(f"{path}: no such directory")
        for f, _, _ in files:
            self._store.delete(f)

    def delete_root_dir_contents(self) -> None:
        self.delete_dir_contents("", accept_root_dir=True)

    def delete_file(self, path: str) -> None:
        self._store.delete(_rel(path))

    def move(self, src: str, dest: str) -> None:
        self._store.rename(_rel(src), _rel(dest))

    def copy_file(self, src: str, dest: str) -> None:
        self._store.copy(_rel(src), _rel(dest))

    def _input(self, path: str) -> pa.PythonFile:
        rel = _rel(path)
        size = self._known_sizes.get(path, self._known_sizes.get(rel))
        if size is None:
            found = self._store.file(rel)
            if found is None:
                raise FileNotFoundError(f"{path}: no such file")
            size = found[0]

        return pa.PythonFile(_InputFile(self._store, rel, int(size)), mode="r")

    def open_input_file(self, path: str) -> pa.PythonFile:
        return self._input(path)

    def open_input_stream(self, path: str) -> pa.PythonFile:
        return self._input(path)

    def open_output_stream(self, path: str, metadata: Optional[Dict[str, str]] = None) -> pa.PythonFile:
        if self._buffer_size < _MIN_PART:
            warnings.warn(
                f"You specified a `max_buffer_size` of {self._buffer_size} bits less than {_MIN_PART} bits. "
                "Most object stores expect an individual PUT part to be at least 5 MiB; the file is written in one put when closed.",
                UserWarning,
                stacklevel=2,
            )
        return pa.PythonFile(_OutputFile(self._store, _rel(path)), mode="w")

    def open_append_stream(self, path: str, metadata: Any = None) -> Any:
        raise NotImplementedError("appending to an object is not supported (objects are written whole)")
