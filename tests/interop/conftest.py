"""Shared fixtures: the delta-rlc binary and tables it writes for peers to read."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from local_servers import free_port, wait_for_port  # noqa: E402

BIN = os.environ.get("DELTA_RLC_BIN", os.path.join(os.path.dirname(__file__), "../../target/debug/delta-rlc"))
# The developer tooling (load generators, benchmark drivers), built beside the CLI.
DEV_BIN = os.environ.get("DELTA_RLC_DEV_BIN", os.path.join(os.path.dirname(BIN), "delta-rlc-dev"))


def rlc(*args, check=True):
    res = subprocess.run([BIN, *args], capture_output=True, text=True)
    if check and res.returncode != 0:
        raise AssertionError(f"delta-rlc {args} failed ({res.returncode}): {res.stderr}")
    return res


def rlc_rows(sql):
    """Rows of a query as sorted tuples, via `delta-rlc sql --json`."""
    out = json.loads(rlc("sql", "--json", sql).stdout)
    return out["rows"]


def make_tables(base):
    tables = {}
    # Partitioned, DVs enabled (default), special characters in partition values, several commits.
    p = os.path.join(base, "partitioned")
    rlc("sql", f"CREATE TABLE '{p}' (id BIGINT NOT NULL, p STRING, x INT, d DOUBLE, ok BOOLEAN, day DATE) PARTITIONED BY (p)")
    rlc("sql", f"INSERT INTO '{p}' SELECT value, CASE WHEN value % 3 = 0 THEN 'a:b' WHEN value % 3 = 1 THEN 'c d' ELSE 'e%f' END, CAST(value AS INT), value * 1.5, value % 2 = 0, DATE '2024-01-01' FROM range(0, 300)")
    rlc("sql", f"INSERT INTO '{p}' VALUES (1000, NULL, NULL, NULL, NULL, NULL)")
    tables["partitioned"] = p
    # Clustered with row tracking.
    c = os.path.join(base, "clustered")
    rlc("sql", f"CREATE TABLE '{c}' (id BIGINT, name STRING) CLUSTER BY (id) TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    rlc("sql", f"INSERT INTO '{c}' SELECT value, concat('n', CAST(value AS VARCHAR)) FROM range(0, 50)")
    rlc("sql", f"INSERT INTO '{c}' SELECT value, 'second' FROM range(50, 60)")
    tables["clustered"] = c
    # With a checkpoint (interval 3) and an overwrite, so tombstones exist.
    k = os.path.join(base, "checkpointed")
    rlc("sql", f"CREATE TABLE '{k}' (id BIGINT, s STRING) TBLPROPERTIES ('delta.checkpointInterval' = '3')")
    for i in range(5):
        rlc("sql", f"INSERT INTO '{k}' VALUES ({i}, 'v{i}')")
    rlc("sql", f"INSERT OVERWRITE '{k}' SELECT id, s FROM '{k}' WHERE id >= 2")
    rlc("sql", f"INSERT INTO '{k}' VALUES (9, 'nine')")
    assert os.path.exists(os.path.join(k, "_delta_log", "00000000000000000006.checkpoint.parquet"))
    tables["checkpointed"] = k
    # DML with deletion vectors: DELETE, UPDATE (DV + image file), MERGE upsert.
    d = os.path.join(base, "dml_dv")
    rlc("sql", f"CREATE TABLE '{d}' (id BIGINT NOT NULL, v STRING)")
    rlc("sql", f"INSERT INTO '{d}' SELECT value, 'a' FROM range(0, 100)")
    rlc("sql", f"INSERT INTO '{d}' SELECT value, 'b' FROM range(100, 200)")
    rlc("sql", f"DELETE FROM '{d}' WHERE id % 10 = 3")
    rlc("sql", f"UPDATE '{d}' SET v = 'u' WHERE id BETWEEN 40 AND 59")
    rlc("sql", f"MERGE INTO '{d}' t USING (SELECT value AS id, 'm' AS v FROM range(190, 210)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    tables["dml_dv"] = d
    # Copy-on-write DML (DVs off).
    w = os.path.join(base, "dml_cow")
    rlc("sql", f"CREATE TABLE '{w}' (id BIGINT NOT NULL, v STRING) TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    rlc("sql", f"INSERT INTO '{w}' SELECT value, 'a' FROM range(0, 100)")
    rlc("sql", f"DELETE FROM '{w}' WHERE id < 10")
    rlc("sql", f"UPDATE '{w}' SET v = 'u' WHERE id > 90")
    tables["dml_cow"] = w
    # Concurrency outcomes kept on disk by the scenario runner: merged DVs (Case 2), remapped
    # compaction outputs with tagged tombstones (Case 4 forward and reverse), row tracking + ZORDER.
    scen = os.path.join(os.path.dirname(__file__), "..", "scenarios")
    keep = os.path.join(base, "scenarios")
    files = [os.path.join(scen, f) for f in ("case2/01-disjoint-deletes.toml", "case2/06-update-vs-update.toml",
                                               "case4/01-forward-delete.toml", "case4/12-reverse-delete.toml",
                                               "case4/14-reverse-update.toml")]
    rlc("scenario", "run", "--dir", keep, *files)
    for i, f in enumerate(files):
        stem = os.path.splitext(os.path.basename(f))[0]
        tables["scenario_" + stem] = os.path.join(keep, f"{i:03d}-{stem}")
    # Row tracking through UPDATE and ZORDER (materialized row ids in rewritten files).
    r = os.path.join(base, "rowtracking")
    rlc("sql", f"CREATE TABLE '{r}' (id BIGINT NOT NULL, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    rlc("sql", f"INSERT INTO '{r}' SELECT value, 'a' FROM range(0, 50)")
    rlc("sql", f"INSERT INTO '{r}' SELECT value, 'b' FROM range(50, 100)")
    rlc("sql", f"UPDATE '{r}' SET v = 'u' WHERE id % 7 = 0")
    rlc("sql", f"OPTIMIZE '{r}' ZORDER BY (v, id)")
    rlc("sql", f"DELETE FROM '{r}' WHERE id = 42")
    tables["rowtracking"] = r
    # Integer columns too varied for a dictionary (> 131,072 distinct BIGINTs / TIMESTAMPs, > 262,144
    # distinct INTs in one file): written DELTA_BINARY_PACKED without one, then DELETE and UPDATE.
    i = os.path.join(base, "wide_ints")
    # e swings between the extremes of BIGINT (64-bit deltas, i64::MIN once).
    rlc("sql", f"CREATE TABLE '{i}' (id BIGINT NOT NULL, x INT, ts TIMESTAMP, e BIGINT, v STRING)")
    rlc("sql", f"INSERT INTO '{i}' SELECT value, CAST((value * 7919) % 300007 AS INT) - 150000, to_timestamp_seconds(value), "
               "CASE WHEN value = 5 THEN -9223372036854775807 - 1 WHEN value % 3 = 0 THEN -9223372036854775807 + value "
               "WHEN value % 3 = 1 THEN 9223372036854775807 - value ELSE value END, "
               f"concat('r', CAST(value % 97 AS VARCHAR)) FROM range(0, {WIDE_ROWS})")
    rlc("sql", f"DELETE FROM '{i}' WHERE id % 1000 = 7")
    rlc("sql", f"UPDATE '{i}' SET x = x + 1 WHERE id % 5000 = 1")
    tables["wide_ints"] = i
    return tables


# Rows of the wide_ints table, and how many survive its DELETE (every row has ts = id seconds).
WIDE_ROWS = 300_000
WIDE_LIVE = WIDE_ROWS - WIDE_ROWS // 1000


@pytest.fixture(scope="session")
def tables(tmp_path_factory):
    return make_tables(str(tmp_path_factory.mktemp("interop")))


def expected(path, columns):
    rows = rlc_rows(f"SELECT {', '.join(columns)} FROM '{path}'")
    return sorted(tuple(r.get(c) for c in columns) for r in rows)




@pytest.fixture(scope="session")
def moto():
    port = free_port()
    # Conditional writes made atomic (moto's own are not, across its threads): moto_atomic.py.
    server = os.path.join(os.path.dirname(__file__), "moto_atomic.py")
    proc = subprocess.Popen([sys.executable, server, "127.0.0.1", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import boto3
        endpoint = f"http://127.0.0.1:{port}"
        wait_for_port(port)
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
        s3.create_bucket(Bucket="delta-rlc-test")
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                   AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
        yield env
    finally:
        # Azurite waits for idle keep-alive connections on SIGTERM; its data is throwaway.
        proc.kill()
        proc.wait(timeout=10)




AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """Azurite's blob service on 127.0.0.1 (installed by scripts/setup-azurite.sh) with a container
    `delta-rlc-test`; yields the environment that points delta-rlc (object_store) at it."""
    root = os.path.join(os.path.dirname(__file__), "../..")
    server = os.path.join(root, ".azurite/node_modules/.bin/azurite-blob")
    if not os.path.exists(server):
        subprocess.run([os.path.join(root, "scripts/setup-azurite.sh")], check=True)
    port = free_port()
    proc = subprocess.Popen([server, "--blobHost", "127.0.0.1", "--blobPort", str(port),
                             "--silent", "--skipApiVersionCheck", "--loose", "--inMemoryPersistence"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Node's start takes ~4 s on an idle 2-core machine and far longer on a loaded one.
        wait_for_port(port, 90.0)
        from azure.storage.blob import BlobServiceClient
        url = f"http://127.0.0.1:{port}/devstoreaccount1"
        conn = (f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};"
                f"BlobEndpoint={url};")
        BlobServiceClient.from_connection_string(conn).create_container("delta-rlc-test")
        env = dict(os.environ, AZURE_STORAGE_USE_EMULATOR="true", AZURITE_BLOB_STORAGE_URL=f"http://127.0.0.1:{port}")
        env["AZURITE_CONNECTION_STRING"] = conn
        yield env
    finally:
        # Azurite waits for idle keep-alive connections on SIGTERM; its data is throwaway.
        proc.kill()
        proc.wait(timeout=10)
