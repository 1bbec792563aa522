"""Ctrl-C interrupts a long statement: the engine runs with the GIL released and the binding
checks for signals while it waits."""

import signal
import subprocess
import sys
import time


def test_ctrl_c_interrupts_a_long_query():
    code = "import delta_rlc; print('ready', flush=True); delta_rlc.sql('SELECT sum(value) FROM range(0, 1000000000000)')"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    started = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("the statement did not stop on Ctrl-C")
    assert "KeyboardInterrupt" in err, err
    assert p.returncode != 0
    assert time.monotonic() - started < 20
