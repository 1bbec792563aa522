#!/usr/bin/env python3
"""Issue #23's concurrency at realistic statement cost: W1, W3 and W4 on a 10M-row table in 40
files, with statements that take a fraction of a second to seconds (UPDATE of 5,000 rows, DELETE
of 2,000 rows, MERGE of 50,000 keys, OPTIMIZE), in three modes — delta-rlc (rlc), delta-rlc with
legacy=true (open-source Delta's checks) and deltalake — then a many-writers curve (2, 4, 8, 16
MERGE writers, rlc vs legacy). Every writer is a separate process; each keeps to its own key
region, so on W1 and W4 every abort is a false abort. Prints Markdown for BENCHMARKS.md.

    python3 scripts/bench_scale.py --bin target/bench-fast/delta-rlc [--seconds 180] [--curve-seconds 60]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

UPDATE_ROWS, DELETE_ROWS, MERGE_KEYS = 5_000, 2_000, 50_000
UPDATE = "UPDATE t SET v = v + 1 WHERE id >= {lo} AND id < {lo} + %d" % UPDATE_ROWS
DELETE = "DELETE FROM t WHERE id >= {lo} AND id < {lo} + %d" % DELETE_ROWS
# The same number of rows, found by a scan of the whole table: every 2000th key, writer w taking
# the residues that are w mod 4, so writers never share a row but every statement reads all 10M
# rows and writes a DV on every file (an UPDATE by a non-key column on an unpartitioned table).
# Every pair of concurrent statements overlaps at the file level: legacy aborts, RLC must merge
# the DVs (Case 2) and read the winner's new file (value-exact tier) to commit.
UPDATE_SCAN = "UPDATE t SET v = v + 1 WHERE id % 2000 = ({n} * 4 + {w}) % 2000"
# DELETE by a full scan: 1,250 rows (every 8000th key), so a writer's residues last 2,000
# statements and it does not run dry within a run (with % 2000 it did after 500).
DELETE_SCAN = "DELETE FROM t WHERE id % 8000 = ({n} * 4 + {w}) % 8000"
# Half the source keys exist (updated), half are new (inserted, above every existing key).
MERGE = ("MERGE INTO t USING (SELECT value AS id, 1 AS v, 'm' AS s FROM range({lo}, {lo} + %d) UNION ALL "
         "SELECT value, 1, 'm' FROM range({new}, {new} + %d)) s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *") % (MERGE_KEYS // 2, MERGE_KEYS - MERGE_KEYS // 2)

# (kind, writers, sql, step, pause ms); the peer runs `<kind>_scale` (or `optimize`).
WORKLOADS = {
    "W1 4 writers UPDATE 5k rows, disjoint ranges": [("update", 4, UPDATE, UPDATE_ROWS, 0)],
    "W1s 4 writers UPDATE 5k rows found by a full scan, every file shared": [("update_scan", 4, UPDATE_SCAN, 0, 0)],
    "W3 2 DELETE 2k + 1 UPDATE 5k writers + 1 OPTIMIZE": [
        ("delete", 2, DELETE, DELETE_ROWS, 0), ("update", 1, UPDATE, UPDATE_ROWS, 0), ("optimize", 1, "OPTIMIZE t", 0, 5000)],
    # W3 at the statement cost: the same statements found by a full scan (0.2-2 s each), so
    # every DML statement and every OPTIMIZE share every file.
    "W3s 2 DELETE 1.25k + 1 UPDATE 5k writers by a full scan + 1 OPTIMIZE": [
        ("delete_scan", 2, DELETE_SCAN, 0, 0), ("update_scan", 1, UPDATE_SCAN, 0, 0), ("optimize", 1, "OPTIMIZE t", 0, 5000)],
    "W4 4 writers MERGE 50k keys, disjoint": [("merge", 4, MERGE, MERGE_KEYS, 0)],
}



def dev_bin(bin_):
    """The developer tooling binary (load generators, benchmark drivers), built beside `bin_`."""
    return os.path.join(os.path.dirname(os.path.abspath(bin_)), "delta-rlc-dev")

def make_base(bin_, base, rows, files, row_tracking=False, pre_cluster=False, peer=True):
    """One table per engine, copied for every run: `rows` rows `(id, v, s)` in `files` appends.
    With `row_tracking`, our table has row tracking on (a clustering OPTIMIZE is then remappable
    against concurrent DML through stable row ids: Case 5); the peer's table is unchanged."""
    ours, peer = os.path.join(base, "base-ours"), os.path.join(base, "base-peer")
    per = rows // files
    props = " TBLPROPERTIES ('delta.enableRowTracking' = 'true')" if row_tracking else ""
    bench.run_measured([bin_, "sql", f"CREATE TABLE '{ours}' (id BIGINT NOT NULL, v BIGINT, s STRING) CLUSTER BY (id){props}"])
    for f in range(files):
        bench.run_measured([bin_, "sql", f"INSERT INTO '{ours}' SELECT value, value & 1023, 'x' FROM range({f * per}, {(f + 1) * per})"])
    if pre_cluster:
        # A clustered table as a pipeline meets it: OPTIMIZEd once, in about `files` outputs (the
        # target is in memory bytes: 21 a row for (BIGINT, BIGINT, 'x')).
        target = rows * 21 // files
        bench.run_measured([bin_, "sql", f"ALTER TABLE '{ours}' SET TBLPROPERTIES ('delta.targetFileSize' = '{target}')"])
        bench.run_measured([bin_, "sql", f"OPTIMIZE '{ours}'"])
    if peer:
        bench.run_measured(bench.PEER + ["insert", peer, str(rows), str(files)])
    return ours, peer


