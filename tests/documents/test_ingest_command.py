"""`manage.py ingest --workspace SLUG PATH…` from the shell."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.documents.models import Document


def test_ingest_takes_files_and_folders_and_reports_each(personas, tmp_path):
    (tmp_path / "one.txt").write_text("Otters hold hands while they sleep. They float on their backs.")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "two.md").write_text("# Beavers\n\nBeavers build dams from branches and mud.")
    (tmp_path / "more" / "skip.json").write_text('{"not": "ingested"}\n')
    out, err = StringIO(), StringIO()
    call_command("ingest", "--workspace", "acme", str(tmp_path / "one.txt"), str(tmp_path / "more"), stdout=out, stderr=err)
    documents = {d.filename: d for d in Document.objects.filter(workspace=personas.workspace_a)}
    assert set(documents) == {"one.txt", "two.md"}
    assert all(d.status == "ready" and d.chunk_count >= 1 for d in documents.values())
    assert "one.txt: ready: 1 page(s), 1 chunk(s)" in out.getvalue()
    assert "2/2" in err.getvalue(), "the progress bar goes to stderr"


def test_ingest_again_reports_the_existing_document(personas, tmp_path):
    (tmp_path / "one.txt").write_text("Otters hold hands while they sleep.")
    call_command("ingest", "--workspace", "acme", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    out = StringIO()
    call_command("ingest", "--workspace", "acme", str(tmp_path), stdout=out, stderr=StringIO())
    assert "already here as “one.txt” (ready)" in out.getvalue()
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 1


def test_ingest_reports_failures_and_exits_non_zero(personas, tmp_path):
    (tmp_path / "fake.pdf").write_bytes(b"plain text pretending to be a PDF")
    (tmp_path / "good.txt").write_text("A good file.")
    out = StringIO()
    with pytest.raises(CommandError, match="1 of 2 file"):
        call_command("ingest", "--workspace", "acme", str(tmp_path), stdout=out, stderr=StringIO())
    assert "fake.pdf: failed:" in out.getvalue()
    assert Document.objects.get(filename="good.txt").status == "ready"


def test_ingest_refuses_an_unknown_workspace_or_path(personas, tmp_path):
    with pytest.raises(CommandError, match="No workspace with the slug"):
        call_command("ingest", "--workspace", "nope", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="does not exist"):
        call_command("ingest", "--workspace", "acme", str(tmp_path / "missing.txt"), stdout=StringIO(), stderr=StringIO())
