#!/usr/bin/env python3
"""Same statements, several builds, one table: tells a per-statement cost from noise.

    scripts/bench_compare.py NAME=BINARY [NAME=BINARY ...] [--reps 5]

Builds a 10M-row, 20-file table once (with the first binary), then for each repetition and each
binary: a fresh copy of it, `SELECT 1` (process start), `DELETE … WHERE id % 1000 = 7` and
`UPDATE … SET v = v + 1 WHERE id % 1000 = 8` (bench.py's 0.1% rows), timed end to end. Then the
change feed of a 10-commit, 10M-row table: `SELECT count(*) FROM table_changes(…)`, time and peak
RSS. Binaries run alternately so machine noise hits them alike; medians and all runs are printed.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(binary, sql):
    start = time.time()
    p = subprocess.Popen([binary, "--format", "csv", "sql", sql], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"failed: {binary} sql {sql[:80]}\n{err.decode()[-1000:]}")
    return time.time() - start, usage.ru_maxrss / 1024, out.decode().strip().splitlines()[-1:]


def main():
    args = [a for a in sys.argv[1:] if "=" in a]
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5
    bins = dict(a.split("=", 1) for a in args)
    if not bins:
        raise SystemExit(__doc__)
    first = next(iter(bins.values()))
    base = tempfile.mkdtemp(prefix="delta-rlc-compare-")
    try:
        src = os.path.join(base, "src")
        run(first, f"CREATE TABLE '{src}' (id BIGINT NOT NULL, v BIGINT, s STRING)")
        per = 500_000
        for f in range(20):
            run(first, f"INSERT INTO '{src}' SELECT value, value & 1023, concat('r', CAST(value & 127 AS VARCHAR)) FROM range({f * per}, {(f + 1) * per})")
        times = {(n, k): [] for n in bins for k in ("SELECT 1", "DELETE 0.1%", "UPDATE 0.1%")}
        for _ in range(reps):
            for name, binary in bins.items():
                t = os.path.join(base, name)
                shutil.rmtree(t, ignore_errors=True)
                shutil.copytree(src, t)
                for kind, sql in [("SELECT 1", "SELECT 1"),
                                  ("DELETE 0.1%", f"DELETE FROM '{t}' WHERE id % 1000 = 7"),
                                  ("UPDATE 0.1%", f"UPDATE '{t}' SET v = v + 1 WHERE id % 1000 = 8")]:
                    times[(name, kind)].append(run(binary, sql)[0])
        print("| statement | " + " | ".join(bins) + " |")
        print("| --- |" + " ---: |" * len(bins))
        for kind in ("SELECT 1", "DELETE 0.1%", "UPDATE 0.1%"):
            cells = []
            for name in bins:
                xs = times[(name, kind)]
                cells.append(f"{statistics.median(xs) * 1000:.0f} ms ({' / '.join(str(round(x * 1000)) for x in xs)})")
            print(f"| {kind} | " + " | ".join(cells) + " |")
        feed = os.path.join(base, "feed")
        run(first, f"CREATE TABLE '{feed}' (id BIGINT, v BIGINT, s STRING) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
        for i in range(10):
            run(first, f"INSERT INTO '{feed}' SELECT value, value & 1023, concat('r', CAST(value AS VARCHAR)) FROM range({i * 1_000_000}, {(i + 1) * 1_000_000})")
        cells = []
        for name, binary in bins.items():
            wall, rss, out = run(binary, f"SELECT count(*) FROM table_changes('{feed}', 1)")
            cells.append(f"{wall:.2f} s, {rss:.0f} MB ({out[0] if out else '?'} rows)")
        print("| count(*) over a 10M-row change feed | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
