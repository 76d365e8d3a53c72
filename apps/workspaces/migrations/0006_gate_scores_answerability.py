from django.db import migrations, models

# The gate score became min(relevance, answerability) (apps.pipeline.gate), calibrated with
# bench_gate at 0.26. Workspaces still at the old default move with it: at 0.5 the new score
# would refuse about half of the answerable questions. A threshold an admin chose is kept.
OLD_DEFAULT, NEW_DEFAULT = 0.5, 0.26


def move_default(apps, schema_editor, old=OLD_DEFAULT, new=NEW_DEFAULT):
    apps.get_model("workspaces", "WorkspaceSettings").objects.filter(gate_threshold=old).update(gate_threshold=new)


def move_back(apps, schema_editor):
    move_default(apps, schema_editor, old=NEW_DEFAULT, new=OLD_DEFAULT)


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0005_providers_and_trust"),
    ]

    operations = [
        migrations.AlterField(
            model_name="workspacesettings",
            name="gate_threshold",
            field=models.FloatField(default=0.26),
        ),
        migrations.RunPython(move_default, move_back),
    ]
