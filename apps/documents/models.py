from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import HnswIndex, VectorField

from apps.core.models import TenantModel
from apps.pipeline.embedding import DIMENSIONS


class DocumentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    PROCESSING = "processing", "Processing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


def _upload_to(document: Document, filename: str) -> str:
    return f"workspaces/{document.workspace_id}/documents/{document.id}/{filename}"


class Document(TenantModel):
    title = models.CharField(max_length=255)
    filename = models.CharField(max_length=255)
    file = models.FileField(upload_to=_upload_to, max_length=500)
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    status = models.CharField(max_length=12, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED)
    error = models.TextField(blank=True)
    text = models.TextField(blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "sha256"], name="document_unique_content_per_workspace"),
        ]
        indexes = [models.Index(fields=["workspace", "status"], name="document_ws_status")]

    def __str__(self) -> str:
        return self.title


class Chunk(TenantModel):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    start_offset = models.PositiveIntegerField()
    end_offset = models.PositiveIntegerField()
    embedding = VectorField(dimensions=DIMENSIONS)
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "document", "ordinal"], name="chunk_unique_ordinal"),
            models.CheckConstraint(condition=models.Q(end_offset__gt=models.F("start_offset")), name="chunk_offsets_ordered"),
        ]
        indexes = [
            models.Index(fields=["workspace", "document"], name="chunk_ws_document"),
            HnswIndex(name="chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64, opclasses=["vector_cosine_ops"]),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
        ]
