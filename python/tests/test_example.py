"""The example deltalake script gives the same rows on deltalake and on delta_rlc."""

import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "deltalake_script.py"


def run(uri, lib):
    r = subprocess.run([sys.executable, str(SCRIPT), uri, lib], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [l for l in r.stdout.splitlines() if not l.startswith("merge:")]


def test_the_same_script_runs_on_both(tmp_path):
    ours = run(str(tmp_path / "ours"), "delta_rlc")
    theirs = run(str(tmp_path / "theirs"), "deltalake")
    # The same rows and versions: the MERGE rewrites each touched file as one (its kept, updated
    # and inserted rows together, as Spark does), so the compaction finds nothing to do, as
    # deltalake's does.
    assert ours[:-1] == theirs[:-1] and len(ours) == 11
    assert ours[-1] == "version 3" and theirs[-1] in ("version 3", "version 4")
