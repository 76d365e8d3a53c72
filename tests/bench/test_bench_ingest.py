"""bench_ingest runs the real upload service and worker and prints one JSON line."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from apps.workspaces.models import Workspace
from tests.pipeline.test_parsing import DOCS

pytestmark = pytest.mark.django_db(transaction=True)


def test_bench_ingest_reports_every_file_and_compares_with_embedding_alone(tmp_path, celery_worker):
    (tmp_path / "a.txt").write_text("The first file has two sentences. Both are short.")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "b.md").write_text("# Heading\n\nA markdown file about tidal pools and the creatures in them.")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n this is not really a pdf")
    (tmp_path / "data.xls").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500))
    (tmp_path / "transcript.pdf").write_bytes((DOCS / "pdf/scotus-transcript-p1.pdf").read_bytes())
    out = StringIO()
    call_command("bench_ingest", files=str(tmp_path), json_path=str(tmp_path / "out.json"), stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result == json.loads((tmp_path / "out.json").read_text())
    files = {row["name"]: row for row in result["files"]}
    assert files["a.txt"]["status"] == "ready"
    assert files["a.txt"]["chunks"] == 1
    assert files["b.md"]["status"] == "ready"
    assert files["broken.pdf"]["status"] == "failed"
    assert "damaged" in files["broken.pdf"]["error"]
    assert files["data.xls"]["status"] == "refused"
    assert files["transcript.pdf"]["status"] == "ready"
    assert files["transcript.pdf"]["ocr_pages"] == 0, "a text layer needs no OCR"
    assert result["chunks"] == 2 + files["transcript.pdf"]["chunks"]
    assert result["chunks_per_s"] > 0
    assert result["embed_only_chunks_per_s"] > 0
    assert result["ratio"] == pytest.approx(result["chunks_per_s"] / result["embed_only_chunks_per_s"], rel=0.01)
    assert not Workspace.objects.filter(slug__startswith="bench-ingest").exists()


def test_bench_ingest_reports_ocr_pages_per_second_on_a_scan_of_the_pdfs(tmp_path, celery_worker):
    (tmp_path / "transcript.pdf").write_bytes((DOCS / "pdf/scotus-transcript-p1.pdf").read_bytes())
    out = StringIO()
    call_command("bench_ingest", files=str(tmp_path), scan_pages=2, stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert (result["ocr_pages"], result["ocr_error"]) == (1, ""), "the transcript has one page to scan"
    assert result["ocr_pages_per_s"] == pytest.approx(1 / result["ocr_seconds"], rel=0.01)
    assert not Workspace.objects.filter(slug__startswith="bench-ocr").exists()
