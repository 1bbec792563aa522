"""Multi-process soaks: writers DELETE / UPDATE / MERGE-delete their own keys of one table while
another process loops OPTIMIZE (compaction, or ZORDER on a row-tracking table). Each writer prints
the intents it committed; because key sets are disjoint, replaying each writer's committed intents
in its own order must give the final table exactly — nothing lost, resurrected or duplicated. Run
with RLC on and with `legacy`, reporting commits, aborts and reconciles per side."""
import json
import os
import subprocess

import pytest

from conftest import BIN, DEV_BIN

WRITERS = 3
OPS = int(os.environ.get("DELTA_RLC_SOAK_OPS", "40"))


def expected_rows(outputs):
    rows = {}
    for w in range(WRITERS):
        for k in range(w * 1000, w * 1000 + 1000):
            rows[k] = 0
    for out in outputs:
        for line in out.splitlines():
            e = json.loads(line)
            if e.get("summary"):
                continue
            k = e["k"]
            if e["op"] == "delete":
                rows.pop(k, None)
            elif e["op"] == "update":
                if k in rows:
                    rows[k] += e["d"]
            elif e["op"] == "merge":
                if k in rows:
                    rows.pop(k)
                else:
                    rows[k] = e["d"]
    return sorted(rows.items())


@pytest.mark.parametrize("store", ["local", "s3", "azure"])
@pytest.mark.parametrize("mode", ["rlc", "legacy"])
@pytest.mark.parametrize("rewriter", ["none", "optimize", "zorder"])
def test_soak(tmp_path, request, store, mode, rewriter):
    env = None
    if store in ("s3", "azure"):
        env = request.getfixturevalue("moto" if store == "s3" else "azurite")
        scheme = "s3" if store == "s3" else "az"
        t = f"{scheme}://delta-rlc-test/soak-{mode}-{rewriter}-{os.getpid()}-{abs(hash(str(tmp_path))) % 100000}"
    else:
        t = str(tmp_path / "soak")
    run = lambda *a: subprocess.run([BIN, *a], env=env, capture_output=True, text=True, check=True).stdout
    props = "'delta.enableRowTracking' = 'true'" if rewriter == "zorder" else "'delta.enableDeletionVectors' = 'true'"
    ref = f"delta.`{t}`" if store != "local" else f"'{t}'"
    run("sql", f"CREATE TABLE {ref} (k BIGINT NOT NULL, v BIGINT NOT NULL) TBLPROPERTIES ({props})")
    for w in range(WRITERS):
        run("sql", f"INSERT INTO {ref} SELECT value, 0 FROM range({w * 1000}, {w * 1000 + 1000})")
    conf = ["--conf", "legacy=true"] if mode == "legacy" else []
    procs = [subprocess.Popen([DEV_BIN, "stress", "soak", t, "--writer", str(w), "--ops", str(OPS), "--seed", "7", *conf],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for w in range(WRITERS)]
    if rewriter != "none":
        extra = ["--zorder"] if rewriter == "zorder" else []
        procs.append(subprocess.Popen([DEV_BIN, "stress", "soak", t, "--writer", "99", "--ops", str(OPS // 2), "--optimize", *extra, *conf],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    outs = []
    summaries = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err
        outs.append(out)
        summaries.append(json.loads(out.strip().splitlines()[-1]))
    got = sorted((r["k"], r["v"]) for r in json.loads(run("sql", "--json", f"SELECT k, v FROM {ref}"))["rows"])
    keys = [k for k, _ in got]
    assert len(keys) == len(set(keys)), "duplicate keys"
    assert got == expected_rows(outs[:WRITERS]), "rows lost, resurrected or changed"
    print(f"soak store={store} mode={mode} rewriter={rewriter}:", json.dumps(summaries))
