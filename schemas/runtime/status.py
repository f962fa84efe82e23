"""The HTTP endpoints every process serves: /metrics, /health (alive) and /ready (making progress)."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST


class StatusServer:
    """/metrics from `registry`; /health answers while the process runs; /ready is 200 only while
    `report` gives no problems (it returns problems and warnings, both shown, with what `detail` adds)."""

    def __init__(self, registry: CollectorRegistry, report: Callable[[], tuple[list[str], list[str]]],
                 host: str, port: int, detail: Callable[[], dict] = dict) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif self.path == "/health":
                    self._send(200, b"ok\n")
                elif self.path == "/ready":
                    problems, warnings = report()
                    body = {"ready": not problems, "problems": problems, "warnings": warnings, **detail()}
                    self._send(503 if problems else 200, json.dumps(body).encode() + b"\n", "application/json")
                else:
                    self._send(404, b"not found\n")

            def _send(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:  # scrapes are not worth a log line
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="ringtail-http", daemon=True)

    def start(self) -> StatusServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
