"""Starting local test servers (moto, Azurite): a free port, and waiting until one accepts
connections. Shared by the interop fixtures (conftest.py) and scripts/bench_requests.py."""
import socket
import time


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for_port(port: int, seconds: float = 20.0) -> None:
    """Returns once 127.0.0.1:port accepts a connection; raises after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")
            time.sleep(0.1)
