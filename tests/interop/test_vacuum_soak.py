"""VACUUM racing writers in separate processes, on a local disk and on S3 (moto): three processes
append while a fourth runs `VACUUM … RETAIN 0 HOURS` (retention check off) in a loop. No committed
row is lost. Runs per store: DELTA_RLC_VACUUM_SOAK_RUNS (CI: 1; docs/verification.md: 20)."""
import json
import os
import subprocess
import time

import pytest

from conftest import BIN, DEV_BIN

RUNS = int(os.environ.get("DELTA_RLC_VACUUM_SOAK_RUNS", "1"))
WRITERS, APPENDS = 3, 25


def soak(table, env, old_orphan=None):
    subprocess.run([BIN, "sql", f"CREATE TABLE delta.`{table}` (id BIGINT, writer INT)"],
                   env=env, check=True, capture_output=True)
    if old_orphan:
        old_orphan()
    writers = [subprocess.Popen([DEV_BIN, "stress", "append", table, "--count", str(APPENDS), "--writer", str(w)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for w in range(WRITERS)]
    vacuums, deleted = 0, []
    while any(p.poll() is None for p in writers) or vacuums < 3:
        out = subprocess.run([BIN, "--conf", "retentionDurationCheck=false", "--json", "sql",
                              f"VACUUM delta.`{table}` RETAIN 0 HOURS"], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        deleted += [r["deleted"] for r in res.get("rows", [])]
        vacuums += 1
    for p in writers:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    rows = json.loads(subprocess.run([BIN, "sql", "--json", f"SELECT id FROM delta.`{table}`"],
                                     capture_output=True, text=True, env=env, check=True).stdout)["rows"]
    ids = sorted(r["id"] for r in rows)
    assert ids == sorted(w * 1_000_000 + i for w in range(WRITERS) for i in range(APPENDS)), "a committed row is lost"
    assert all("orphan" in d for d in deleted), deleted
    return vacuums, deleted


@pytest.mark.parametrize("run", range(RUNS))
def test_vacuum_racing_writers_local(tmp_path, run):
    table = str(tmp_path / "t")

    def old_orphan():
        p = os.path.join(table, "part-orphan.snappy.parquet")
        with open(p, "wb") as f:
            f.write(b"left by a writer that died")
        old = time.time() - 8 * 3600
        os.utime(p, (old, old))

    vacuums, deleted = soak(table, None, old_orphan)
    assert deleted == ["part-orphan.snappy.parquet"], deleted
    assert vacuums >= 3


@pytest.mark.parametrize("run", range(RUNS))
def test_vacuum_racing_writers_s3(moto, run):
    table = f"s3://delta-rlc-test/vacuum-soak-{run}-{time.time_ns()}"
    vacuums, _ = soak(table, moto)
    assert vacuums >= 3
