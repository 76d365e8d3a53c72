from django.db import migrations


class Migration(migrations.Migration):
    """Created the idempotency records' table while its model lived here. The model is the
    workspaces app's now (a table with a foreign key to workspaces is not the ground floor's):
    workspaces/0012 takes the table over where this migration made it, and creates it where
    it did not. Core's migrations depend on no other app's."""

    dependencies = [("core", "0001_extensions")]
    operations: list = []
