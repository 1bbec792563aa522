"""An HTTP proxy in front of an object-store emulator (moto for S3, Azurite for Azure) that
- counts requests by kind (GET, PUT, LIST, HEAD, DELETE, POST), for the request-cost benchmark, and
- injects transient faults on request: a share of requests answered "503 SlowDown" before they reach
  the store, a share whose response is lost after the store applied them (the client sees a 500),
  and a fixed delay on every request (slow responses).

Both engines under test speak to the proxy exactly as to the store, so their counts compare."""
import http.client
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
                if proxy.delay:
                    time.sleep(proxy.delay)
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
