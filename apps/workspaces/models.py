from __future__ import annotations

import uuid

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class Workspace(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=60, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TenantModel(models.Model):
    """Base of every tenant-owned row: a UUID public id and a non-null workspace."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


ROLE_RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2, Role.OWNER: 3}


class HoldsRole:
    """What a role allows, for anything with a `role`: a person's membership or an API key's."""

    role: str

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]

    @property
    def can_manage(self) -> bool:
        return self.has_role(Role.ADMIN)

    @property
    def can_write(self) -> bool:
        return self.has_role(Role.MEMBER)


class Membership(HoldsRole, models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user_per_workspace"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


class InvitationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    DECLINED = "declined", "Declined"
    REVOKED = "revoked", "Revoked"


class Invitation(TenantModel):
    """A role offered to whoever holds the username or e-mail `identifier`: nobody joins a
    workspace until they accept. Inviting never looks the identifier up, so it tells the
    inviter nothing about who has an account; answered invitations stay, with their outcome."""

    identifier = models.CharField(max_length=254)  # as typed, stripped and case-folded
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    status = models.CharField(max_length=10, choices=InvitationStatus.choices, default=InvitationStatus.PENDING)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    answered_at = models.DateTimeField(null=True, blank=True)  # accepted, declined or revoked

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "identifier"],
                condition=models.Q(status=InvitationStatus.PENDING),
                name="invitation_one_pending_per_identifier",
            ),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="invitation_role_valid"),
            models.CheckConstraint(condition=models.Q(status__in=InvitationStatus.values), name="invitation_status_valid"),
            models.CheckConstraint(
                condition=models.Q(status=InvitationStatus.PENDING, answered_at__isnull=True)
                | (~models.Q(status=InvitationStatus.PENDING) & models.Q(answered_at__isnull=False)),
                name="invitation_answered_when_not_pending",
            ),
        ]
        indexes = [models.Index(fields=["workspace", "status", "-created_at"], name="invitation_ws_status_created")]

    def __str__(self) -> str:
        return f"{self.identifier} to {self.workspace_id} as {self.role} ({self.status})"


class WorkspaceSettings(models.Model):
    """Per-workspace pipeline thresholds. Later issues add fields; defaults follow the design."""

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, related_name="settings", primary_key=True)
    chunk_size = models.PositiveIntegerField(default=800)
    chunk_overlap = models.PositiveIntegerField(default=120)
    dense_k = models.PositiveIntegerField(default=10)
    keyword_k = models.PositiveIntegerField(default=10)
    rrf_k = models.PositiveIntegerField(default=60)
    dense_weight = models.FloatField(default=1.0)
    keyword_weight = models.FloatField(default=1.0)
    locator_threshold = models.FloatField(default=90.0)
    # The precision the local judge must reach to verify or flag a claim on its own; between, the
    # claim is unsure (apps/pipeline/judging/selective.py).
    judge_target_precision = models.FloatField(default=0.95)
    # Verified mode refuses when the best reranked passage scores below this (0–1);
    # 0.25: how it was chosen is in docs/evaluation.md (bench_gate on SQuAD 2.0 dev).
    gate_threshold = models.FloatField(default=0.25)
    rerank_top_n = models.PositiveIntegerField(default=5)
    # Corrective RAG: the best passage at or above `crag_upper` is Correct, below
    # `crag_lower` Incorrect, Ambiguous between; kept passages are stripped to their
    # sentences scoring at or above `strip_threshold` (all 0–1).
    crag_upper = models.FloatField(default=0.55)
    crag_lower = models.FloatField(default=0.35)
    strip_threshold = models.FloatField(default=0.3)
    web_search_enabled = models.BooleanField(default=False)
    web_results = models.PositiveIntegerField(default=5)
    answer_max_claims = models.PositiveIntegerField(default=3)
    # Generation: provider names in the order to try them ("groq,zhipuai,local"); empty is the
    # server's order (every provider with a key, then local). Keys are Fernet tokens, never shown.
    provider_order = models.CharField(max_length=60, blank=True, default="")
    groq_api_key_encrypted = models.TextField(blank=True, default="")
    zhipuai_api_key_encrypted = models.TextField(blank=True, default="")
    # Trust score: weights of retrieval confidence, source agreement and answer grounding,
    # and the confidence at or above which risk is Low, and Medium.
    trust_weight_retrieval = models.FloatField(default=0.2)
    trust_weight_agreement = models.FloatField(default=0.4)
    trust_weight_grounding = models.FloatField(default=0.4)
    risk_low_cutoff = models.FloatField(default=0.75)
    risk_medium_cutoff = models.FloatField(default=0.5)
    # Tesseract's language code(s) for the PDF pages read by OCR: "eng", "deu", "deu+eng".
    ocr_language = models.CharField(max_length=60, default="eng")
    # What one document may cost to ingest: past either, it fails with a message naming the
    # limit, before it is embedded (a 1,000,000-column CSV made 20,973 chunks and held a worker
    # for many minutes and gigabytes).
    max_document_chunks = models.PositiveIntegerField(default=5000)
    max_sheet_cells = models.PositiveIntegerField(default=500_000)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(chunk_overlap__lt=models.F("chunk_size")), name="settings_overlap_below_size"),
            models.CheckConstraint(condition=models.Q(locator_threshold__gte=0, locator_threshold__lte=100), name="settings_locator_0_100"),
            models.CheckConstraint(condition=models.Q(gate_threshold__gte=0, gate_threshold__lte=1), name="settings_gate_0_1"),
            models.CheckConstraint(
                condition=models.Q(judge_target_precision__gte=0.5, judge_target_precision__lte=0.99), name="settings_judge_target_0_5_0_99"
            ),
            models.CheckConstraint(condition=models.Q(rerank_top_n__gte=1), name="settings_top_n_positive"),
            models.CheckConstraint(
                condition=models.Q(max_document_chunks__gte=1, max_sheet_cells__gte=1), name="settings_document_limits_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(crag_lower__gte=0, crag_lower__lte=models.F("crag_upper"), crag_upper__lte=1),
                name="settings_crag_lower_le_upper",
            ),
            models.CheckConstraint(condition=models.Q(strip_threshold__gte=0, strip_threshold__lte=1), name="settings_strip_0_1"),
            models.CheckConstraint(
                condition=models.Q(trust_weight_retrieval__gte=0, trust_weight_agreement__gte=0, trust_weight_grounding__gte=0)
                & (
                    models.Q(trust_weight_retrieval__gt=0) | models.Q(trust_weight_agreement__gt=0) | models.Q(trust_weight_grounding__gt=0)
                ),
                name="settings_trust_weights_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(risk_medium_cutoff__gte=0, risk_medium_cutoff__lte=models.F("risk_low_cutoff"), risk_low_cutoff__lte=1),
                name="settings_risk_cutoffs_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"settings of {self.workspace_id}"


class IdempotencyRecord(TenantModel):
    """The first response to a request sent with an `Idempotency-Key`, replayed to repeats
    (apps.workspaces.idempotency).

    One row per workspace + credential + key; the unique constraint is what keeps two
    concurrent repeats from both doing the work. `status_code` is null while the first
    request is still running."""

    credential = models.CharField(max_length=80)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    headers = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "credential", "key"], name="idempotency_unique_key_per_credential"),
        ]
        # Not per workspace: the hourly purge forgets old responses of every workspace at once.
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return f"{self.key} by {self.credential}"
