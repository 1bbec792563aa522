#!/usr/bin/env python3
"""Issue #21's workload: 3 appenders + 1 MERGE writer + an ALTER TABLE (ADD COLUMNS or SET
TBLPROPERTIES) every ~3 s, as separate processes on one local table, in three modes — delta-rlc
(rlc), delta-rlc with legacy=true (open-source Delta's checks) and deltalake — in one run. Prints a
Markdown table per writer kind (commits, aborts, abort rate) for BENCHMARKS.md.

    python3 scripts/bench_metadata.py --bin target/bench-fast/delta-rlc [--seconds 60]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402



def dev_bin(bin_):
    """The developer tooling binary (load generators, benchmark drivers), built beside `bin_`."""
    return os.path.join(os.path.dirname(os.path.abspath(bin_)), "delta-rlc-dev")

def run(bin_, base, mode, seconds):
    (name, spec), = bench.METADATA_WORKLOAD.items()
    d = os.path.join(base, f"meta-{mode}")
    if mode == "deltalake":
        bench.run_measured([bench.PEER[0], "-c", f"import sys; sys.path.insert(0, {bench.HERE!r}); import bench_peer as b; "
                            f"from deltalake import write_deltalake; write_deltalake({d!r}, b.data(0, 100000))"])
    else:
        bench.run_measured([bin_, "sql", f"CREATE TABLE '{d}' (id BIGINT NOT NULL, v BIGINT, s STRING) CLUSTER BY (id)"])
        bench.run_measured([bin_, "sql", f"INSERT INTO '{d}' SELECT value, value & 1023, 'x' FROM range(0, 100000)"])
    procs, w = [], 0
    for entry in spec:
        kind, count, sql = entry[:3]
        pause_ms = entry[3] if len(entry) > 3 else 0
        for _ in range(count):
            if mode == "deltalake":
                cmd = bench.PEER + ["loop", d, str(w), str(seconds), kind, str(pause_ms)]
            else:
                cmd = [dev_bin(bin_), "stress", "loop", d, "--writer", str(w), "--seconds", str(seconds), "--sql", sql, "--pause-ms", str(pause_ms)]
                if mode == "legacy":
                    cmd += ["--conf", "legacy=true"]
            procs.append((kind, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            w += 1
    by_kind = {}
    for kind, p in procs:
        out, err = p.communicate()
        k = by_kind.setdefault(kind, {"commits": 0, "aborts": 0, "errors": 0})
        if p.returncode != 0:
            k["errors"] += 1
            print(f"[{mode}] {kind}: {err.strip()[-300:]}", file=sys.stderr)
            continue
        r = bench.last_json(out)
        k["commits"] += r.get("commits", 0)
        k["aborts"] += sum(r.get("aborts", {}).values())
    return by_kind


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="delta-rlc-meta-")
    try:
        res = {m: run(a.bin, base, m, a.seconds) for m in ("rlc", "legacy", "deltalake")}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"| writers ({a.seconds:.0f} s) | mode | commits | aborts | abort rate |")
    print("| --- | --- | ---: | ---: | ---: |")
    for kind in res["rlc"]:
        for m in ("rlc", "legacy", "deltalake"):
            k = res[m].get(kind, {"commits": 0, "aborts": 0, "errors": 0})
            rate = k["aborts"] / max(k["commits"] + k["aborts"], 1)
            err = f" ({k['errors']} process(es) failed)" if k["errors"] else ""
            print(f"| {kind} | {m} | {k['commits']} | {k['aborts']} | {rate:.1%}{err} |")


if __name__ == "__main__":
    main()
