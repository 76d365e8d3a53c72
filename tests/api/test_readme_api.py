"""The API examples of docs/api.md and the README, run exactly as written (curl and Python
`requests`) against a live server and the real worker, with only the server's address, the key and
the workspace id set."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from apps.documents.models import Document
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
HANDBOOK = (
    "Every TrustRAG appliance is covered by our warranty. The warranty lasts two years from the date of purchase. "
    "Repairs under warranty are free of charge; accidental damage is not covered."
)


DOCUMENTS = ("docs/api.md", "README.md")


def api_examples() -> dict[str, tuple[str, str]]:
    """name → (language, code) of every fenced block marked `<!-- api-example: name -->` in the
    API page and the README; a name is used once across them."""
    found: dict[str, tuple[str, str]] = {}
    for document in DOCUMENTS:
        text = (ROOT / document).read_text()
        for name, lang, code in re.findall(r"<!-- api-example: ([\w-]+) -->\n```(\w+)\n(.*?)```", text, re.S):
            assert name not in found, f"the API example {name} is written twice"
            found[name] = (lang, code)
    return found


class Runner:
    def __init__(self, cwd: Path, env: dict[str, str]):
        self.examples, self.cwd, self.env = api_examples(), cwd, env

    def __call__(self, name: str) -> str:
        language, code = self.examples[name]
        command = ["bash", "-euo", "pipefail", "-c", code] if language == "sh" else [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"API example {name} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout


def test_the_api_page_has_curl_and_python_examples_and_the_readme_one():
    examples = api_examples()
    assert {"curl-workspaces", "curl-upload", "curl-status", "curl-ask", "python", "readme-ask"} <= set(examples)
    assert len(examples["readme-ask"][1].splitlines()) <= 5, "the README's example stays five lines"
    assert examples["python"][0] == "python"
    assert "import requests" in examples["python"][1]


def test_the_api_examples_work_against_a_live_server(personas, live_server, celery_worker, tmp_path):
    (tmp_path / "handbook.txt").write_text(HANDBOOK)
    env = os.environ | {"TRUSTRAG_URL": live_server.url, "TRUSTRAG_KEY": personas.api_key("member", name="readme")}
    run = Runner(tmp_path, env)

    workspaces = json.loads(run("curl-workspaces"))
    assert [w["slug"] for w in workspaces["results"]] == ["acme"]
    env["WORKSPACE_ID"] = workspaces["results"][0]["id"]

    uploaded = json.loads(run("curl-upload"))
    assert uploaded["results"][0]["created"] is True
    assert json.loads(run("curl-upload")) == uploaded, "the Idempotency-Key replays the first response"
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 1
    wait_until(lambda: Document.objects.filter(workspace=personas.workspace_a, status="ready").exists(), what="ingestion")
    assert json.loads(run("curl-status"))["results"][0]["status"] == "ready"

    answer = json.loads(run("curl-ask"))
    assert "two years" in answer["answer"]
    assert any(claim["verdict"] == "supports" and "two years" in claim["quote"] for claim in answer["claims"])
    assert answer["refusal"] is None

    asked = json.loads(run("readme-ask"))  # the README's five lines: an answer or a refusal, with its record
    assert asked["status"] == "done"
    assert asked["audit_id"]
    assert {"claims", "risk", "refusal"} <= set(asked)

    printed = run("python")
    assert "two years" in printed
    assert "[supports]" in printed
    assert "risk, audit record" in printed
