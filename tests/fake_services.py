"""Fake outside services on 127.0.0.1, for the real client libraries to talk to."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeTavily:
    """Answers POST /search the way Tavily does, or fails the way it is told to."""

    def __init__(self):
        self.mode = "ok"  # ok | 429 | 500 | slow
        self.results: list[dict] = []
        self.requests: list[dict] = []
        self.delay_s = 0.0

    def handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append({"path": self.path, "body": body, "authorization": self.headers.get("Authorization")})
                if fake.mode == "slow":
                    time.sleep(fake.delay_s)
                status = {"429": 429, "500": 500}.get(fake.mode, 200)
                payload = {"results": fake.results} if status == 200 else {"detail": {"error": f"fake failure {status}"}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, *args):
                pass

        return Handler


@contextmanager
def running(fake) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
