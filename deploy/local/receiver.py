"""A local HTTP server receiving what the HTTP sink posts (for the tests and the sink benchmark); it can
be told to fail, to answer slowly or to refuse, request by request."""
from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# An answer: (status, body, seconds to wait before answering).
Answer = tuple[int, bytes, float]
OK: Answer = (200, b"{}", 0.0)


class Receiver:
    def __init__(self, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1", keep: bool = True) -> None:
        """`tls`: a server context, for an HTTPS receiver; `host`: the address it listens on; `keep`: parse and
        keep every request (the tests' checks), else only count requests and body bytes (a benchmark's
        receiver, which should not spend the machine's cores on what a real service does on its own)."""
        self.requests: list[dict] = []  # every request: headers and parsed body, in arrival order
        self.received = [0, 0]  # requests, body bytes
        self.script: list[Answer] = []  # answers for the next requests; then OK
        self.answer_with: Callable[[dict], Answer] | None = None
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if keep:
                    request = {"headers": {k.lower(): v for k, v in self.headers.items()}, "body": json.loads(body)}
                    status, answer, delay = outer._answer(request)
                else:
                    with outer._lock:
                        outer.received[0] += 1
                        outer.received[1] += len(body)
                    status, answer, delay = OK
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://{host}:{self.server.server_address[1]}/changes"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _answer(self, request: dict) -> Answer:
        with self._lock:
            if self.script:
                answer = self.script.pop(0)
            elif self.answer_with is not None:
                answer = self.answer_with(request)
            else:
                answer = OK
            request["status"] = answer[0]
            self.requests.append(request)
            return answer

    def accepted(self, content: str = "log-rows") -> dict[str, list]:
        """Idempotency key → body of each accepted request of `content`; a key accepted twice keeps
        its first body (as a receiver dropping repeats would)."""
        out: dict[str, list] = {}
        with self._lock:
            for r in self.requests:
                if r["status"] == 200 and r["headers"]["ringtail-content"] == content:
                    out.setdefault(r["headers"]["idempotency-key"], r["body"])
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
