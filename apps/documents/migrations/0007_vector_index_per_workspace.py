"""One HNSW index per workspace instead of one over every workspace (see apps/documents/sql.py,
vector_index_ensure): each existing workspace's index is built here, then the shared one goes.
The SQL is written out rather than imported, so that this migration keeps doing what it did.
Building reads the chunk table once per workspace; on a large table, plan a few seconds each."""

import uuid

from django.db import migrations

METHOD = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"


def _name(pk) -> str:
    return f"chunk_vec_{uuid.UUID(str(pk)).hex}"


def build(apps, schema_editor):
    Workspace = apps.get_model("workspaces", "Workspace")
    with schema_editor.connection.cursor() as cursor:
        for pk in Workspace.objects.values_list("pk", flat=True):
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {_name(pk)} ON documents_chunk {METHOD} WHERE workspace_id = '{uuid.UUID(str(pk))}'::uuid"
            )


def drop(apps, schema_editor):
    Workspace = apps.get_model("workspaces", "Workspace")
    with schema_editor.connection.cursor() as cursor:
        for pk in Workspace.objects.values_list("pk", flat=True):
            cursor.execute(f"DROP INDEX IF EXISTS {_name(pk)}")


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0006_unit_vectors"),
        ("workspaces", "0007_ingestion_reach"),
    ]

    operations = [
        migrations.RunPython(build, drop),
        migrations.RemoveIndex(model_name="chunk", name="chunk_embedding_hnsw"),
    ]
