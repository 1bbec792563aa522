"""moto's S3 server with its conditional writes made atomic.

moto checks a PUT's `If-None-Match: *` and then writes the object: two steps, not atomic across its
request threads, so two concurrent commits of one log version could both be told "created" and one
would silently replace the other. A concurrent-commit test against plain moto then proves nothing
about lost commits. This launcher runs moto's own application and serialises every request that
carries a precondition (`If-None-Match` / `If-Match`), as S3 itself makes them atomic; other
requests stay concurrent. The test suite's moto (tests/interop/conftest.py) and the benchmarks start
moto through it.

    python tests/interop/moto_atomic.py HOST PORT
"""
import os
import sys
import threading

from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple

PRECONDITIONS = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH")


def atomic_preconditions(app):
    lock = threading.Lock()

    def wrapped(environ, start_response):
        if any(environ.get(h) for h in PRECONDITIONS):
            with lock:
                # The whole response is produced under the lock: the check and the write.
                return list(app(environ, start_response))
        return app(environ, start_response)

    return wrapped


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, atomic_preconditions(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
