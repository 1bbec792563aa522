#!/usr/bin/env python3
"""Issue #23's MERGE at scale against deltalake: an upsert of N source rows into an N-row table
`(id BIGINT, v BIGINT)`, source ids `[N/2, 3N/2)` (half update, half insert), one process per run.

delta-rlc runs the MERGE from SQL with a `range()` source (its table has deletion vectors, so
matched rows are deleted by DV and rewritten); deltalake 1.6.6 runs `dt.merge(...)
.when_matched_update_all().when_not_matched_insert_all()` from a pyarrow source built with numpy
(copy-on-write). Each run starts from a fresh copy of the same-shaped base table.

Times: delta-rlc's whole process (start, snapshot, source, MERGE, commit); deltalake's time inside
its process from building the source to the commit (its interpreter and import, about 0.5 s, are
left out, which favours the peer). Peak RSS is each whole process's (`/usr/bin/time -f %M`).

    python3 scripts/bench_merge.py --bin target/bench-fast/delta-rlc [--rows 10000000 50000000]
        [--runs 3] [--memory-limit 1.5GB]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PEER = r"""
import json, sys, time
import numpy as np, pyarrow as pa
from deltalake import DeltaTable
path, n = sys.argv[1], int(sys.argv[2])
t = time.time()
ids = np.arange(n // 2, n // 2 + n, dtype=np.int64)
src = pa.table({"id": ids, "v": ids * 3})
m = (DeltaTable(path).merge(source=src, predicate="t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())
print(json.dumps({"s": time.time() - t, "updated": m.get("num_target_rows_updated"),
                  "inserted": m.get("num_target_rows_inserted")}))
"""

PEER_CREATE = r"""
import sys
import numpy as np, pyarrow as pa
from deltalake import write_deltalake
path, n = sys.argv[1], int(sys.argv[2])
ids = np.arange(0, n, dtype=np.int64)
write_deltalake(path, pa.table({"id": ids, "v": ids * 7}))
"""


def timed(cmd):
    """(seconds, peak MB, stdout) of one process under /usr/bin/time."""
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    line = [l for l in r.stderr.splitlines() if l.startswith("TIME ")][-1].split()
    return float(line[1]), int(line[2]) / 1024, r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--python", default=os.path.join(os.path.dirname(__file__), "..", ".venv", "bin", "python"))
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--memory-limit", default=None, help="delta-rlc's --memory-limit, e.g. 1.5GB")
    ap.add_argument("--no-peer", action="store_true")
    a = ap.parse_args()
    rows_out = []
    with tempfile.TemporaryDirectory(prefix="bench_merge_") as tmp:
        for n in a.rows:
            ours_base, peer_base = os.path.join(tmp, f"ours{n}"), os.path.join(tmp, f"peer{n}")
            subprocess.run([a.bin, "sql", f"CREATE TABLE '{ours_base}' (id BIGINT, v BIGINT)"], check=True, capture_output=True)
            subprocess.run([a.bin, "sql", f"INSERT INTO '{ours_base}' SELECT value, value * 7 FROM range(0, {n})"], check=True, capture_output=True)
            if not a.no_peer:
                subprocess.run([a.python, "-c", PEER_CREATE, peer_base, str(n)], check=True)
            merge = (f"MERGE INTO '{{t}}' t USING (SELECT value AS id, value * 3 AS v FROM range({n // 2}, {n // 2 + n})) s "
                     "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
            ours, peer = [], []
            for _ in range(a.runs):
                work = os.path.join(tmp, "work")
                shutil.rmtree(work, ignore_errors=True)
                shutil.copytree(ours_base, work)
                limit = ["--memory-limit", a.memory_limit] if a.memory_limit else []
                s, mb, out = timed([a.bin] + limit + ["sql", merge.format(t=work)])
                if f"{n} row(s) affected" not in out:
                    sys.exit(f"delta-rlc MERGE did not report {n} rows: {out}")
                ours.append((s, mb))
                if not a.no_peer:
                    shutil.rmtree(work, ignore_errors=True)
                    shutil.copytree(peer_base, work)
                    whole, mb, out = timed([a.python, "-c", PEER, work, str(n)])
                    r = json.loads(out.strip().splitlines()[-1])
                    if (r["updated"], r["inserted"]) != (n // 2, n - n // 2):
                        sys.exit(f"deltalake MERGE changed {r}")
                    peer.append((r["s"], mb, whole))
            rows_out.append((n, ours, peer))
    print(f"| N | runs | delta-rlc s (best / median) | deltalake s in-process (best / median) | ratio (median) | peak RSS delta-rlc / deltalake MB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, ours, peer in rows_out:
        o = [s for s, _ in ours]
        line = f"| {n:,}{' (limit ' + a.memory_limit + ')' if a.memory_limit else ''} | {len(o)} | {min(o):.2f} / {statistics.median(o):.2f} |"
        if peer:
            p = [s for s, _, _ in peer]
            line += f" {min(p):.2f} / {statistics.median(p):.2f} | {statistics.median(p) / statistics.median(o):.1f}× |"
            line += f" {max(m for _, m in ours):,.0f} / {max(m for _, m, _ in peer):,.0f} |"
        else:
            line += f" — | — | {max(m for _, m in ours):,.0f} / — |"
        print(line)


if __name__ == "__main__":
    main()
