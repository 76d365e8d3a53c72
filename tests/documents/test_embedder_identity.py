"""Each document records the embedder its vectors came from, so that a workspace never searches
a mix of two embedders' vectors: after EMBEDDING_BACKEND changes, the settings page asks for a
re-index and `manage.py reembed` says what to embed again and queues it."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command
from django.urls import reverse

from apps.documents import services
from apps.documents.models import Document, DocumentStatus
from apps.documents.selectors import documents_reindex_pending
from apps.pipeline.embedding import Embedder, default_model_path, product_embedder


def ingested(workspace, name: str, text: str) -> Document:
    document, _ = services.document_create(workspace=workspace, actor=None, filename=name, data=text.encode(), enqueue=False)
    services.document_ingest(workspace=workspace, document_id=document.pk)
    return Document.objects.get(pk=document.pk)


def test_the_identity_names_the_weights_and_their_precision(tmp_path):
    torch = Embedder(default_model_path())
    onnx = Embedder(default_model_path(), backend="onnx", export_dir=tmp_path)
    int8 = Embedder(default_model_path(), backend="onnx-int8", export_dir=tmp_path)
    assert torch.identity == onnx.identity, "torch and the fp32 graph write the same vectors"
    assert torch.identity.endswith(":fp32")
    assert int8.identity == torch.identity.replace(":fp32", ":int8")
    assert len(torch.identity.split(":")[0]) == 16, "the weights' checksum"


def test_a_document_records_its_embedder_and_a_change_of_backend_asks_for_a_reindex(personas, settings):
    settings.EMBEDDING_BACKEND = "torch"  # indexed in fp32, then the server moves to int8
    document = ingested(personas.workspace_a, "otters.txt", "Otters hold hands while they sleep.")
    assert document.status == DocumentStatus.READY
    assert document.indexed_embedder == product_embedder().identity
    assert not documents_reindex_pending(workspace=personas.workspace_a)
    settings.EMBEDDING_BACKEND = "onnx-int8"
    assert documents_reindex_pending(workspace=personas.workspace_a), "int8 vectors would mix with fp32 ones"


def test_documents_indexed_before_the_embedder_was_recorded_hold_fp32_vectors(personas, settings):
    settings.EMBEDDING_BACKEND = "torch"  # indexed in fp32, then the server moves to int8
    document = ingested(personas.workspace_a, "otters.txt", "Otters hold hands while they sleep.")
    Document.objects.filter(pk=document.pk).update(indexed_embedder="")
    assert not documents_reindex_pending(workspace=personas.workspace_a)
    settings.EMBEDDING_BACKEND = "onnx"
    assert not documents_reindex_pending(workspace=personas.workspace_a), "the fp32 graph writes the same vectors"
    settings.EMBEDDING_BACKEND = "onnx-int8"
    assert documents_reindex_pending(workspace=personas.workspace_a)


def test_reembed_says_what_holds_another_embedders_vectors_and_queues_it(personas, settings):
    settings.EMBEDDING_BACKEND = "torch"  # indexed in fp32, then the server moves to int8
    kept = ingested(personas.workspace_a, "otters.txt", "Otters hold hands while they sleep.")
    other = ingested(personas.workspace_b, "beavers.txt", "Beavers build dams from branches and mud.")
    out = StringIO()
    call_command("reembed", "--check", stdout=out)
    assert "nothing to re-embed" in out.getvalue()

    settings.EMBEDDING_BACKEND = "onnx-int8"
    Document.objects.filter(pk=kept.pk).update(indexed_embedder=product_embedder().identity)
    out = StringIO()
    call_command("reembed", "--check", stdout=out)
    said = out.getvalue()
    assert f"{personas.workspace_b.slug}: 1 document(s) embedded with {other.indexed_embedder}" in said
    assert personas.workspace_a.slug + ":" not in said, "a workspace already on the new embedder is left alone"
    assert Document.objects.get(pk=other.pk).status == DocumentStatus.READY, "--check changes nothing"

    out = StringIO()
    call_command("reembed", stdout=out)
    assert "1 document(s) queued to be embedded again" in out.getvalue()
    assert Document.objects.get(pk=other.pk).status == DocumentStatus.QUEUED
    assert Document.objects.get(pk=kept.pk).status == DocumentStatus.READY


def test_the_settings_page_asks_for_the_reindex_and_says_why(personas, settings):
    settings.EMBEDDING_BACKEND = "torch"  # indexed in fp32, then the server moves to int8
    ingested(personas.workspace_a, "otters.txt", "Otters hold hands while they sleep.")
    url = reverse("workspace_settings", args=[personas.workspace_a.slug])
    client = personas.client("admin")
    assert "Re-index to apply" not in client.get(url).content.decode()
    settings.EMBEDDING_BACKEND = "onnx-int8"
    page = client.get(url).content.decode()
    assert "Re-index to apply" in page
    assert "the server now embeds with another model or precision" in page
