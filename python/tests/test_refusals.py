"""Every case of tests/contract/refusals.toml through the Python API: the exception of the case's
kind, with the case's message word for word (SQL and Rust are held to the same file by
crates/delta-rlc/tests/it/refusals.rs), and the table left as it was."""

from __future__ import annotations

import pathlib
import tomllib

import pyarrow as pa
import pytest

from delta_rlc import DeltaTable, write_deltalake
from delta_rlc.exceptions import InvalidInputError, SchemaMismatchError, TableNotFoundError, UnsupportedError

CONTRACT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "contract" / "refusals.toml"
CASES = tomllib.loads(CONTRACT.read_text())["case"]
KINDS = {
    "InvalidInput": InvalidInputError,
    "NotFound": TableNotFoundError,
    "Unsupported": UnsupportedError,
    "SchemaMismatch": SchemaMismatchError,
}


def _merge(dt: DeltaTable):
    source = pa.table({"k": pa.array([1, 3], pa.int64()), "v": pa.array([11, 30], pa.int64())})
    return dt.merge(source, "t.k = s.k", source_alias="s", target_alias="t")


# The case's input through the Python API, by case id.
PYTHON = {
    "update-column-twice": lambda dt: dt.update({"v": "1", "V": "2"}),
    "update-unknown-column": lambda dt: dt.update({"nope": "1"}),
    "update-no-column": lambda dt: dt.update({}, predicate="k = 1"),
    "merge-update-column-twice": lambda dt: _merge(dt).when_matched_update({"v": "s.v", "V": "1"}).execute(),
    "merge-insert-unknown-column": lambda dt: _merge(dt).when_not_matched_insert({"k": "s.k", "nope": "s.v"}).execute(),
    "merge-not-matched-reads-target": lambda dt: _merge(dt).when_not_matched_insert({"k": "s.k", "v": "t.v"}).execute(),
    "merge-no-clause": lambda dt: _merge(dt).execute(),
    "merge-unconditional-clause-not-last": lambda dt: _merge(dt).when_matched_delete().when_matched_update({"v": "s.v"}, predicate="s.v > 0").execute(),
    "add-constraint-violated": lambda dt: dt.alter.add_constraint({"big": "v > 15"}),
    "restore-future-version": lambda dt: dt.restore(99),
    "delete-subquery": lambda dt: dt.delete("k IN (SELECT 1)"),
    "delete-string-ends-in-backslash": lambda dt: dt.delete("s = 'a\\' OR k = 2 -- '"),
    "delete-comment-ends-in-backslash": lambda dt: dt.delete("k = 2 -- note \\\nOR k = 1"),
    "delete-comment-carriage-return": lambda dt: dt.delete("k = 2 --\rOR k = 1"),
    "delete-number-runs-into-word": lambda dt: dt.delete("k=1or k=2"),
    "optimize-target-size-zero": lambda dt: dt.optimize.compact(target_size=0),
}


def test_every_contract_case_has_a_python_form():
    assert len(CASES) >= 10
    assert {c["id"] for c in CASES} == set(PYTHON)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_python_refuses_like_sql_and_rust(tmp_path, case):
    uri = str(tmp_path / "t")
    rows = pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([10, 20], pa.int64()), "s": ["a", "b"]})
    DeltaTable.create(uri, rows.schema)  # version 0, as in the Rust test: the rows are version 1
    write_deltalake(uri, rows, mode="append")
    dt = DeltaTable(uri)
    with pytest.raises(Exception) as info:
        PYTHON[case["id"]](dt)
    assert type(info.value) is KINDS[case["kind"]], f"{type(info.value).__name__}: {info.value}"
    assert str(info.value) == case["message"]
    after = DeltaTable(uri)
    assert after.version() == 1
    assert sorted(after.to_pyarrow_table().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "v": 10, "s": "a"},
        {"k": 2, "v": 20, "s": "b"},
    ]
