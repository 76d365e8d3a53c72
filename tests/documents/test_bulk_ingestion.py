"""Files ingested together are one embedding stream (issue 44, item 3): their texts fill whole
batches across documents, each document is searchable as soon as its own window is written, and
the upload has one progress: files done, chunks indexed, time left."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from apps.documents import ingestion, services
from apps.documents.models import Chunk, Document, DocumentStatus
from apps.documents.selectors import upload_batch_progress

TEXTS = {
    "otters.txt": "Otters hold hands while they sleep. They float on their backs in kelp beds.",
    "beavers.txt": "Beavers build dams from branches and mud. Their lodges have underwater entrances.",
    "puffins.txt": "Puffins nest in burrows on sea cliffs. They carry several fish crosswise in their beaks.",
}


def stored(workspace, texts=TEXTS, batch=None) -> list[Document]:
    return [
        services.document_create(workspace=workspace, actor=None, filename=name, data=text.encode(), enqueue=False, batch=batch)[0]
        for name, text in texts.items()
    ]


def watch_windows(monkeypatch) -> list[tuple[str, list[str]]]:
    """("embed", filenames) as each window goes to the embedder (on the stream's embedding thread)
    and ("written", filenames) as each is written (on the calling thread), in the order they came."""
    real_embed, real_write, events = ingestion._embed_with_progress, ingestion._write_window, []

    def embedding(window, done):
        events.append(("embed", [parsed.document.filename for parsed in window]))
        return real_embed(window, done)

    def writing(workspace, window, embedded):
        written = real_write(workspace, window, embedded)
        events.append(("written", [document.filename for document in written]))
        return written

    monkeypatch.setattr(ingestion, "_embed_with_progress", embedding)
    monkeypatch.setattr(ingestion, "_write_window", writing)
    return events


def test_small_documents_are_embedded_as_one_stream_and_all_become_searchable(personas, monkeypatch):
    documents = stored(personas.workspace_a)
    events = watch_windows(monkeypatch)
    settled_in_turn: list[str] = []
    settled = services.documents_ingest_many(
        workspace=personas.workspace_a, document_ids=[d.pk for d in documents], on_settled=lambda d: settled_in_turn.append(d.filename)
    )
    assert events == [("embed", list(TEXTS)), ("written", list(TEXTS))], "the three documents' texts were embedded together"
    assert [d.filename for d in settled] == settled_in_turn == list(TEXTS)
    for document in Document.objects.filter(workspace=personas.workspace_a):
        assert document.status == DocumentStatus.READY
        assert document.chunk_count == Chunk.objects.filter(document=document).count() >= 1
        assert (document.progress_done, document.progress_total) == (document.chunk_count, document.chunk_count)


def test_each_window_is_written_before_the_next_is_embedded_and_parsed_while_one_embeds(personas, monkeypatch, settings):
    settings.INGEST_STREAM_TEXTS = 1  # every document closes its window
    documents = stored(personas.workspace_a)
    events = watch_windows(monkeypatch)
    parsed_while_embedding = []
    real_parse = ingestion._parse

    def parse(workspace, document_id, options, *, waiting=()):
        parsed_while_embedding.append(len(waiting))
        return real_parse(workspace, document_id, options, waiting=waiting)

    monkeypatch.setattr(ingestion, "_parse", parse)
    services.documents_ingest_many(workspace=personas.workspace_a, document_ids=[d.pk for d in documents])
    names = list(TEXTS)
    assert events == [
        ("embed", names[:1]),
        ("written", names[:1]),
        ("embed", names[1:2]),
        ("written", names[1:2]),
        ("embed", names[2:]),
        ("written", names[2:]),
    ]
    assert parsed_while_embedding == [0, 1, 1], "each document after the first is parsed while the one before it may embed"
    assert Document.objects.filter(workspace=personas.workspace_a, status=DocumentStatus.READY).count() == 3


def test_a_window_goes_to_an_idle_embedder_once_it_holds_a_few_batches(personas, monkeypatch, settings):
    settings.EMBEDDING_BATCH_SIZE = 1  # four texts are a few batches; each document here is a chunk and two sentences
    documents = stored(personas.workspace_a)
    events = watch_windows(monkeypatch)
    services.documents_ingest_many(workspace=personas.workspace_a, document_ids=[d.pk for d in documents])
    embedded = [names for kind, names in events if kind == "embed"]
    assert embedded == [["otters.txt", "beavers.txt"], ["puffins.txt"]], "the first two did not wait for the third"


def test_a_bad_file_fails_alone_and_a_settled_one_is_skipped(personas):
    documents = stored(personas.workspace_a)
    broken = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="broken.pdf", data=b"plain text pretending to be a PDF", enqueue=False
    )[0]
    services.document_ingest(workspace=personas.workspace_a, document_id=documents[0].pk)
    ids = [documents[0].pk, broken.pk, documents[1].pk, documents[2].pk]
    settled = services.documents_ingest_many(workspace=personas.workspace_a, document_ids=ids)
    assert [d.filename for d in settled] == ["broken.pdf", "beavers.txt", "puffins.txt"], "otters.txt was ready already"
    assert Document.objects.get(pk=broken.pk).status == DocumentStatus.FAILED
    assert Document.objects.get(pk=broken.pk).error
    assert set(Document.objects.filter(workspace=personas.workspace_a, status="ready").values_list("filename", flat=True)) == set(TEXTS)


def test_an_interrupted_batch_fails_what_it_held_and_queues_the_rest_again(personas, monkeypatch):
    documents = stored(personas.workspace_a)
    Document.objects.filter(pk=documents[0].pk).update(status=DocumentStatus.PROCESSING)
    sent = []
    monkeypatch.setattr(services, "_enqueue_ingest_batch", lambda workspace_id, ids: sent.append(list(ids)))
    again = services.documents_ingest_interrupted(
        workspace=personas.workspace_a, document_ids=[d.pk for d in documents], message="Ingestion failed (OSError): disk"
    )
    assert again == 2
    assert Document.objects.get(pk=documents[0].pk).error == "Ingestion failed (OSError): disk"
    assert sorted(sent[0]) == sorted([documents[1].pk, documents[2].pk])


def test_the_batch_progress_counts_files_chunks_and_the_time_left(personas):
    batch = services.uuid.uuid4()
    documents = stored(personas.workspace_a, batch=batch)
    stored(personas.workspace_b, {"elsewhere.txt": "Another workspace's file."}, batch=batch)
    services.document_ingest(workspace=personas.workspace_a, document_id=documents[0].pk)
    Document.objects.filter(pk=documents[1].pk).update(status=DocumentStatus.PROCESSING, progress_done=1, progress_total=3)
    started = Document.objects.filter(pk__in=[d.pk for d in documents]).order_by("created_at").first().created_at
    (progress,) = upload_batch_progress(workspace=personas.workspace_a, now=started + timedelta(seconds=10))
    ready = Document.objects.get(pk=documents[0].pk)
    assert (progress.batch, progress.files, progress.ready, progress.failed) == (batch, 3, 1, 0), (
        "the other workspace's file is not counted"
    )
    assert progress.chunks_done == ready.chunk_count + 1
    remaining = sum(d.size_bytes for d in documents[1:])
    assert abs(progress.seconds_left - 10 * remaining / ready.size_bytes) < 1e-6
    assert progress.running
    assert upload_batch_progress(workspace=personas.workspace_b, batch=batch)[0].files == 1
    assert upload_batch_progress(workspace=personas.workspace_a, batch=services.uuid.uuid4()) == []


def test_a_batch_that_has_settled_leaves_the_page(personas):
    batch = services.uuid.uuid4()
    for document in stored(personas.workspace_a, batch=batch):
        services.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    assert upload_batch_progress(workspace=personas.workspace_a) == []
    (finished,) = upload_batch_progress(workspace=personas.workspace_a, batch=batch)
    assert (finished.ready, finished.running, finished.time_left) == (3, False, "about 0 s left")


def test_the_page_uploads_several_files_as_one_batch_and_shows_its_progress(personas, monkeypatch):
    sent = []
    monkeypatch.setattr(services, "_enqueue_ingest_batch", lambda workspace_id, ids: sent.append(list(ids)))
    client = personas.client("member")
    files = [SimpleUploadedFile(name, text.encode()) for name, text in TEXTS.items()]
    response = client.post(reverse("documents", args=["acme"]), {"files": files})
    assert response.status_code == 302
    documents = list(Document.objects.filter(workspace=personas.workspace_a))
    assert len({d.batch for d in documents}) == 1
    assert documents[0].batch is not None
    assert sorted(sent[0]) == sorted(d.pk for d in documents), "one task for the three files"
    page = client.get(reverse("documents", args=["acme"])).content.decode()
    assert f'data-batch="{documents[0].batch}"' in page
    assert "0 of 3 files done" in page
    assert "estimating the time left" in page
    services.documents_ingest_many(workspace=personas.workspace_a, document_ids=sent[0])
    assert "data-batch=" not in client.get(reverse("documents", args=["acme"])).content.decode(), "gone once every file settled"


def test_the_api_names_the_batch_and_reports_its_progress(personas, monkeypatch):
    sent = []
    monkeypatch.setattr(services, "_enqueue_ingest_batch", lambda workspace_id, ids: sent.append(list(ids)))
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('member')}"}
    files = [SimpleUploadedFile(name, text.encode()) for name, text in TEXTS.items()]
    url = reverse("api_documents", args=[personas.workspace_a.pk])
    body = personas.client("member").__class__().post(url, {"files": files}, **headers).json()
    assert body["batch"]
    assert all(r["document"]["batch"] == body["batch"] for r in body["results"])
    progress_url = reverse("api_upload_batch", args=[personas.workspace_a.pk, body["batch"]])
    api = personas.client("member").__class__()
    assert api.get(progress_url, **headers).json()["ready"] == 0
    services.documents_ingest_many(workspace=personas.workspace_a, document_ids=sent[0])
    progress = api.get(progress_url, **headers).json()
    assert (progress["files"], progress["ready"], progress["running"]) == (3, 3, False)
    assert progress["chunks_done"] == sum(d.chunk_count for d in Document.objects.filter(workspace=personas.workspace_a))
    other = reverse("api_upload_batch", args=[personas.workspace_b.pk, body["batch"]])
    owner_b = {"HTTP_AUTHORIZATION": f"Token {personas.token('owner_b')}"}
    assert api.get(other, **owner_b).status_code == 404, "a batch is found only in its own workspace"


def test_manage_ingest_streams_a_folder_with_one_progress_bar(personas, tmp_path, monkeypatch):
    for name, text in TEXTS.items():
        (tmp_path / name).write_text(text)
    events = watch_windows(monkeypatch)
    out, err = StringIO(), StringIO()
    call_command("ingest", "--workspace", "acme", str(tmp_path), stdout=out, stderr=err)
    assert [(kind, sorted(names)) for kind, names in events] == [("embed", sorted(TEXTS)), ("written", sorted(TEXTS))], "one window"
    assert "3 file(s)" in out.getvalue()
    assert "chunk(s) indexed in" in out.getvalue()
    assert "3/3" in err.getvalue()
    assert "chunks" in err.getvalue()
    assert len({d.batch for d in Document.objects.filter(workspace=personas.workspace_a)}) == 1
