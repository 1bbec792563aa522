#!/usr/bin/env python3
"""One writer on a store with S3's latency: delta-rlc (the `delta_rlc` package) beside deltalake,
both through one moto S3 server behind a proxy that delays every request by a draw from
bench/latency/s3.profile (tests/interop/store_proxy.py). Issue #51's first goal.

The table: ROWS rows in FILES files (one append each), deletion vectors on for delta-rlc
(deltalake rewrites files). Each engine runs, on a handle it keeps open, RUNS rounds of: a MERGE of
50 keys scattered over every file (matched → update), an UPDATE of 50 contiguous ids, a DELETE of 50
contiguous ids — each on rows the previous rounds did not touch. Reported per statement kind: the
median latency and the requests per statement as the proxy counts them (G GET, P PUT, L LIST,
H HEAD, D DELETE, M POST: multipart uploads), and for delta-rlc the deepest critical path it
reported.

Run from the repository root with a release-grade build of the package (BENCHMARKS.md):

    .venv/bin/python scripts/bench_latency.py [--rows 1000000] [--files 20] [--runs 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from local_servers import free_port, wait_for_port  # noqa: E402
from store_proxy import StoreProxy  # noqa: E402

import deltalake  # noqa: E402
import delta_rlc  # noqa: E402

BUCKET = "latency"


def start_moto():
    port = free_port()
    server = os.path.join(ROOT, "tests", "interop", "moto_atomic.py")
    proc = subprocess.Popen([sys.executable, server, "127.0.0.1", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port)
    import boto3
    boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id="test",
                 aws_secret_access_key="test", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    return proc, port


def options(endpoint):
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


def rows(lo, n):
    return pa.table({"id": pa.array(range(lo, lo + n), pa.int64()), "v": pa.array(range(lo, lo + n), pa.int64())})


def build(module, uri, opts, total, files, dvs):
    per = total // files
    config = {"delta.enableDeletionVectors": "true"} if dvs else None
    for f in range(files):
        module.write_deltalake(uri, rows(f * per, per), mode="append", storage_options=opts,
                               configuration=config if f == 0 else None)


def statements(total, files, run):
    """(kind, callable(dt)) for round `run`: rows no earlier round touched."""
    per = total // files
    # MERGE keys: 50 spread over every file, offset by the round.
    keys = [(i * (total // 50) + 7 + run * 3) % total for i in range(50)]
    source = pa.table({"id": pa.array(keys, pa.int64()), "v": pa.array([-1] * 50, pa.int64())})
    lo_u = per // 2 + run * 100
    lo_d = per + per // 2 + run * 100

    def merge(dt):
        return dt.merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update(updates={"v": "s.v"}).execute()

    def update(dt):
        return dt.update(updates={"v": "-2"}, predicate=f"id >= {lo_u} AND id < {lo_u + 50}")

    def delete(dt):
        return dt.delete(f"id >= {lo_d} AND id < {lo_d + 50}")

    return [("MERGE 50 scattered keys", merge), ("UPDATE 50 ids", update), ("DELETE 50 ids", delete)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--profile", default=os.path.join(ROOT, "bench", "latency", "s3.profile"))
    args = ap.parse_args()
    moto, port = start_moto()
    proxy = StoreProxy(port, seed=7)
    try:
        direct = options(f"http://127.0.0.1:{port}")
        slow = options(proxy.endpoint())
        engines = [("delta-rlc", delta_rlc, True), ("deltalake", deltalake, False)]
        results = {}
        for name, module, dvs in engines:
            uri = f"s3://{BUCKET}/{name}"
            t0 = time.time()
            build(module, uri, direct, args.rows, args.files, dvs)
            print(f"{name}: table of {args.rows} rows / {args.files} files built in {time.time() - t0:.1f} s", flush=True)
        proxy.set_profile(args.profile)
        for name, module, _ in engines:
            dt = module.DeltaTable(f"s3://{BUCKET}/{name}", storage_options=slow)
            proxy.take_counts()
            for run in range(args.runs):
                for kind, stmt in statements(args.rows, args.files, run):
                    t0 = time.perf_counter()
                    metrics = stmt(dt)
                    elapsed = time.perf_counter() - t0
                    counts = proxy.take_counts()
                    depth = metrics.get("critical_path_depth") if isinstance(metrics, dict) else None
                    results.setdefault((kind, name), []).append((elapsed, counts, depth))
                    print(f"  {name} {kind} run {run}: {elapsed * 1000:.0f} ms {counts} depth {depth}", flush=True)
        print()
        print("| statement (1 writer, S3 profile) | delta-rlc median | deltalake median | ratio | delta-rlc requests | deltalake requests | delta-rlc depth |")
        print("| --- | ---: | ---: | ---: | --- | --- | ---: |")
        for kind, _ in statements(args.rows, args.files, 0):
            def summary(name):
                runs = results[(kind, name)]
                med = statistics.median(r[0] for r in runs)
                total = {}
                for _, c, _ in runs:
                    for k, v in c.items():
                        total[k] = total.get(k, 0) + v
                abbrev = {"GET": "G", "PUT": "P", "LIST": "L", "HEAD": "H", "DELETE": "D", "POST": "M"}
                per = " ".join(f"{abbrev.get(k, k)}{v / len(runs):.1f}" for k, v in sorted(total.items()))
                n = sum(total.values()) / len(runs)
                depths = [r[2] for r in runs if r[2] is not None]
                return med, f"{n:.1f} ({per})", (max(depths) if depths else "–")
            (rm, rr, rd), (dm, dr, _) = summary("delta-rlc"), summary("deltalake")
            print(f"| {kind} | {rm * 1000:.0f} ms | {dm * 1000:.0f} ms | {rm / dm:.2f} | {rr} | {dr} | {rd} |")
    finally:
        proxy.close()
        moto.kill()


if __name__ == "__main__":
    main()
