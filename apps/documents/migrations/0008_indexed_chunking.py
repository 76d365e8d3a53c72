from django.db import migrations, models


def known_chunking(apps, schema_editor):
    """Each indexed document's chunking as far as it is known: the workspace's current chunk size
    and overlap, unless the workspace changed them after the document was indexed and has not been
    re-indexed since (what the settings page read back from the audit events until now); those
    stay unknown, so the page still asks for the re-index."""
    Document = apps.get_model("documents", "Document")
    Settings = apps.get_model("workspaces", "WorkspaceSettings")
    AuditEvent = apps.get_model("audits", "AuditEvent")
    for options in Settings.objects.all():
        documents = Document.objects.filter(workspace_id=options.workspace_id, status="ready")
        events = AuditEvent.objects.filter(workspace_id=options.workspace_id)
        change = events.filter(action="settings.update", data__reindex_needed=True).order_by("-created_at").first()
        if change is not None and not events.filter(action="document.reindex", data__all=True, created_at__gt=change.created_at).exists():
            documents = documents.filter(created_at__gte=change.created_at)
        documents.update(indexed_chunk_size=options.chunk_size, indexed_chunk_overlap=options.chunk_overlap)


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0007_vector_index_per_workspace"),
        ("workspaces", "0010_document_limits"),
        ("audits", "0005_source_changes"),
    ]

    operations = [
        migrations.AddField(model_name="document", name="indexed_chunk_overlap", field=models.PositiveIntegerField(blank=True, null=True)),
        migrations.AddField(model_name="document", name="indexed_chunk_size", field=models.PositiveIntegerField(blank=True, null=True)),
        migrations.RunPython(known_chunking, migrations.RunPython.noop),
    ]
