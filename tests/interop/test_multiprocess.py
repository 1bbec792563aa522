"""Several OS processes commit to one table at once — on a local disk, on an S3-compatible server
(moto on 127.0.0.1 with conditional writes) and on Azure Blob Storage (Azurite on 127.0.0.1).
Nothing is lost or duplicated; versions are contiguous."""
import json
import os
import subprocess

import pytest

from conftest import BIN, DEV_BIN, free_port, rlc, rlc_rows

APPENDS = int(os.environ.get("DELTA_RLC_MP_APPENDS", "200"))


def run_writers(table, n_writers, count, env=None):
    procs = [
        subprocess.Popen([DEV_BIN, "stress", "append", table, "--count", str(count), "--writer", str(w)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for w in range(n_writers)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def check_table(table, n_writers, count, env=None):
    rows = json.loads(subprocess.run([BIN, "sql", "--json", f"SELECT id FROM '{table}'"], capture_output=True, text=True, env=env, check=True).stdout)["rows"]
    ids = sorted(r["id"] for r in rows)
    expected = sorted(w * 1_000_000 + i for w in range(n_writers) for i in range(count))
    assert ids == expected, "rows lost or duplicated"
    hist = json.loads(subprocess.run([BIN, "history", "--json", table], capture_output=True, text=True, env=env, check=True).stdout)["rows"]
    versions = sorted(h["version"] for h in hist)
    assert versions == list(range(n_writers * count + 1)), "versions not contiguous"


def test_two_processes_append_to_a_local_table(tmp_path):
    table = str(tmp_path / "mp")
    rlc("sql", f"CREATE TABLE '{table}' (id BIGINT, writer INT) TBLPROPERTIES ('delta.checkpointInterval' = '50')")
    results = run_writers(table, 2, APPENDS)
    check_table(table, 2, APPENDS)
    print("local retries:", [r["retries"] for r in results])


def test_two_processes_append_to_s3(moto):
    table = "s3://delta-rlc-test/mp"
    count = max(APPENDS // 4, 10)
    subprocess.run([BIN, "sql", f"CREATE TABLE delta.`{table}` (id BIGINT, writer INT)"], env=moto, check=True, capture_output=True)
    results = run_writers(table, 2, count, env=moto)
    check_table(table, 2, count, env=moto)
    print("s3 retries:", [r["retries"] for r in results])


def test_two_processes_append_to_azure(azurite):
    table = "az://delta-rlc-test/mp"
    # Half the local test's appends: Azurite answers each commit slowly (200 per writer took 44 s);
    # 100 per writer still cross four checkpoints and keep the writers racing.
    count = max(APPENDS // 2, 10)
    subprocess.run([BIN, "sql", f"CREATE TABLE delta.`{table}` (id BIGINT, writer INT) TBLPROPERTIES ('delta.checkpointInterval' = '50', "
                    "'delta.enableDeletionVectors' = 'false')"], env=azurite, check=True, capture_output=True)
    results = run_writers(table, 2, count, env=azurite)
    check_table(table, 2, count, env=azurite)
    print("azure retries:", [r["retries"] for r in results])
    # A peer on the same store (delta-rs, through its own object_store client) reads the same rows.
    from deltalake import DeltaTable
    os.environ["AZURITE_BLOB_STORAGE_URL"] = azurite["AZURITE_BLOB_STORAGE_URL"]
    dt = DeltaTable(table, storage_options={"azure_storage_use_emulator": "true"})
    assert dt.version() == 2 * count
    ids = sorted(dt.to_pyarrow_table().column("id").to_pylist())
    assert ids == sorted(w * 1_000_000 + i for w in range(2) for i in range(count))


def test_unreachable_s3_endpoint_is_one_line_error(tmp_path):
    env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x",
               AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true", AWS_MAX_RETRIES="0")
    res = subprocess.run([BIN, "sql", "SELECT * FROM delta.`s3://nobucket/t`"], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert res.stderr.count("\n") <= 1 and res.stderr.startswith("error:"), res.stderr
