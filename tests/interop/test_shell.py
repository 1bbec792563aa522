"""The shell as a person uses it: under a real terminal (tmux), with line editing on. One session
creates a table, loads a CSV and a Parquet file, MERGEs from a VALUES list with aliased columns,
time-travels with TIMESTAMP AS OF and prints an exact decimal."""
import json
import os
import shutil
import subprocess
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import BIN, rlc

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/test.sh")


def tmux(*args):
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def wait_for(session, text, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        screen = tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared:\n{screen}")


def send(session, line):
    # tmux reads an argument ending in ';' as a command separator; '\\;' is a literal one.
    if line.endswith(";"):
        line = line[:-1] + "\\;"
    tmux("send-keys", "-t", session, "-l", line)
    tmux("send-keys", "-t", session, "Enter")


def test_a_terminal_session(tmp_path):
    d = str(tmp_path)
    with open(os.path.join(d, "new.csv"), "w") as f:
        f.write("id,region,amount\n1,eu,10\n2,us,20\n")
    pq.write_table(pa.table({"id": [3, 4], "region": ["eu", "apac"], "amount": [30, 40]}),
                   os.path.join(d, "more.parquet"))
    session = f"rlc-{uuid.uuid4().hex[:8]}"
    tmux("new-session", "-d", "-s", session, "-x", "220", "-y", "60", "-c", d,
         f"env HOME={d} {BIN} --format csv shell; sleep 30")
    try:
        wait_for(session, "delta-rlc> ")
        send(session, "CREATE TABLE './orders' (id BIGINT NOT NULL, region STRING, amount INT);")
        wait_for(session, "committed version 0")
        send(session, "INSERT INTO './orders' SELECT * FROM 'new.csv';")
        wait_for(session, "committed version 1, 2 row(s) affected")
        # The timestamp of version 1, for TIMESTAMP AS OF after later commits.
        hist = json.loads(rlc("--json", "history", os.path.join(d, "orders")).stdout)["rows"]
        v1 = next(r["timestamp"] for r in hist if r["version"] == 1)
        send(session, "INSERT INTO './orders'")  # a statement over two lines
        send(session, "  SELECT id, region, amount FROM read_parquet('more.parquet');")
        wait_for(session, "committed version 2, 2 row(s) affected")
        send(session, "MERGE INTO './orders' t USING (VALUES (1, 'eu', 11), (9, 'us', 90)) AS s(id, region, amount) "
                      "ON t.id = s.id WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *;")
        wait_for(session, "committed version 3, 2 row(s) affected")
        send(session, f"SELECT count(*) AS at_v1 FROM './orders' TIMESTAMP AS OF '{v1}';")
        wait_for(session, "at_v1\n2\n")
        send(session, "SELECT sum(amount) AS total, CAST('12345678901234.5678901234' AS DECIMAL(24,10)) AS exact FROM './orders';")
        wait_for(session, "total,exact\n191,12345678901234.5678901234\n")
        send(session, "SELEC oops;")
        wait_for(session, "error: SQL error")
        send(session, ".quit")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    # The session's statements landed; the history file of the line editor was written.
    assert json.loads(rlc("--json", "sql", f"SELECT count(*) AS n FROM '{d}/orders'").stdout)["rows"] == [{"n": 5}]
    assert os.path.exists(os.path.join(d, ".delta_rlc_history"))
