from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import SparseVectorField, VectorField

from apps.pipeline.bm25 import LEXEME_DIMENSIONS
from apps.pipeline.embedding import DIMENSIONS
from apps.workspaces.models import TenantModel


class DocumentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    PROCESSING = "processing", "Processing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


# The statuses an ingestion ends in.
SETTLED_STATUSES = (DocumentStatus.READY, DocumentStatus.FAILED)


def _upload_to(document: Document, filename: str) -> str:
    return f"workspaces/{document.workspace_id}/documents/{document.id}/{filename}"


class DocumentKind(models.TextChoices):
    PDF = "pdf", "PDF"
    DOCX = "docx", "Word"
    TEXT = "text", "Text"
    HTML = "html", "Web page"
    XLSX = "xlsx", "Excel"
    CSV = "csv", "CSV"
    PPTX = "pptx", "PowerPoint"


# What a document's units are called, for "3 pages", "12 rows", "1 slide".
_UNIT_NAMES = {DocumentKind.PDF: "page", DocumentKind.XLSX: "row", DocumentKind.CSV: "row", DocumentKind.PPTX: "slide"}


class Document(TenantModel):
    title = models.CharField(max_length=255)
    filename = models.CharField(max_length=255)
    file = models.FileField(upload_to=_upload_to, max_length=500)
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    status = models.CharField(max_length=12, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED)
    error = models.TextField(blank=True)
    kind = models.CharField(max_length=8, choices=DocumentKind.choices, blank=True)
    text = models.TextField(blank=True)
    page_count = models.PositiveIntegerField(default=0)
    # Pages of a PDF whose text was read by OCR (they had no text layer).
    ocr_page_count = models.PositiveIntegerField(default=0)
    # Where each page of `text` sits in the file (apps.pipeline.parsing.Location as a dict: a page,
    # a spreadsheet row with its sheet, a slide), in page order; empty for kinds without units.
    locations = models.JSONField(default=list, blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    # The workspace's chunk size and overlap its passages were cut with; null until it is indexed
    # (or when that is not known). A document cut otherwise than the settings now say waits for a
    # re-index (documents_reindex_pending).
    indexed_chunk_size = models.PositiveIntegerField(null=True, blank=True)
    indexed_chunk_overlap = models.PositiveIntegerField(null=True, blank=True)
    # The embedder its vectors came from (Embedder.identity: weights checksum and precision); empty
    # for documents indexed before it was recorded, whose vectors are the shipped model's in fp32.
    indexed_embedder = models.CharField(max_length=100, blank=True, default="")
    # Progress of the running ingestion: pages read by OCR, then chunks embedded; 0/0 while the text is extracted.
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    progress_unit = models.CharField(max_length=8, default="chunks")
    # Set when a worker claims the document and refreshed as it makes progress: a
    # claim whose heartbeat is older than the lease belongs to a dead worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    # The upload it came in with (files sent together share it, and are ingested as one stream);
    # the Documents page and the API show one progress for each. Empty for files added alone.
    batch = models.UUIDField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "sha256"], name="document_unique_content_per_workspace"),
        ]
        indexes = [
            models.Index(fields=["workspace", "status"], name="document_ws_status"),
            models.Index(fields=["workspace", "batch"], name="document_ws_batch", condition=models.Q(batch__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def settled(self) -> bool:
        return self.status in SETTLED_STATUSES

    @property
    def contents(self) -> str:
        """ "6 pages, 1 read by OCR", "12 rows", "1 slide"; empty for kinds without units."""
        unit = _UNIT_NAMES.get(self.kind)
        if unit is None or not self.page_count:
            return ""
        shown = f"{self.page_count} {unit}{'s' if self.page_count != 1 else ''}"
        return f"{shown}, {self.ocr_page_count} read by OCR" if self.ocr_page_count else shown

    @property
    def progress_percent(self) -> int:
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0


class Chunk(TenantModel):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    first_page = models.PositiveIntegerField(default=1)
    last_page = models.PositiveIntegerField(default=1)
    start_offset = models.PositiveIntegerField()
    end_offset = models.PositiveIntegerField()
    embedding = VectorField(dimensions=DIMENSIONS)
    # BM25 term weights of this chunk by lexeme (see apps.pipeline.bm25); its
    # dot product with the query's IDF vector is the chunk's BM25 score.
    token_count = models.PositiveIntegerField(default=0, db_default=0)
    bm25 = SparseVectorField(dimensions=LEXEME_DIMENSIONS, null=True)
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
            models.CheckConstraint(condition=models.Q(last_page__gte=models.F("first_page")), name="chunk_pages_ordered"),
        ]
        # The vectors' HNSW indexes are one per workspace, partial on workspace_id, made by the
        # chunk writer at a workspace's first write (apps/documents/sql.py, vector_index_ensure).
        indexes = [
            models.Index(fields=["workspace", "document"], name="chunk_ws_document"),
            # btree_gin puts the workspace into the keyword index: the GIN scan yields only the
            # workspace's matches instead of every tenant's, then filtered row by row.
            GinIndex(fields=["workspace", "search_vector"], name="chunk_ws_search_gin"),
        ]


class UnitVectors(TenantModel):
    """The vectors of a chunk's units — its sentences and table rows, as
    apps.pipeline.text.unit_reads reads them — embedded once at ingestion, float16, in order: no
    model pass over passages at query time. Keyed by the chunk's place in its document and written
    with one COPY beside the chunks (the chunk rows stay as the bulk write makes them); a chunk
    indexed before these were kept has none until it is re-indexed."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    ordinal = models.PositiveIntegerField()
    vectors = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="unitvectors_unique_chunk")]


class TermStat(models.Model):
    """Document frequency of one lexeme among a workspace's chunks, kept by ingestion."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    lexeme = models.TextField()
    df = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "lexeme"], name="termstat_unique_lexeme")]

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.df}"


class IndexStat(models.Model):
    """A workspace's chunk count and token total: N and the average length for BM25."""

    workspace = models.OneToOneField("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", primary_key=True)
    chunk_count = models.BigIntegerField(default=0)
    token_total = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.chunk_count} chunks"