def run(bin_, base, src, name, spec, mode, seconds, region):
    d = os.path.join(base, f"run-{int(time.time() * 1000)}-{mode}")
    shutil.copytree(src, d)
    procs, w = [], 0
    for kind, count, sql, step, pause_ms in spec:
        for _ in range(count):
            if mode == "deltalake":
                pk = kind if kind in ("optimize", "update_scan", "delete_scan") else f"{kind}_scale"
                cmd = bench.PEER + ["loop", d, str(w), str(seconds), pk, str(pause_ms), str(region), str(step)]
            else:
                cmd = [dev_bin(bin_), "stress", "loop", d, "--writer", str(w), "--seconds", str(seconds), "--sql", sql,
                       "--pause-ms", str(pause_ms), "--region", str(region), "--step", str(step)]
                if mode == "legacy":
                    cmd += ["--conf", "legacy=true"]
                if mode == "rlc-rerun":
                    # Re-execution on a true conflict (#47): an aborted statement is planned again.
                    cmd += ["--retry-on-conflict", "3"]
            procs.append((kind, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            w += 1
    res = {"commits": 0, "aborts": 0, "retries": 0, "reruns": 0, "rows": 0, "p50": [], "p99": 0.0, "errors": 0, "optimize": 0}
    for kind, p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            res["errors"] += 1
            print(f"{name} [{mode}] {kind}: {err.strip()[-300:]}", file=sys.stderr)
            continue
        r = bench.last_json(out)
        if kind == "optimize":
            res["optimize"] += r.get("commits", 0)
            res["optimize_aborts"] = res.get("optimize_aborts", 0) + sum(r.get("aborts", {}).values())
            res["reruns"] += r.get("reruns", 0)
            res["optimize_detail"] = r
            continue
        res["commits"] += r.get("commits", 0)
        res["aborts"] += sum(r.get("aborts", {}).values())
        res["retries"] += r.get("retries", 0)
        res["reruns"] += r.get("reruns", 0)
        res["rows"] += r.get("rowsChanged", 0)
        res["p50"].append(r.get("p50Ms", 0))
        res["p99"] = max(res["p99"], r.get("p99Ms", 0))
    shutil.rmtree(d, ignore_errors=True)
    p50 = sorted(res["p50"])
    res["p50"] = p50[len(p50) // 2] if p50 else 0
    res["per_min"] = res["commits"] * 60.0 / seconds
    res["rows_per_min"] = res["rows"] * 60.0 / seconds
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=180)
    ap.add_argument("--curve-seconds", type=float, default=60)
    ap.add_argument("--curve", default="2,4,8,16", help="writer counts of the W4 curve; empty for none")
    ap.add_argument("--row-tracking", action="store_true", help="our table with row tracking on (Case 5 remaps a clustering OPTIMIZE)")
    ap.add_argument("--pre-cluster", action="store_true", help="OPTIMIZE our base table once (clustered, about --files outputs) before the runs")
    ap.add_argument("--only", default="", help="run only the workloads whose names start with these (e.g. W1,W4)")
    ap.add_argument("--modes", default="rlc,legacy,deltalake",
                    help="modes to run: rlc, rlc-rerun (re-execution on a true conflict, 3 re-runs), legacy, deltalake")
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="delta-rlc-scale-")
    started = time.time()
    try:
        ours, peer = make_base(a.bin, base, a.rows, a.files, a.row_tracking, a.pre_cluster,
                               peer="deltalake" in a.modes.split(","))
        results = {}
        only = [w for w in a.only.split(",") if w]
        for name, spec in WORKLOADS.items():
            if only and not any(name.startswith(w) for w in only):
                continue
            region = a.rows // 4
            for mode in a.modes.split(","):
                results[(name, mode)] = run(a.bin, base, peer if mode == "deltalake" else ours, name, spec, mode, a.seconds, region)
                print(name, mode, results[(name, mode)], file=sys.stderr, flush=True)
        curve = {}
        for k in [int(x) for x in a.curve.split(",") if x]:
            spec = [("merge", k, MERGE, MERGE_KEYS, 0)]
            for mode in ("rlc", "legacy"):
                curve[(k, mode)] = run(a.bin, base, ours, f"curve {k}", spec, mode, a.curve_seconds, a.rows // k)
                print("curve", k, mode, curve[(k, mode)], file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rt = ", row tracking on (ours)" if a.row_tracking else ""
    rt += ", ours clustered by one OPTIMIZE first" if a.pre_cluster else ""
    print(f"Table: {a.rows:,} rows `(id BIGINT, v BIGINT, s STRING)` in {a.files} files{rt}; {a.seconds:.0f} s per mode; "
          f"total {(time.time() - started) / 60:.1f} min.\n")
    print("| workload | mode | committed/min | rows changed/min | aborts | retries | re-runs | p50 ms | p99 ms | OPTIMIZE commits / aborts |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (name, mode), r in results.items():
        err = f" ({r['errors']} process(es) failed)" if r["errors"] else ""
        print(f"| {name} | {mode} | {r['per_min']:.1f} | {r['rows_per_min']:,.0f} | {r['aborts']}{err} | {r['retries']} | "
              f"{r['reruns']} | {r['p50']:.0f} | {r['p99']:.0f} | {r['optimize']} / {r.get('optimize_aborts', 0)} |")
    if ("rlc-rerun" in a.modes.split(",")) and "rlc" in a.modes.split(","):
        print("\n| workload | re-execution on ÷ off, committed | rows changed |")
        print("| --- | ---: | ---: |")
        for name in dict.fromkeys(n for n, _ in results):
            on, off = results[(name, "rlc-rerun")], results[(name, "rlc")]
            print(f"| {name} | {on['per_min'] / max(off['per_min'], 1e-9):.2f}× | {on['rows_per_min'] / max(off['rows_per_min'], 1e-9):.2f}× |")
    if all(m in a.modes.split(",") for m in ("rlc", "legacy", "deltalake")):
        print("\n| workload | rlc / legacy committed | rlc / deltalake committed | rlc / legacy rows |")
        print("| --- | ---: | ---: | ---: |")
        for name in dict.fromkeys(n for n, _ in results):
            r, l, p = (results[(name, m)] for m in ("rlc", "legacy", "deltalake"))
            ratio = lambda x, y: f"{x / y:.1f}×" if y else "∞ (0 committed)"
            print(f"| {name} | {ratio(r['per_min'], l['per_min'])} | {ratio(r['per_min'], p['per_min'])} | {ratio(r['rows_per_min'], l['rows_per_min'])} |")
    if not curve:
        return
    print(f"\nMany writers (W4 MERGE of {MERGE_KEYS:,} keys, {a.curve_seconds:.0f} s per point):\n")
    print("| writers | rlc committed/min | rlc aborts | legacy committed/min | legacy aborts | rlc / legacy |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in sorted({k for k, _ in curve}):
        r, l = curve[(k, "rlc")], curve[(k, "legacy")]
        ratio = f"{r['per_min'] / l['per_min']:.1f}×" if l["per_min"] else "∞"
        print(f"| {k} | {r['per_min']:.1f} | {r['aborts']} | {l['per_min']:.1f} | {l['aborts']} | {ratio} |")


if __name__ == "__main__":
    main()
