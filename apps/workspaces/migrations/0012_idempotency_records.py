import uuid

import django.core.serializers.json
import django.db.models.deletion
from django.db import migrations, models

OLD_TABLE = "core_idempotencyrecord"


def take_over_or_create(apps, schema_editor):
    """A database migrated before the move has the table under core's name: it is renamed. A new
    database has none: it is created."""
    model = apps.get_model("workspaces", "IdempotencyRecord")
    tables = schema_editor.connection.introspection.table_names()
    if OLD_TABLE in tables:
        schema_editor.alter_db_table(model, OLD_TABLE, model._meta.db_table)
    elif model._meta.db_table not in tables:
        schema_editor.create_model(model)


def drop(apps, schema_editor):
    schema_editor.delete_model(apps.get_model("workspaces", "IdempotencyRecord"))


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0011_invitations"),
        ("core", "0002_idempotency_records"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="IdempotencyRecord",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("credential", models.CharField(max_length=80)),
                        ("key", models.CharField(max_length=255)),
                        ("fingerprint", models.CharField(max_length=64)),
                        ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("body", models.JSONField(blank=True, encoder=django.core.serializers.json.DjangoJSONEncoder, null=True)),
                        ("headers", models.JSONField(blank=True, default=dict)),
                        (
                            "workspace",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="workspaces.workspace"),
                        ),
                    ],
                    options={
                        "indexes": [models.Index(fields=["created_at"], name="idempotency_created")],
                        "constraints": [
                            models.UniqueConstraint(fields=("workspace", "credential", "key"), name="idempotency_unique_key_per_credential")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(take_over_or_create, drop),
    ]
