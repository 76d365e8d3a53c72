"""Services decide permissions: every service that acts for an actor asks the tenancy rule book
itself (`tenancy.require`), so a view or API class that forgot to check is no hole.

The services are found, not listed by hand: every function of the apps' service modules with a
keyword-only `actor` is here, and each refuses an actor of another workspace (404, as if it did
not exist) and an actor one role below the one its operation needs (403) before it does anything.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

import apps
from apps.apikeys.services import apikey_create
from apps.workspaces.models import ROLE_RANK, Invitation, Membership, Role
from tests.api.test_api_access import World
from tests.factories import MembershipFactory, UserFactory

# Functions that take an `actor` to record who acted, not to act for them.
RECORDERS = {"apps.audits.services.audit_event_record"}

# service → (the lowest role its operation needs, its keyword arguments besides workspace and actor).
CALLS = {
    "apps.apikeys.services.apikey_create": (Role.ADMIN, lambda w: {"name": "nightly", "role": Role.MEMBER}),
    "apps.apikeys.services.apikey_revoke": (Role.ADMIN, lambda w: {"key_id": w.old_key}),
    "apps.audits.services.audit_export": (Role.VIEWER, lambda w: {"filters": _filters(), "fmt": "csv"}),
    "apps.documents.services.document_create": (Role.MEMBER, lambda w: {"filename": "new.txt", "data": b"New text."}),
    "apps.documents.services.document_create_from_upload": (Role.MEMBER, lambda w: {"upload": _upload()}),
    "apps.documents.services.document_delete": (Role.MEMBER, lambda w: {"document_id": w.doomed_doc}),
    "apps.documents.services.document_reindex": (Role.MEMBER, lambda w: {"document_id": w.doc}),
    "apps.documents.services.document_replace": (Role.MEMBER, lambda w: {"document_id": w.doc, "data": b"Replaced text."}),
    "apps.documents.services.documents_upload": (Role.MEMBER, lambda w: {"uploads": [_upload()]}),
    "apps.evals.services.eval_set_create": (
        Role.MEMBER,
        lambda w: {"filename": "s.jsonl", "data": b'{"question": "Q?", "answerable": true}'},
    ),
    "apps.evals.services.eval_set_delete": (Role.MEMBER, lambda w: {"set_id": w.doomed_set}),
    "apps.evals.services.eval_run_create": (Role.MEMBER, lambda w: {"set_id": w.eval_set, "enqueue": False}),
    "apps.evals.services.eval_run_apply": (Role.ADMIN, lambda w: {"run_id": w.eval_run}),
    "apps.queries.services.query_run_create": (Role.MEMBER, lambda w: {"question": "What is in A?"}),
    "apps.queries.sources.query_run_reverify": (Role.MEMBER, lambda w: {"run_id": w.answered}),
    "apps.sources.services.source_pubmed_create": (Role.MEMBER, lambda w: {"query": "night shift sleep"}),
    "apps.sources.services.source_urls_create": (Role.MEMBER, lambda w: {"urls": ["https://example.org/page"]}),
    "apps.sources.services.source_check": (Role.MEMBER, lambda w: {"source_id": _source(w)}),
    "apps.sources.services.source_delete": (Role.MEMBER, lambda w: {"source_id": _source(w)}),
    "apps.sources.services.source_schedule": (Role.ADMIN, lambda w: {"source_id": _source(w), "schedule": "daily"}),
    "apps.workspaces.services.invitation_create": (Role.ADMIN, lambda w: {"identifier": "someone@example.com", "role": Role.VIEWER}),
    "apps.workspaces.services.invitation_revoke": (Role.ADMIN, lambda w: {"invitation_id": w.invitation}),
    "apps.workspaces.services.membership_leave": (Role.VIEWER, lambda w: {}),
    "apps.workspaces.services.membership_change_role": (Role.ADMIN, lambda w: {"membership_id": w.tess, "role": Role.VIEWER}),
    "apps.workspaces.services.membership_remove": (Role.ADMIN, lambda w: {"membership_id": w.rick}),
    "apps.workspaces.services.workspace_delete": (Role.OWNER, lambda w: {}),
    "apps.workspaces.services.settings_update": (Role.ADMIN, lambda w: {"changes": {"gate_threshold": 0.5}}),
    "apps.workspaces.services.settings_providers_update": (
        Role.ADMIN,
        lambda w: {"provider_order": ["local"], "keys": {}, "clear": set()},
    ),
}
BELOW = {Role.OWNER: Role.ADMIN, Role.ADMIN: Role.MEMBER, Role.MEMBER: Role.VIEWER}


def actor_services() -> dict[str, object]:
    """Every function of apps/*/services.py (and queries' sources) that takes a keyword-only `actor`."""
    found = {}
    for app in pkgutil.iter_modules(apps.__path__):
        for name in ("services", "sources"):
            try:
                module = importlib.import_module(f"apps.{app.name}.{name}")
            except ModuleNotFoundError:
                continue
            for function_name, function in inspect.getmembers(module, inspect.isfunction):
                parameter = inspect.signature(function).parameters.get("actor")
                if function.__module__ == module.__name__ and parameter is not None and parameter.kind == parameter.KEYWORD_ONLY:
                    found[f"{module.__name__}.{function_name}"] = function
    return found


def _source(world):
    from apps.sources.models import Source

    return Source.objects.create(workspace_id=world.ws, kind="url", url="https://example.org/kept", status="done").pk


def _filters():
    from apps.audits.selectors import AuditFilters

    return AuditFilters()


def _upload():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("new.txt", b"A new document about lighthouses.")


def test_every_service_that_acts_for_an_actor_is_in_the_table():
    found = set(actor_services()) - RECORDERS
    assert len(found) >= 20
    assert found == set(CALLS), "add the new service to CALLS with its operation's role"


@pytest.fixture
def world(personas):
    world = World(personas)
    world.invitation = Invitation.objects.create(workspace=personas.workspace_a, identifier="later@example.com", role=Role.VIEWER).pk
    return world


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_service_refuses_an_actor_of_another_workspace(personas, world, name):
    _, arguments = CALLS[name]
    outsiders = [personas.owner_b, _key_membership(personas.workspace_b, Role.ADMIN)]
    for outsider in outsiders:
        with pytest.raises(Http404):
            actor_services()[name](workspace=personas.workspace_a, actor=outsider, **arguments(world))


@pytest.mark.parametrize("name", sorted(name for name, (role, _) in CALLS.items() if role in BELOW))
def test_a_service_refuses_a_role_below_the_one_its_operation_needs(personas, world, name):
    needed, arguments = CALLS[name]
    below = MembershipFactory(workspace=personas.workspace_a, user=UserFactory(), role=BELOW[needed])
    assert ROLE_RANK[below.role] < ROLE_RANK[needed]
    with pytest.raises(PermissionDenied):
        actor_services()[name](workspace=personas.workspace_a, actor=below, **arguments(world))
    assert Membership.objects.filter(pk=world.tess, role=Role.MEMBER).exists(), "nothing was changed"


def _key_membership(workspace, role: str):
    from apps.apikeys.models import ApiKey
    from apps.workspaces.tenancy import resolve_key_membership

    key, _ = apikey_create(workspace=workspace, actor=None, name=f"{role} key", role=role)
    return resolve_key_membership(ApiKey.objects.get(pk=key.pk), workspace_id=workspace.pk)


def test_no_view_or_api_class_decides_a_permission_itself():
    """Views and API classes translate; `require`, `check_role` and `access` are called by
    services, selectors and the two resolvers (workspace_view, WorkspaceAPIView) only."""
    import re
    from pathlib import Path

    root = Path(apps.__path__[0])
    deciding = re.compile(r"\b(require|check_role|access)\(")
    found = [
        f"{path.relative_to(root.parent)}:{n}"
        for path in sorted(root.glob("*/views.py")) + sorted(root.glob("*/api.py"))
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if deciding.search(line)
    ]
    assert found == []


def test_who_acted_is_named_in_one_place(personas):
    from apps.workspaces.tenancy import actor_label

    key = _key_membership(personas.workspace_a, Role.MEMBER)
    assert actor_label(personas.member) == "mia"
    assert actor_label(personas.member, api=True) == "api:mia"
    assert actor_label(key) == key.label
    assert actor_label(key, api=True) == key.label
    assert actor_label(None) == "anonymous"
