"""An HTTP proxy in front of an object-store emulator (moto for S3, Azurite for Azure) that
- counts requests by kind (GET, PUT, LIST, HEAD, DELETE, POST), for the request-cost benchmark, and
- injects transient faults on request: a share of requests answered "503 SlowDown" before they reach
  the store, a share whose response is lost after the store applied them (the client sees a 500),
  and a fixed delay on every request (slow responses), and
- delays each request like a remote object store: a latency profile (`set_profile`, the format and
  numbers of bench/latency/s3.profile, the same the engine's `delta_rlc_latency_profile` reads) draws
  a lognormal first-byte latency per request kind, so both engines wait alike.

Both engines under test speak to the proxy exactly as to the store, so their counts compare."""
import http.client
import math
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade"}


def request_kind(method, path):
    q = parse_qs(urlsplit(path).query, keep_blank_values=True)
    if method == "GET" and ("list-type" in q or q.get("comp") == ["list"] or
                            ("prefix" in q and "uploadId" not in q) or "delimiter" in q):
        return "LIST"
    if method == "POST" and "delete" in q:
        return "DELETE"
    return method


class StoreProxy:
    def __init__(self, upstream_port, seed=1):
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.counts = {}
        self.log = []
        self.throttle_share = 0.0
        self.lose_share = 0.0
        self.delay = 0.0
        self.profile = {}
        self.faults = {"throttled": 0, "lost": 0}
        self.rng = random.Random(seed)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                kind = request_kind(self.command, self.path)
                with proxy.lock:
                    proxy.counts[kind] = proxy.counts.get(kind, 0) + 1
                    proxy.log.append((kind, self.path))
                    roll = proxy.rng.random()
                    throttle = roll < proxy.throttle_share
                    lose = not throttle and roll < proxy.throttle_share + proxy.lose_share
                    if throttle:
                        proxy.faults["throttled"] += 1
                    if lose:
                        proxy.faults["lost"] += 1
                    conditional = self.command == "PUT" and (self.headers.get("If-None-Match") or self.headers.get("If-Match"))
                    wait = proxy.draw("put_if_absent" if conditional else kind.lower())
                if proxy.delay:
                    time.sleep(proxy.delay)
                if wait:
                    time.sleep(wait)
                if throttle:
                    self._reply(503, b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
                                     b"<Message>Please reduce your request rate.</Message></Error>",
                                {"Content-Type": "application/xml"})
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=120)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                head = self.command == "HEAD"
                # A HEAD answer keeps the object's length; other answers are re-framed below.
                drop = HOP_BY_HOP if head else HOP_BY_HOP | {"content-length"}
                out_headers = {k: v for k, v in resp.getheaders() if k.lower() not in drop}
                status = resp.status
                conn.close()
                if lose:
                    # The store applied the request; the client never learns it.
                    self._reply(500, b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code>"
                                     b"<Message>We encountered an internal error.</Message></Error>",
                                {"Content-Type": "application/xml"})
                    return
                self._reply(status, data, out_headers, head=head)

            def _reply(self, status, data, headers, head=False):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if not (head and any(k.lower() == "content-length" for k in headers)):
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def set_profile(self, path):
        """Delays every request by a draw from the profile file `path` (`kind = p50_ms p99_ms` lines)."""
        profile = {}
        with open(path) as f:
            for raw in f:
                line = raw.split("#")[0].strip()
                if not line:
                    continue
                kind, values = line.split("=")
                p50, p99 = (float(x) for x in values.split())
                profile[kind.strip().lower()] = (p50, p99)
        self.profile = profile

    def draw(self, kind):
        """A latency in seconds for one request of `kind` (called under the lock: one seeded stream)."""
        d = self.profile.get(kind) or (self.profile.get("put") if kind in ("put_if_absent", "post") else None) or \
            (self.profile.get("get") if kind == "head" else None)
        if not d:
            return 0.0
        p50, p99 = d
        sigma = math.log(max(p99 / p50, 1.0)) / 2.3263479
        ms = min(math.exp(math.log(p50) + sigma * self.rng.gauss(0.0, 1.0)), p50 * 100)
        return ms / 1000.0

    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def take_counts(self):
        """Counts since the last call, then reset."""
        with self.lock:
            c = dict(self.counts)
            self.counts.clear()
            self.log.clear()
            return c

    def close(self):
        self.server.shutdown()
        self.server.server_close()
