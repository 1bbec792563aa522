"""The lost-response campaign (issue #48, docs/verification.md) on each store's own commit
primitive: the local disk's put-if-absent, S3's conditional PUT (moto, conditional writes made
atomic) and Azure's (Azurite). Writers commit while a share of their commit puts lose the response
(applied, unanswered) or the request (not applied, unanswered); every statement's reported outcome
is held against the table, and the whole table is read at the end. The full campaign (10,000+
faults per store) is in docs/verification.md; CI runs a small one per store."""
import re
import subprocess
import uuid

import pytest

from conftest import BIN, DEV_BIN

LOSSES = 120


def campaign(location, env=None, losses=LOSSES, writers=3):
    res = subprocess.run([DEV_BIN, "bench", "lost-responses", "--location", location, "--losses", str(losses),
                          "--writers", str(writers), "--seed", "7"], env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    line = res.stdout.strip().splitlines()[-1]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (faults|committed|statements|responses lost|requests lost)", line)}
    violations = re.search(r"violations: (.*)$", line).group(1)
    return counts, violations, line


def check(location, env=None):
    counts, violations, line = campaign(location, env)
    print(line)
    assert counts["faults"] >= LOSSES, line
    assert counts["responses lost"] > 0 and counts["requests lost"] > 0, line
    assert counts["committed"] > LOSSES // 4, line
    # Every violation count is zero.
    assert set(re.findall(r"\d+", violations)) == {"0"}, line


def test_lost_responses_on_a_local_disk(tmp_path):
    check(str(tmp_path / "t"))


def test_lost_responses_on_s3(moto):
    check(f"s3://delta-rlc-test/lost-{uuid.uuid4().hex[:8]}", env=moto)


def test_lost_responses_on_azure(azurite):
    check(f"az://delta-rlc-test/lost-{uuid.uuid4().hex[:8]}", env=azurite)
