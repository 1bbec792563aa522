#!/usr/bin/env python3
"""Request cost: how many object-store requests (GET, PUT, LIST, HEAD, DELETE) each operation makes,
for delta-rlc (its Python package, `delta_rlc`) and deltalake on the same table shapes, both talking
to one S3 server (moto on 127.0.0.1) through a counting proxy (tests/interop/store_proxy.py).

Each figure is "open the table at its latest version, then do the operation", as a process that
starts, works and exits would pay it. Run from the repository root after scripts/build-python.sh:

    .venv/bin/python scripts/bench_requests.py [--out FILE]
"""
import argparse
import os
import subprocess
import sys
import uuid

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from local_servers import free_port, wait_for_port  # noqa: E402
from store_proxy import StoreProxy  # noqa: E402

import deltalake  # noqa: E402
import delta_rlc  # noqa: E402

KINDS = ["GET", "PUT", "LIST", "HEAD", "DELETE"]
FILES = 10
ROWS_PER_FILE = 1000
WINNERS = 5


def start_moto():
    port = free_port()
    # Conditional writes made atomic (moto's own are not, across its threads): moto_atomic.py.
    server = os.path.join(ROOT, "tests", "interop", "moto_atomic.py")
    proc = subprocess.Popen([sys.executable, server, "127.0.0.1", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port)
    import boto3
    boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id="test", aws_secret_access_key="test",
                 region_name="us-east-1").create_bucket(Bucket="bench")
    return proc, port


def batch(lo, n):
    return pa.table({"k": pa.array(range(lo, lo + n), pa.int64()), "v": pa.array([0] * n, pa.int64())})


class Engine:
    def __init__(self, name, module, options):
        self.name, self.m, self.options = name, module, options

    def table(self, uri):
        return self.m.DeltaTable(uri, storage_options=self.options)

    def append(self, target, data, configuration=None):
        self.m.write_deltalake(target, data, mode="append", configuration=configuration,
                               storage_options=self.options if isinstance(target, str) else None)


def make_table(engine, dvs):
    uri = f"s3://bench/{engine.name}-{uuid.uuid4().hex[:8]}"
    conf = {"delta.enableDeletionVectors": "true" if dvs else "false"}
    for f in range(FILES):
        engine.append(uri, batch(f * ROWS_PER_FILE, ROWS_PER_FILE), configuration=conf if f == 0 else None)
    return uri


def measure(proxy, fn):
    proxy.take_counts()
    fn()
    c = proxy.take_counts()
    unknown = set(c) - set(KINDS) - {"POST"}
    assert not unknown, unknown
    c["DELETE"] = c.get("DELETE", 0)
    return {k: c.get(k, 0) for k in KINDS}


def operations(engine, proxy, long_log_uri, dvs):
    out = {}
    uri = make_table(engine, dvs)
    out["open the table (10 commits)"] = measure(proxy, lambda: engine.table(uri).file_uris())
    out[f"open the table (120 commits, checkpoint at 100)"] = measure(proxy, lambda: engine.table(long_log_uri).file_uris())
    out["append 1 row, no conflict"] = measure(proxy, lambda: engine.append(uri, batch(10**6, 1)))

    stale = engine.table(uri)
    stale.file_uris()
    for i in range(WINNERS):
        engine.append(uri, batch(2 * 10**6 + i, 1))
    out[f"append 1 row through a handle {WINNERS} commits behind"] = measure(proxy, lambda: engine.append(stale, batch(3 * 10**6, 1)))

    def dml(label, op):
        u = make_table(engine, dvs)
        out[label] = measure(proxy, lambda: op(engine.table(u)))

    dml("DELETE 10% of rows", lambda t: t.delete("k % 10 = 0"))
    dml("UPDATE 10% of rows", lambda t: t.update(predicate="k % 10 = 1", updates={"v": "v + 1"}))
    src = pa.table({"k": pa.array(range(9950, 10050), pa.int64()), "v": pa.array([7] * 100, pa.int64())})
    dml("MERGE 100 keys (50 matched)", lambda t: t.merge(src, "t.k = s.k", source_alias="s", target_alias="t")
        .when_matched_update(updates={"v": "s.v"}).when_not_matched_insert_all().execute())
    dml("OPTIMIZE (compact 10 files)", lambda t: t.optimize.compact())
    return out


def fmt(c):
    total = sum(c.values())
    parts = " ".join(f"{k[0] if k != 'DELETE' else 'D'}{c[k]}" for k in KINDS if c[k])
    return f"{total} ({parts})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write the markdown table here too")
    args = ap.parse_args()
    proc, port = start_moto()
    proxy = StoreProxy(port)
    try:
        opts = {"AWS_ENDPOINT_URL": proxy.endpoint(), "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "aws_conditional_put": "etag"}
        rlc = Engine("rlc", delta_rlc, opts)
        dl = Engine("deltalake", deltalake, opts)
        long_log = f"s3://bench/long-{uuid.uuid4().hex[:8]}"
        for i in range(120):
            rlc.append(long_log, batch(i, 1), configuration={"delta.enableDeletionVectors": "false"} if i == 0 else None)
        results = {
            "delta-rlc (DVs on)": operations(rlc, proxy, long_log, True),
            "delta-rlc (DVs off)": operations(rlc, proxy, long_log, False),
            "deltalake 1.6.6": operations(dl, proxy, long_log, False),
        }
    finally:
        proxy.close()
        proc.terminate()
        proc.wait(timeout=10)
    cols = list(results)
    lines = ["| operation (open + do) | " + " | ".join(cols) + " | delta-rlc ÷ deltalake |",
             "| --- | " + " | ".join("---:" for _ in cols) + " | ---: |"]
    for op in results[cols[0]]:
        cells = [fmt(results[c][op]) for c in cols]
        best_rlc = min(sum(results[c][op].values()) for c in cols[:2])
        peer = sum(results[cols[2]][op].values())
        lines.append(f"| {op} | " + " | ".join(cells) + f" | {best_rlc / peer:.2f} |")
    lines.append("")
    lines.append("Requests: total (G GET, P PUT, L LIST, H HEAD, D DELETE). Ratio: the better delta-rlc mode over deltalake.")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
