#!/usr/bin/env python3
"""Python API benchmark, delta_rlc against deltalake in the same run: write_deltalake of N rows from
pyarrow, a MERGE upsert of K keys (half matched, half new), a DELETE of 0.1% of the rows. Each step
runs in its own process, so its peak RSS is its own (the data it generates included, the same for
both libraries).

    .venv/bin/python scripts/bench_python.py [--rows 10000000] [--keys 100000] [--out FILE]

delta_rlc must be installed in the running environment (a release build for figures that mean
anything: `cd python && maturin build --profile bench-fast` and pip install the wheel)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def table(rows: int, start: int = 0):
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(range(start, start + rows), pa.int64())
    return pa.table({"id": ids, "v": pc.multiply(pc.cast(ids, pa.float64()), 0.5), "s": pc.cast(pc.multiply(ids, 7), pa.string())})


def child(step: str, lib: str, uri: str, rows: int, keys: int) -> dict:
    if lib == "deltalake":
        from deltalake import DeltaTable, write_deltalake
    else:
        from delta_rlc import DeltaTable, write_deltalake
    if step == "write":
        data = table(rows)
        # delta_rlc with deletion vectors on (asked for: its deltalake API creates tables as
        # deltalake does), deltalake with its default (copy-on-write).
        config = {"delta.enableDeletionVectors": "true"} if lib == "delta_rlc" else None
        t0 = time.perf_counter()
        write_deltalake(uri, data, configuration=config)
        elapsed = time.perf_counter() - t0
    elif step == "merge":
        src = table(keys, start=rows - keys // 2)  # half the keys exist, half are new
        dt = DeltaTable(uri)
        t0 = time.perf_counter()
        (
            dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update({"v": "s.v", "s": "s.s"})
            .when_not_matched_insert_all()
            .execute()
        )
        elapsed = time.perf_counter() - t0
    elif step == "delete":
        dt = DeltaTable(uri)
        t0 = time.perf_counter()
        dt.delete("id % 1000 = 7")
        elapsed = time.perf_counter() - t0
    else:
        raise SystemExit(f"unknown step {step}")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": elapsed, "rss_mb": rss_mb}


def run(step: str, lib: str, uri: str, rows: int, keys: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", step, "--lib", lib, "--uri", uri, "--rows", str(rows), "--keys", str(keys)],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{lib} {step} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--child")
    p.add_argument("--lib")
    p.add_argument("--uri")
    p.add_argument("--out", help="write the markdown section here (default: stdout)")
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.lib, a.uri, a.rows, a.keys)))
        return
    import deltalake

    import delta_rlc

    results: dict = {}
    with tempfile.TemporaryDirectory() as d:
        for lib in ("delta_rlc", "deltalake"):
            uri = os.path.join(d, lib)
            for step in ("write", "merge", "delete"):
                results[(lib, step)] = run(step, lib, uri, a.rows, a.keys)
                print(lib, step, results[(lib, step)], file=sys.stderr)
    names = {
        "write": f"write_deltalake of {a.rows:,} rows (pyarrow)",
        "merge": f"merge upsert of {a.keys:,} keys (half new)",
        "delete": "delete 0.1% of the rows",
    }
    lines = [
        f"## Python API: delta_rlc vs deltalake {deltalake.__version__} (same run, {time.strftime('%Y-%m-%d')})",
        "Each step in its own process; peak RSS includes generating the input (the same for both).",
        f"delta_rlc {getattr(delta_rlc, '__version__', '0.1.0')} release build (`bench-fast`); delta_rlc with deletion vectors on",
        "(`configuration={'delta.enableDeletionVectors': 'true'}`), deltalake with its default (copy-on-write).",
        "",
        "| step | delta_rlc | deltalake | time ratio (deltalake / delta_rlc) | peak RSS delta_rlc / deltalake |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for step in ("write", "merge", "delete"):
        ours, theirs = results[("delta_rlc", step)], results[("deltalake", step)]
        lines.append(
            f"| {names[step]} | {ours['seconds']:.2f} s | {theirs['seconds']:.2f} s | {theirs['seconds'] / max(ours['seconds'], 1e-9):.1f}× "
            f"| {ours['rss_mb']:.0f} MB / {theirs['rss_mb']:.0f} MB |"
        )
    lines += ["", f"Reproduce: `.venv/bin/python scripts/bench_python.py --rows {a.rows} --keys {a.keys}`", ""]
    text = "\n".join(lines)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
