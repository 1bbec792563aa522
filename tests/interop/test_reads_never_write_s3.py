"""Reads never write, on S3 (moto): every read-only statement kind, and failing ones, leave the
bucket's objects (keys, sizes, ETags) exactly as they were."""
import subprocess

import boto3

from conftest import BIN

BUCKET = "delta-rlc-test"


def objects(env):
    s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id="test",
                      aws_secret_access_key="test", region_name="us-east-1")
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for o in page.get("Contents", []):
            out[o["Key"]] = (o["Size"], o["ETag"])
    return out


def run(env, sql, check=True):
    res = subprocess.run([BIN, "sql", sql], capture_output=True, text=True, env=env)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def test_read_only_statements_leave_the_bucket_unchanged(moto):
    t = f"s3://{BUCKET}/reads-never-write/t"
    missing = f"s3://{BUCKET}/reads-never-write/nosuch"
    run(moto, f"CREATE TABLE delta.`{t}` (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    run(moto, f"INSERT INTO delta.`{t}` VALUES (1, 'a'), (2, 'b')")
    run(moto, f"DELETE FROM delta.`{t}` WHERE id = 2")
    before = objects(moto)
    reads = [
        f"SELECT * FROM delta.`{t}`",
        f"SELECT count(*) FROM delta.`{t}` VERSION AS OF 1",
        f"DESCRIBE delta.`{t}`",
        f"DESCRIBE HISTORY delta.`{t}`",
        f"DESCRIBE DETAIL delta.`{t}`",
        f"SHOW TBLPROPERTIES delta.`{t}`",
        f"VACUUM delta.`{t}` DRY RUN",
        f"SELECT * FROM delta_files('{t}')",
        f"DELETE FROM delta.`{t}` WHERE id = 99",
    ]
    failing = [
        f"SELECT * FROM delta.`{missing}`",
        f"SELECT * FROM delta.`{t}` VERSION AS OF 99",
        f"SELECT nope FROM delta.`{t}`",
        f"INSERT INTO delta.`{missing}` VALUES (1)",
        f"CREATE TABLE delta.`{missing}` (id BIGINT) TBLPROPERTIES ('delta.appendOnly' = 'maybe')",
    ]
    # A data file on S3, read by path and by table function.
    import io
    import pyarrow as pa
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": [1, 2, 3]}), buf)
    boto3.client("s3", endpoint_url=moto["AWS_ENDPOINT_URL"], aws_access_key_id="test",
                 aws_secret_access_key="test", region_name="us-east-1").put_object(
        Bucket=BUCKET, Key="reads-never-write/ids.parquet", Body=buf.getvalue())
    before = objects(moto)
    parquet = f"s3://{BUCKET}/reads-never-write/ids.parquet"
    out = subprocess.run([BIN, "--format", "csv", "sql", f"SELECT count(*) AS n FROM read_parquet('{parquet}')"],
                         capture_output=True, text=True, env=moto)
    assert out.stdout == "n\n3\n", out.stderr
    reads.append(f"SELECT * FROM '{parquet}'")
    for sql in reads:
        run(moto, sql)
        assert objects(moto) == before, sql
    for sql in failing:
        assert run(moto, sql, check=False).returncode != 0, sql
        assert objects(moto) == before, sql
