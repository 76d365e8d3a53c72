"""Bad uploads are refused with a message, and good files beside them still go in."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse

from apps.documents.models import Document


def post(client, *files):
    return client.post(reverse("documents", args=["acme"]), {"files": list(files)})


def test_unsupported_type_is_refused_and_the_good_file_beside_it_is_kept(personas, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post(
            personas.client("member"), SimpleUploadedFile("notes.txt", b"Fine text."), SimpleUploadedFile("virus.exe", b"MZ\x90\x00")
        )
    assert response.status_code == 400
    assert "not a supported type" in response.content.decode()
    assert list(Document.objects.filter(workspace=personas.workspace_a).values_list("filename", flat=True)) == ["notes.txt"]
    assert len(callbacks) == 1, "ingestion is queued once, on commit, for the accepted file only"


def test_path_traversal_in_a_file_name_stays_inside_the_workspace_folder(personas, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        post(personas.client("member"), SimpleUploadedFile("../../../etc/passwd.txt", b"root:x:0:0"))
    document = Document.objects.get(workspace=personas.workspace_a)
    assert document.filename == "passwd.txt"
    assert document.file.name.startswith(f"workspaces/{personas.workspace_a.pk}/documents/{document.pk}/")
    assert ".." not in document.file.name


@override_settings(UPLOAD_MAX_BYTES=10)
def test_a_file_over_the_size_limit_is_refused(personas):
    response = post(personas.client("member"), SimpleUploadedFile("big.txt", b"x" * 11))
    assert response.status_code == 413
    assert "larger than" in response.content.decode()
    assert not Document.objects.exists()


def test_an_empty_file_is_refused(personas):
    response = post(personas.client("member"), SimpleUploadedFile("empty.txt", b""))
    assert response.status_code == 400
    assert not Document.objects.exists()


def test_a_question_that_is_blank_or_too_long_is_refused_by_the_api(personas):
    client = personas.client("member")
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    blank = client.post(url, {"question": "   "}, content_type="application/json")
    assert blank.status_code == 400
    assert blank.json()["error"]["code"] == "invalid"
    wrong_type = client.post(url, {"question": ["a", "list"]}, content_type="application/json")
    assert wrong_type.status_code == 400
    bad_mode = client.post(url, {"question": "ok?", "mode": "yolo"}, content_type="application/json")
    assert bad_mode.status_code == 400
    assert "mode" in bad_mode.json()["error"]["details"]


def test_api_upload_without_files_says_what_to_send(personas):
    response = personas.client("member").post(reverse("api_documents", args=[personas.workspace_a.pk]), {})
    assert response.status_code == 400
    assert "files" in response.json()["error"]["message"]
