"""A fake NCBI E-utilities server and a fake web server on 127.0.0.1, for the real source clients.

One of each for the whole session (like the fake LLM of tests/conftest.py), so the worker process,
started with its environment fixed, is pointed at them too: `worker_env` names them, and allows
127.0.0.1 through SOURCES_ALLOWED_HOSTS, the administrator's setting — in tests only."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.fake_services import running

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PMIDS = ["27633186", "31452104", "29220478", "33301246"]
QUERY = "night shift sleep"

_SET_HEAD = (
    '<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" '
    '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">\n<PubmedArticleSet>\n'
)
_SEARCH = (
    '<?xml version="1.0" encoding="UTF-8" ?>\n<!DOCTYPE eSearchResult PUBLIC "-//NLM//DTD esearch 20060628//EN" '
    '"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20060628/esearch.dtd">\n<eSearchResult><Count>{count}</Count>'
    "<RetMax>{shown}</RetMax><RetStart>0</RetStart><IdList>{ids}</IdList><TranslationSet/>"
    "<QueryTranslation>{term}</QueryTranslation></eSearchResult>\n"
)


def record(pmid: str) -> str:
    return (FIXTURES / "pubmed" / f"{pmid}.xml").read_text()


class FakeEutils:
    """ESearch answers a query with its PMIDs; EFetch answers the records asked for. `fail` holds
    statuses to answer instead, one per request, in order."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with getattr(self, "lock", threading.Lock()):
            self.queries: dict[str, list[str]] = {QUERY: list(PMIDS)}
            self.records = {pmid: record(pmid) for pmid in PMIDS}
            self.fail: list[int] = []
            self.requests: list[dict] = []

    def handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(self.path)
                params = {k: v[0] for k, v in parse_qs(parts.query).items()}
                with fake.lock:
                    fake.requests.append({"path": parts.path, "params": params, "at": time.monotonic()})
                    status = fake.fail.pop(0) if fake.fail else 200
                if status != 200:
                    return self._send(status, b"<ERROR>fake failure</ERROR>", {"Retry-After": "0"})
                if parts.path.endswith("/esearch.fcgi"):
                    return self._send(200, fake.search(params.get("term", ""), int(params.get("retmax", 20))))
                if parts.path.endswith("/efetch.fcgi"):
                    return self._send(200, fake.efetch(params.get("id", "").split(",")))
                return self._send(404, b"<ERROR>unknown endpoint</ERROR>")

            def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "text/xml; charset=UTF-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler

    def search(self, term: str, retmax: int) -> bytes:
        ids = self.queries.get(term, [])
        shown = ids[:retmax]
        body = _SEARCH.format(count=len(ids), shown=len(shown), ids="".join(f"<Id>{i}</Id>" for i in shown), term=term)
        return body.encode()

    def efetch(self, pmids: list[str]) -> bytes:
        with self.lock:
            records = [self.records[p] for p in pmids if p in self.records]
        return (_SET_HEAD + "\n".join(records) + "\n</PubmedArticleSet>\n").encode()

    def calls(self, endpoint: str) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith(f"/{endpoint}.fcgi")]


class FakeWeb:
    """Serves `pages`: path → {"status", "body", "type", "headers", "delay", "trickle"}; records
    every request with its Host header."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.pages: dict[str, dict] = {"/guide": {"body": (FIXTURES / "web" / "keepers-guide.html").read_bytes()}}
        self.requests: list[dict] = []

    def handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.requests.append({"path": self.path, "host": self.headers.get("Host")})
                page = fake.pages.get(self.path, {"status": 404, "body": b"<html><body>not here</body></html>"})
                time.sleep(page.get("delay", 0))
                body = page.get("body", b"")
                try:
                    self.send_response(page.get("status", 200))
                    self.send_header("Content-Type", page.get("type", "text/html; charset=utf-8"))
                    if not page.get("no_length"):
                        self.send_header("Content-Length", str(page.get("length", len(body))))
                    for name, value in page.get("headers", {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    size = 1024 if page.get("trickle") else max(len(body), 1)
                    for start in range(0, len(body), size):
                        self.wfile.write(body[start : start + size])
                        self.wfile.flush()
                        time.sleep(page.get("trickle", 0))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the fetcher gave up, as it should

            def log_message(self, *args):
                pass

        return Handler


class _Session:
    started: tuple[FakeEutils, str, FakeWeb, str] | None = None

    @classmethod
    def start(cls) -> tuple[FakeEutils, str, FakeWeb, str]:
        if cls.started is None:
            eutils, web = FakeEutils(), FakeWeb()
            cls._servers = [running(eutils), running(web)]
            eutils_url, web_url = (server.__enter__() for server in cls._servers)
            cls.started = (eutils, f"{eutils_url}/entrez/eutils", web, web_url)
        return cls.started


def session_fakes() -> tuple[FakeEutils, str, FakeWeb, str]:
    """The session's fake E-utilities (and its base URL) and fake web server (and its URL)."""
    return _Session.start()


def worker_env_for_sources() -> dict[str, str]:
    """What a worker process needs to import from the fakes: their addresses, 127.0.0.1 allowed."""
    _, eutils_url, _, _ = session_fakes()
    return {
        "NCBI_BASE_URL": eutils_url,
        "NCBI_EMAIL": "tests@example.org",
        "NCBI_BACKOFF_S": "0.05",
        "SOURCES_ALLOWED_HOSTS": "127.0.0.1",
        "SOURCES_FETCH_TIMEOUT_S": "5",
    }
