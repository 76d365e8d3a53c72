from __future__ import annotations

import hashlib
import uuid
from functools import cache

import factory
import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from apps.audits.models import AuditRecord
from apps.audits.services import audit_record_create
from apps.documents.models import Chunk, Document
from apps.evals.models import EvalRun, EvalSet
from apps.pipeline.embedding import DIMENSIONS
from apps.queries.models import QueryRun, QueryStatus
from apps.workspaces.models import Invitation, Membership, Role, Workspace, WorkspaceSettings

PASSWORD = "correct-horse-battery"


@cache
def _password_hash() -> str:
    # Hashed once per session: the real hasher costs ~0.5 s a call by design.
    return make_password(PASSWORD)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.LazyFunction(_password_hash)


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Workspace {n}")
    slug = factory.Sequence(lambda n: f"ws-{n}")
    settings = factory.RelatedFactory("tests.factories.WorkspaceSettingsFactory", factory_related_name="workspace")


class WorkspaceSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WorkspaceSettings


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


class InvitationFactory(factory.django.DjangoModelFactory):
    """A pending invitation, stored as the service stores one (identifier case-folded)."""

    class Meta:
        model = Invitation

    workspace = factory.SubFactory(WorkspaceFactory)
    identifier = factory.Sequence(lambda n: f"invitee{n}@example.com")
    role = Role.MEMBER


class DocumentFactory(factory.django.DjangoModelFactory):
    """A stored document row (no file content, not ingested unless `status` says so)."""

    class Meta:
        model = Document

    workspace = factory.SubFactory(WorkspaceFactory)
    title = factory.Sequence(lambda n: f"document-{n}")
    filename = factory.LazyAttribute(lambda d: f"{d.title}.txt")
    size_bytes = 1
    sha256 = factory.Sequence(lambda n: hashlib.sha256(f"document {n}".encode()).hexdigest())
    file = "x"


def unit_vector(seed: int = 0) -> list[float]:
    vector = np.random.default_rng(seed).normal(size=DIMENSIONS)
    return (vector / np.linalg.norm(vector)).astype(np.float32).tolist()


class ChunkFactory(factory.django.DjangoModelFactory):
    """A chunk of its document's workspace, with a unit embedding (no keyword statistics:
    ingestion or `document_chunks_write` computes those)."""

    class Meta:
        model = Chunk

    document = factory.SubFactory(DocumentFactory)
    workspace = factory.LazyAttribute(lambda c: c.document.workspace)
    ordinal = factory.Sequence(lambda n: n)
    text = factory.Sequence(lambda n: f"Passage {n}.")
    start_offset = 0
    end_offset = factory.LazyAttribute(lambda c: len(c.text))
    embedding = factory.Sequence(unit_vector)


class QueryRunFactory(factory.django.DjangoModelFactory):
    """A finished run (as if answered); pass `status` for others."""

    class Meta:
        model = QueryRun

    workspace = factory.SubFactory(WorkspaceFactory)
    question = factory.Sequence(lambda n: f"Question {n}?")
    status = QueryStatus.DONE
    answer = "An answer."


class AuditRecordFactory(factory.django.DjangoModelFactory):
    """An audit record appended to its workspace's chain through the real service (the chain
    and the append-only triggers hold for it as for any other)."""

    class Meta:
        model = AuditRecord

    workspace = factory.SubFactory(WorkspaceFactory)
    asked_by = None
    actor_label = "mia"
    query_run_id = factory.LazyFunction(uuid.uuid4)
    payload = factory.LazyAttribute(lambda r: {"question": "What was asked?"})

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return audit_record_create(**kwargs)


class EvalSetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EvalSet

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"eval-set-{n}")
    source_format = "jsonl"
    question_count = 0


class EvalRunFactory(factory.django.DjangoModelFactory):
    """A finished run of its set with the default thresholds of its time."""

    class Meta:
        model = EvalRun

    eval_set = factory.SubFactory(EvalSetFactory)
    workspace = factory.LazyAttribute(lambda r: r.eval_set.workspace)
    status = "done"
    gate_threshold = 0.5
    crag_lower = 0.35
