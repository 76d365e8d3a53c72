"""Every API endpoint, walked with every kind of credential: the four roles as people (tokens),
API keys with each role a key can have, an outsider, a key of another workspace, a revoked
key and no credentials at all. The table says what each may do; the test checks all of it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from apps.apikeys.models import ApiKey
from apps.apikeys.services import apikey_create, apikey_revoke
from apps.documents.models import Document
from apps.evals.models import EvalRun, EvalSet
from apps.queries.models import QueryRun
from apps.sources.models import Source
from apps.workspaces.models import ROLE_RANK, Invitation, InvitationStatus, Membership, Role
from tests.factories import (
    AuditRecordFactory,
    DocumentFactory,
    EvalRunFactory,
    EvalSetFactory,
    InvitationFactory,
    MembershipFactory,
    QueryRunFactory,
    UserFactory,
)

V, M, A = Role.VIEWER, Role.MEMBER, Role.ADMIN


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    url: str  # reverse() name; its arguments come from `World.args`
    args: tuple[str, ...]
    needs: str
    ok: int
    body: str = ""  # name of a World method that builds the request body
    people_only: bool = False  # a person's own act (leaving): API keys are refused (403) whatever their role


ENDPOINTS = [
    Endpoint("workspace", "get", "api_workspace", (), V, 200),
    Endpoint("documents list", "get", "api_documents", (), V, 200),
    Endpoint("document", "get", "api_document", ("doc",), V, 200),
    Endpoint("upload batch", "get", "api_upload_batch", ("batch",), V, 200),
    Endpoint("queries list", "get", "api_queries", (), V, 200),
    Endpoint("query", "get", "api_query", ("run",), V, 200),
    Endpoint("reverify", "post", "api_query_reverify", ("answered",), M, 201),
    Endpoint("members list", "get", "api_members", (), A, 200),
    Endpoint("member", "get", "api_member", ("tess",), A, 200),
    Endpoint("api keys list", "get", "api_keys", (), A, 200),
    Endpoint("api key", "get", "api_key", ("old_key",), A, 200),
    Endpoint("settings", "get", "api_settings", (), V, 200),
    Endpoint("audits list", "get", "api_audits", (), V, 200),
    Endpoint("audit", "get", "api_audit", ("record",), V, 200),
    Endpoint("audits export", "get", "api_audits_export", ("csv",), V, 200),
    Endpoint("settings change", "patch", "api_settings", (), A, 200, body="settings_change"),
    Endpoint("upload", "post", "api_documents", (), M, 201, body="upload"),
    Endpoint("ask", "post", "api_queries", (), M, 202, body="ask"),
    Endpoint("reindex one", "post", "api_document_reindex", ("doc",), M, 202),
    Endpoint("reindex all", "post", "api_documents_reindex", (), A, 202),
    Endpoint("member invite", "post", "api_members", (), A, 202, body="member_invite"),
    Endpoint("invitations list", "get", "api_invitations", (), A, 200),
    Endpoint("invitation", "get", "api_invitation", ("invitation",), A, 200),
    Endpoint("member role", "patch", "api_member", ("tess",), A, 200, body="member_role"),
    Endpoint("api key create", "post", "api_keys", (), A, 201, body="key_create"),
    Endpoint("eval sets list", "get", "api_eval_sets", (), V, 200),
    Endpoint("eval set", "get", "api_eval_set", ("eval_set",), V, 200),
    Endpoint("eval runs list", "get", "api_eval_runs", ("eval_set",), V, 200),
    Endpoint("eval run", "get", "api_eval_run", ("eval_run",), V, 200),
    Endpoint("eval set upload", "post", "api_eval_sets", (), M, 201, body="eval_upload"),
    Endpoint("eval run start", "post", "api_eval_runs", ("eval_set",), M, 202),
    Endpoint("eval apply", "post", "api_eval_run_apply", ("eval_run",), A, 200),
    Endpoint("eval set delete", "delete", "api_eval_set", ("doomed_set",), M, 204),
    Endpoint("document delete", "delete", "api_document", ("doomed_doc",), M, 204),
    Endpoint("member remove", "delete", "api_member", ("rick",), A, 204),
    Endpoint("api key revoke", "delete", "api_key", ("old_key",), A, 204),
    Endpoint("invitation revoke", "delete", "api_invitation", ("invitation",), A, 204),
    Endpoint("leave", "post", "api_workspace_leave", (), V, 204, people_only=True),  # last: the caller is out after it
]


class World:
    """Workspace A with one of everything the endpoints act on."""

    def __init__(self, personas):
        a = personas.workspace_a
        self.ws = a.pk
        self.run = QueryRunFactory(workspace=a, question="What is in A?", answer="Secret of A").pk
        self.doc = _document(a, "notes.txt", "0").pk
        self.doomed_doc = _document(a, "doomed.txt", "1").pk
        self.batch = uuid.uuid4()
        Document.objects.filter(pk=self.doc).update(batch=self.batch)
        self.answered = _answered(a, self.doc).pk
        self.tess = MembershipFactory(workspace=a, user=UserFactory(username="tess"), role=Role.MEMBER).pk
        self.rick = MembershipFactory(workspace=a, user=UserFactory(username="rick"), role=Role.MEMBER).pk
        MembershipFactory(workspace=a, user=UserFactory(username="otto"), role=Role.OWNER)  # so the owner, too, may leave
        UserFactory(username="newcomer")
        self.invitation = InvitationFactory(workspace=a, identifier="newcomer@example.com", role=Role.VIEWER).pk
        self.old_key = apikey_create(workspace=a, actor=None, name="old job", role=Role.VIEWER)[0].pk
        self.record = AuditRecordFactory(workspace=a, query_run_id=self.run, payload={"question": "?"}).pk
        self.csv = "csv"
        self.eval_set = _eval_set(a, "kept").pk
        self.doomed_set = _eval_set(a, "doomed").pk
        self.eval_run = _finished_run(a, self.eval_set).pk
        self.source = Source.objects.create(workspace=a, kind="url", url="https://example.org/notes", status="done").pk

    def url(self, endpoint: Endpoint) -> str:
        return reverse(endpoint.url, args=[self.ws, *(getattr(self, name) for name in endpoint.args)])

    def upload(self):
        return {"files": [SimpleUploadedFile("new.txt", b"A new document about lighthouses.")]}, "multipart"

    def ask(self):
        return {"question": "What is in A?", "async": True}, "json"

    def member_invite(self):
        return {"identifier": "newcomer", "role": "viewer"}, "json"

    def member_role(self):
        return {"role": "viewer"}, "json"

    def settings_change(self):
        return {"gate_threshold": 0.6}, "json"

    def eval_upload(self):
        return {"file": SimpleUploadedFile("set.jsonl", b'{"question": "What is in A?", "answerable": true}')}, "multipart"

    def key_create(self):
        return {"name": "nightly import", "role": "member"}, "json"


def _answered(workspace, document_id) -> QueryRun:
    """An answer with one claim quoting the document it cites, as the pipeline records one."""
    text = "The notes say the lamp is lit at dusk."
    Document.objects.filter(pk=document_id).update(text=text)
    source = {
        "index": 1,
        "document_id": str(document_id),
        "title": "notes.txt",
        "chunk_id": "c1",
        "ordinal": 0,
        "text": text,
        "start": 0,
        "end": len(text),
        "url": None,
    }
    claim = {"text": "The lamp is lit at dusk.", "source": 1, "quote": text}
    return QueryRunFactory(workspace=workspace, question="When is the lamp lit?", answer=claim["text"], claims=[claim], sources=[source])


def _eval_set(workspace, name: str) -> EvalSet:
    return EvalSetFactory(workspace=workspace, name=name)


def _finished_run(workspace, set_id) -> EvalRun:
    """A finished run of one answerable and one unanswerable question: it recommends thresholds."""
    from apps.evals.models import EvalQuestion, EvalResult

    run = EvalRunFactory(eval_set=EvalSet.objects.get(workspace=workspace, pk=set_id))
    for ordinal, (answerable, score) in enumerate([(True, 0.8), (False, None)], start=1):
        question = EvalQuestion.objects.create(
            workspace=workspace, eval_set_id=set_id, ordinal=ordinal, question="?", answerable=answerable
        )
        side = {"answered": score is not None, "correct": None, "answer": "", "risk": "low", "verdicts": []}
        EvalResult.objects.create(
            workspace=workspace,
            run=run,
            question=question,
            ordinal=ordinal,
            top_score=score,
            retrieval_score=score or 0.2,
            verified=side,
            naive=side,
        )
    return run


def _document(workspace, name: str, digit: str) -> Document:
    return DocumentFactory(workspace=workspace, title=name, filename=name, sha256=digit * 64, status="ready")


# credential → (how to build its Authorization header, the role it acts with, or the status everything answers)
CREDENTIALS = {
    "owner": ("token", Role.OWNER),
    "admin": ("token", Role.ADMIN),
    "member": ("token", Role.MEMBER),
    "viewer": ("token", Role.VIEWER),
    "admin key": ("key", Role.ADMIN),
    "member key": ("key", Role.MEMBER),
    "viewer key": ("key", Role.VIEWER),
    "outsider": ("token", 404),
    "key of another workspace": ("key", 404),
    "revoked key": ("key", 401),
    "anonymous": ("none", 401),
}


def _client(personas, credential: str) -> APIClient:
    client = APIClient()
    kind, standing = CREDENTIALS[credential]
    if kind == "token":
        who = "owner_b" if credential == "outsider" else credential
        client.credentials(HTTP_AUTHORIZATION=f"Token {personas.token(who)}")
    elif kind == "key":
        role = standing if isinstance(standing, str) else Role.ADMIN
        workspace = personas.workspace_b if credential == "key of another workspace" else None
        secret = personas.api_key(role, workspace=workspace)
        if credential == "revoked key":
            apikey_revoke(workspace=personas.workspace_a, actor=personas.owner, key_id=ApiKey.objects.get(prefix=secret[:14]).pk)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _expected(credential: str, endpoint: Endpoint) -> int:
    kind, standing = CREDENTIALS[credential]
    if isinstance(standing, int):
        return standing
    if endpoint.people_only and kind == "key":
        return 403
    return endpoint.ok if ROLE_RANK[standing] >= ROLE_RANK[endpoint.needs] else 403


ERROR_CODES = {401: {"not_authenticated", "authentication_failed"}, 403: {"permission_denied", "forbidden"}, 404: {"not_found"}}


@pytest.mark.parametrize("credential", list(CREDENTIALS))
def test_every_endpoint_answers_each_credential_as_its_role_allows(personas, credential):
    world = World(personas)
    client = _client(personas, credential)
    wrong = []
    for endpoint in ENDPOINTS:
        data, fmt = getattr(world, endpoint.body)() if endpoint.body else (None, None)
        response = getattr(client, endpoint.method)(world.url(endpoint), data, format=fmt)
        want = _expected(credential, endpoint)
        if response.status_code != want:
            wrong.append((endpoint.name, want, response.status_code, response.content[:200]))
        elif want >= 400 and response.json()["error"]["code"] not in ERROR_CODES[want]:
            wrong.append((endpoint.name, "error code", response.json()))
    assert wrong == []
    refused = {e.name for e in ENDPOINTS if _expected(credential, e) >= 400}
    assert Document.objects.filter(pk=world.doomed_doc).exists() == ("document delete" in refused)
    assert (ApiKey.objects.get(pk=world.old_key).revoked_at is None) == ("api key revoke" in refused)
    assert Membership.objects.filter(pk=world.rick).exists() == ("member remove" in refused)
    assert EvalSet.objects.filter(pk=world.doomed_set).exists() == ("eval set delete" in refused)
    pending = Invitation.objects.get(pk=world.invitation).status == InvitationStatus.PENDING
    assert pending == ("invitation revoke" in refused)
    assert Invitation.objects.filter(workspace=world.ws, identifier="newcomer").exists() == ("member invite" not in refused)
    if credential in ("owner", "admin", "member", "viewer"):
        assert Membership.objects.filter(pk=getattr(personas, credential).pk).exists() == ("leave" in refused)


@pytest.mark.parametrize("credential", list(CREDENTIALS))
def test_the_workspace_list_shows_your_own_and_only_people_create_workspaces(personas, credential):
    client = _client(personas, credential)
    listing = client.get(reverse("api_workspaces"))
    created = client.post(reverse("api_workspaces"), {"name": f"New {credential}"}, format="json")
    kind, standing = CREDENTIALS[credential]
    if standing == 401:
        assert (listing.status_code, created.status_code) == (401, 401)
        return
    assert listing.status_code == 200
    slugs = [w["slug"] for w in listing.json()["results"]]
    if kind == "key":
        assert slugs == ["beta" if credential == "key of another workspace" else "acme"], "a key sees its own workspace only"
        assert created.status_code == 403
    else:
        assert slugs == (["beta"] if credential == "outsider" else ["acme"])
        assert created.status_code == 201
        assert created.json()["role"] == "owner"
