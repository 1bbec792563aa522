"""Object stores as deployed: transient faults between delta-rlc and S3 (moto behind a proxy that
throttles with 503 SlowDown, loses responses after the store applied a request, and slows every
answer), and stores without conditional writes. Rows and versions are checked exactly."""
import json
import os
import subprocess
import uuid

import pytest

from conftest import BIN
from store_proxy import StoreProxy
from test_multiprocess import check_table, run_writers


@pytest.fixture
def faulty_s3(moto):
    upstream = int(moto["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    proxy = StoreProxy(upstream, seed=7)
    env = dict(moto, AWS_ENDPOINT_URL=proxy.endpoint())
    yield proxy, env
    proxy.close()


def sql(env, statement, check=True):
    res = subprocess.run([BIN, "sql", "--json", statement], env=env, capture_output=True, text=True)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def test_concurrent_appends_survive_throttling_lost_responses_and_slow_answers(faulty_s3):
    proxy, env = faulty_s3
    table = f"s3://delta-rlc-test/faults-{uuid.uuid4().hex[:8]}"
    sql(env, f"CREATE TABLE delta.`{table}` (id BIGINT, writer INT)")
    proxy.throttle_share, proxy.lose_share, proxy.delay = 0.10, 0.05, 0.002
    count = 30
    results = run_writers(table, 2, count, env=env)
    proxy.throttle_share = proxy.lose_share = proxy.delay = 0
    # Each landed commit whose answer was lost is recognised as ours: no duplicates, no gaps.
    check_table(table, 2, count, env=env)
    assert proxy.faults["throttled"] > 10 and proxy.faults["lost"] > 5, proxy.faults
    print("faults:", proxy.faults, "retries:", [r["retries"] for r in results])


def test_dml_under_faults_changes_exactly_the_rows_asked(faulty_s3):
    proxy, env = faulty_s3
    table = f"s3://delta-rlc-test/faults-dml-{uuid.uuid4().hex[:8]}"
    sql(env, f"CREATE TABLE delta.`{table}` (k BIGINT, v BIGINT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    sql(env, f"INSERT INTO delta.`{table}` SELECT value, 0 FROM range(0, 500)")
    proxy.throttle_share, proxy.lose_share = 0.15, 0.05
    sql(env, f"DELETE FROM delta.`{table}` WHERE k % 10 = 0")
    sql(env, f"UPDATE delta.`{table}` SET v = 1 WHERE k % 10 = 1")
    sql(env, f"MERGE INTO delta.`{table}` t USING (SELECT value AS k FROM range(495, 505)) s ON t.k = s.k "
             f"WHEN MATCHED THEN UPDATE SET v = 2 WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, 3)")
    sql(env, f"OPTIMIZE delta.`{table}`")
    proxy.throttle_share = proxy.lose_share = 0
    rows = json.loads(sql(env, f"SELECT k, v FROM delta.`{table}` ORDER BY k").stdout)["rows"]
    expected = {k: 0 for k in range(500) if k % 10 != 0}
    for k in expected:
        if k % 10 == 1:
            expected[k] = 1
    for k in range(495, 505):
        if k in expected or k >= 500:
            expected[k] = 2 if k < 500 else 3
    assert [(r["k"], r["v"]) for r in rows] == sorted(expected.items())
    hist = json.loads(subprocess.run([BIN, "history", "--json", f"{table}"], env=env, capture_output=True,
                                     text=True, check=True).stdout)["rows"]
    assert sorted(h["version"] for h in hist) == list(range(6)), "one commit per statement, none twice"
    assert proxy.faults["throttled"] > 0 and proxy.faults["lost"] > 0, proxy.faults


def test_a_store_without_conditional_writes_refuses_commits_unless_single_writer_is_accepted(moto):
    import boto3
    s3 = boto3.client("s3", endpoint_url=moto["AWS_ENDPOINT_URL"], aws_access_key_id="test",
                      aws_secret_access_key="test", region_name="us-east-1")
    key = f"nocond-{uuid.uuid4().hex[:8]}"
    table = f"s3://delta-rlc-test/{key}"
    env = dict(moto, AWS_CONDITIONAL_PUT="disabled")
    res = sql(env, f"CREATE TABLE delta.`{table}` (id BIGINT)", check=False)
    assert res.returncode != 0
    assert res.stderr.count("\n") <= 1 and "no conditional writes" in res.stderr, res.stderr
    assert "unsafe_single_writer" in res.stderr
    listed = s3.list_objects_v2(Bucket="delta-rlc-test", Prefix=f"{key}/_delta_log/").get("KeyCount", 0)
    assert listed == 0, "nothing committed"
    env["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
    sql(env, f"CREATE TABLE delta.`{table}` (id BIGINT)")
    sql(env, f"INSERT INTO delta.`{table}` VALUES (1), (2)")
    rows = json.loads(sql(env, f"SELECT id FROM delta.`{table}` ORDER BY id").stdout)["rows"]
    assert [r["id"] for r in rows] == [1, 2]
    # A bad value for the opt-in is a one-line error, not a silent default.
    env["AWS_S3_ALLOW_UNSAFE_RENAME"] = "perhaps"
    res = sql(env, f"SELECT * FROM delta.`{table}`", check=False)
    assert res.returncode != 0 and res.stderr.count("\n") <= 1, res.stderr


def test_commits_by_delta_spark_on_s3_are_warned_about_once(moto):
    import boto3
    s3 = boto3.client("s3", endpoint_url=moto["AWS_ENDPOINT_URL"], aws_access_key_id="test",
                      aws_secret_access_key="test", region_name="us-east-1")
    key = f"mixed-{uuid.uuid4().hex[:8]}"
    table = f"s3://delta-rlc-test/{key}"
    sql(moto, f"CREATE TABLE delta.`{table}` (id BIGINT)")
    res = sql(moto, f"SELECT * FROM delta.`{table}`")
    assert "warning" not in res.stderr, res.stderr
    # A commit as Delta Spark writes it (its S3 log store is not put-if-absent).
    commit = {"commitInfo": {"timestamp": 1700000000000, "operation": "WRITE", "operationParameters": {"mode": "Append"},
                             "isBlindAppend": True, "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0"}}
    s3.put_object(Bucket="delta-rlc-test", Key=f"{key}/_delta_log/00000000000000000001.json",
                  Body=(json.dumps(commit) + "\n").encode())
    res = subprocess.run([BIN, "sql", "-f", "-"], input=f"SELECT * FROM delta.`{table}`;\nSELECT * FROM delta.`{table}`;\n",
                         env=moto, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    warnings = [l for l in res.stderr.splitlines() if l.startswith("warning:")]
    assert len(warnings) == 1 and "Apache-Spark" in warnings[0] and "put-if-absent" in warnings[0], res.stderr
