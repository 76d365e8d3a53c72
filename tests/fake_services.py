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


class FakeLLM:
    """An OpenAI-compatible chat server for the real `groq` and `zhipuai` clients: the Groq
    client is pointed at `<url>/groq`, the ZhipuAI client at `<url>/zhipu`. Each provider
    replays its script of steps: {"status", "content", "delay", "chunk_delay", "error"}; the
    last step repeats."""

    def __init__(self):
        self.scripts: dict[str, list[dict]] = {}
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def script(self, provider: str, *steps: dict) -> None:
        with self.lock:
            self.scripts[provider] = list(steps)

    def reset(self) -> None:
        with self.lock:
            self.scripts.clear()
            self.requests.clear()

    def calls(self, provider: str) -> list[dict]:
        return [r for r in self.requests if r["provider"] == provider]

    def _next(self, provider: str) -> dict:
        with self.lock:
            steps = self.scripts.get(provider) or [{"status": 500, "error": f"no script for {provider}"}]
            return steps.pop(0) if len(steps) > 1 else steps[0]

    def handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                provider = "groq" if self.path.startswith("/groq/") else "zhipuai"
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append(
                    {"provider": provider, "path": self.path, "body": body, "authorization": self.headers.get("Authorization")}
                )
                step = fake._next(provider)
                time.sleep(step.get("delay", 0))
                try:
                    if step.get("status", 200) != 200:
                        self._json(step["status"], {"error": {"message": step.get("error", "fake failure"), "code": str(step["status"])}})
                    elif body.get("stream"):
                        self._stream(step)
                    else:
                        self._json(200, _completion(step.get("content", "")))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, step: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                content = step.get("content", "")
                for start in range(0, len(content), 12):
                    chunk = {
                        "id": "fake",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": "fake",
                        "choices": [{"index": 0, "delta": {"content": content[start : start + 12]}, "finish_reason": None}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(step.get("chunk_delay", 0))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args):
                pass

        return Handler


def _completion(content: str) -> dict:
    return {
        "id": "fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def answer_json(*claims: tuple[str, int, str], answer: str | None = None, insufficient: bool = False) -> str:
    """A model reply in the format the prompt asks for."""
    rows = [{"text": text, "source": source, "quote": quote} for text, source, quote in claims]
    return json.dumps(
        {"answer": answer if answer is not None else " ".join(c[0] for c in claims), "claims": rows, "insufficient": insufficient}
    )
