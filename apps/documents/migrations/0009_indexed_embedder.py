from django.db import migrations, models


class Migration(migrations.Migration):
    """Which embedder wrote each document's vectors. Documents indexed before it was recorded keep
    it empty: their vectors are fp32 (torch was the only backend), and documents_reindex_pending
    reads them so."""

    dependencies = [("documents", "0008_indexed_chunking")]

    operations = [
        migrations.AddField(model_name="document", name="indexed_embedder", field=models.CharField(blank=True, default="", max_length=100)),
    ]
