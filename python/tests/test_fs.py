"""delta_rlc.fs.DeltaStorageHandler (deltalake.fs): a pyarrow file system over a table's store —
file info as the local file system reports it, lazy ranged reads, whole-object writes, prefix
deletes that never touch a sibling prefix, copy/move, pickling, and a table's files read through
it."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from delta_rlc import DeltaTable, write_deltalake
from delta_rlc.fs import DeltaStorageHandler


def _fs(tmp_path):
    return pafs.PyFileSystem(DeltaStorageHandler(str(tmp_path))), pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())


def test_file_info_and_ranged_reads_match_the_local_file_system(tmp_path):
    store, local = _fs(tmp_path)
    table = pa.table({"a": list(range(100)), "b": [str(i) for i in range(100)]})
    local.create_dir("d")
    pq.write_table(table, "d/t.parquet", filesystem=local)
    ours, theirs = store.get_file_info(["d/t.parquet", "d", "nope"]), local.get_file_info(["d/t.parquet", "d", "nope"])
    assert [(i.path, i.type) for i in ours] == [(i.path, i.type) for i in theirs]
    # A directory is a key prefix: it has no size or time of its own.
    assert (ours[0].size, ours[0].mtime_ns) == (theirs[0].size, theirs[0].mtime_ns)
    assert ours[0].mtime_ns == os.stat(tmp_path / "d" / "t.parquet").st_mtime_ns
    f, g = store.open_input_file("d/t.parquet"), local.open_input_file("d/t.parquet")
    assert f.size() == g.size() and f.seek(5) == 5 and f.read(7) == (g.seek(5), g.read(7))[1]
    assert f.read() == g.read() and f.read() == b""
    assert f.read_at(10, 0) == g.read_at(10, 0)
    assert pq.read_table("d/t.parquet", filesystem=store) == table
    with pytest.raises(FileNotFoundError):
        store.open_input_file("d/missing.parquet")
    # A size the caller knows is trusted (no HEAD): deltalake's known_sizes.
    known = pafs.PyFileSystem(DeltaStorageHandler(str(tmp_path), known_sizes={"d/t.parquet": 12345}))
    assert known.open_input_file("d/t.parquet").size() == 12345


def test_writes_deletes_and_moves_stay_inside_their_prefix(tmp_path):
    store, local = _fs(tmp_path)
    for path in ("foo/x.txt", "foo/sub/y.txt", "foo2/z.txt"):
        with store.open_output_stream(path) as out:
            out.write(path.encode())
    assert (tmp_path / "foo" / "sub" / "y.txt").read_bytes() == b"foo/sub/y.txt"
    selector = pafs.FileSelector("", recursive=True)
    assert sorted((i.path, i.type) for i in store.get_file_info(selector)) == sorted((i.path, i.type) for i in local.get_file_info(selector))
    store.copy_file("foo2/z.txt", "foo2/copy.txt")
    store.move("foo2/copy.txt", "moved.txt")
    assert (tmp_path / "moved.txt").read_bytes() == b"foo2/z.txt" and not (tmp_path / "foo2" / "copy.txt").exists()
    store.delete_dir("foo")
    assert not (tmp_path / "foo" / "x.txt").exists() and not (tmp_path / "foo" / "sub" / "y.txt").exists()
    assert (tmp_path / "foo2" / "z.txt").exists(), "a sibling prefix is not deleted"
    store.delete_dir("does_not_exist")
    with pytest.raises(FileNotFoundError):
        store.get_file_info(pafs.FileSelector("does_not_exist"))
    assert store.get_file_info(pafs.FileSelector("does_not_exist", allow_not_found=True)) == []


def test_a_small_buffer_size_warns_and_the_handler_pickles(tmp_path):
    handler = DeltaStorageHandler(str(tmp_path), options={"max_buffer_size": "1024"})
    with pytest.warns(UserWarning, match="max_buffer_size` of 1024 bits less than 5242880 bits"):
        handler.open_output_stream("w").close()
    again = pickle.loads(pickle.dumps(handler))
    assert again.equals(handler) and again.get_file_info(["w"])[0].size == 0


def test_a_tables_files_read_through_the_handler_give_its_rows(tmp_path):
    write_deltalake(tmp_path, pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"]}), partition_by=["p"])
    dt = DeltaTable(tmp_path)
    # As polars calls it: the raw handle and its files' known sizes (no HEAD per file).
    sizes = dt._table.get_add_file_sizes()
    assert sizes == dict(zip(dt.get_add_actions(flatten=True).column("path").to_pylist(), dt.get_add_actions(flatten=True).column("size_bytes").to_pylist()))
    store = pafs.PyFileSystem(DeltaStorageHandler.from_table(dt._table, None, sizes))
    rel = dt.get_add_actions(flatten=True).column("path").to_pylist()
    got = ds.dataset(rel, filesystem=store, format="parquet", partitioning="hive").to_table()
    assert sorted(got.column("id").to_pylist()) == [1, 2, 3]


def test_nothing_outside_the_root_is_written_copied_listed_or_wiped(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_bytes(b"SECRET")
    root.mkdir()
    (root / "a.txt").write_bytes(b"a")
    os.symlink(outside, root / "ld")
    store = pafs.PyFileSystem(DeltaStorageHandler(str(root)))
    for attempt in (
        lambda: store.open_output_stream("ld/secret.txt").close(),
        lambda: store.open_output_stream("ld/new.txt").close(),
        lambda: store.copy_file("a.txt", "ld/copied"),
        lambda: store.move("a.txt", "ld/moved"),
        lambda: store.copy_file("ld/secret.txt", "stolen.txt"),
    ):
        with pytest.raises(Exception, match="symbolic link"):
            attempt()
    assert sorted(os.listdir(outside)) == ["secret.txt", "sub"] and (outside / "secret.txt").read_bytes() == b"SECRET"
    assert not (root / "stolen.txt").exists()
    assert [i.path for i in store.get_file_info(pafs.FileSelector("", recursive=False))] == ["a.txt"]
    handler = DeltaStorageHandler(str(root))
    with pytest.raises(ValueError, match="delete_root_dir_contents"):
        handler.delete_dir("")
    store.delete_dir_contents("nothing_here", missing_dir_ok=True)  # pyarrow passes it positionally
    assert (root / "a.txt").exists()
    # A stream dropped without close publishes nothing; a missing file is FileNotFoundError even
    # when its size was given.
    stream = handler.open_output_stream("dropped.txt")
    stream.write(b"half")
    del stream
    assert not (root / "dropped.txt").exists()
    with pytest.raises(FileNotFoundError):
        DeltaStorageHandler(str(root), known_sizes={"gone.txt": 10}).open_input_file("gone.txt").read()
