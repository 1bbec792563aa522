"""Re-execution on a true conflict (``retry_on_conflict``): a statement from a ``DeltaTable``
loaded before a concurrent writer changed the same rows runs again at the latest version and
gives the serial answer; without it (the twin) the conflict aborts and nothing commits. Rows are
checked in every case."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_rlc import ConflictConfig, DeltaTable, write_deltalake
from delta_rlc.exceptions import CommitFailedError


def _raced(tmp_path, **conflict):
    """A table (id 1..4, x = id * 10), a handle loaded at its version, and a winner that doubled
    row 2 through another handle afterwards."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "x": pa.array([10, 20, 30, 40], pa.int64())}), configuration={"delta.enableDeletionVectors": "true"})
    stale = DeltaTable(uri, conflict=ConflictConfig(**conflict))
    DeltaTable(uri).update(updates={"x": "x * 2"}, predicate="id = 2")
    return uri, stale


def _rows(uri):
    t = DeltaTable(uri).to_pyarrow_table().sort_by("id")
    return list(zip(t.column("id").to_pylist(), t.column("x").to_pylist()))


def test_update_runs_again_on_the_winners_row(tmp_path):
    uri, stale = _raced(tmp_path)
    out = stale.update(updates={"x": "x + 1"}, predicate="id = 2", retry_on_conflict=2)
    assert out["statement_runs"] == 2
    assert "committed at version 1" in out["earlier_runs"][0]
    assert _rows(uri) == [(1, 10), (2, 41), (3, 30), (4, 40)]


def test_twin_without_retry_the_conflict_aborts(tmp_path):
    uri, stale = _raced(tmp_path)
    with pytest.raises(CommitFailedError) as e:
        stale.update(updates={"x": "x + 1"}, predicate="id = 2")
    assert e.value.statement_runs == 1
    assert DeltaTable(uri).version() == 1
    assert _rows(uri) == [(1, 10), (2, 40), (3, 30), (4, 40)]


def test_the_tables_conflict_config_turns_it_on_and_a_call_can_turn_it_off(tmp_path):
    uri, stale = _raced(tmp_path, retry_on_conflict=1)
    with pytest.raises(CommitFailedError):
        stale.delete("x >= 40", retry_on_conflict=0)
    assert _rows(uri) == [(1, 10), (2, 40), (3, 30), (4, 40)]
    uri, stale = _raced(tmp_path / "b", retry_on_conflict=1)
    out = stale.delete("x >= 40")
    assert (out["statement_runs"], out["num_deleted_rows"]) == (2, 2)
    assert _rows(uri) == [(1, 10), (3, 30)]


def test_merge_and_write_deltalake_run_again(tmp_path):
    uri, stale = _raced(tmp_path)
    source = pa.table({"id": pa.array([2, 9], pa.int64()), "x": pa.array([5, 90], pa.int64())})
    out = (
        stale.merge(source, "target.id = source.id", retry_on_conflict=1)
        .when_matched_update({"x": "target.x + source.x"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert out["statement_runs"] == 2
    assert _rows(uri) == [(1, 10), (2, 45), (3, 30), (4, 40), (9, 90)]
    # A replace-where from a handle loaded before a change to the same rows.
    stale = DeltaTable(uri)
    DeltaTable(uri).update(updates={"x": "0"}, predicate="id = 2")
    data = pa.table({"id": pa.array([2], pa.int64()), "x": pa.array([7], pa.int64())})
    out = write_deltalake(stale, data, mode="overwrite", predicate="id = 2", retry_on_conflict=1)
    assert out["statement_runs"] == 2
    assert _rows(uri) == [(1, 10), (2, 7), (3, 30), (4, 40), (9, 90)]


def test_retry_on_conflict_must_be_a_count(tmp_path):
    uri, stale = _raced(tmp_path)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError):
            stale.delete("id = 1", retry_on_conflict=bad)
    assert len(_rows(uri)) == 4
