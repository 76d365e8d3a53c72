from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.documents.services import document_create
from apps.workspaces.models import Membership, Role, Workspace
from apps.workspaces.services import workspace_create

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMO_USERNAME = "demo"
DEMO_PASSWORD = "trustrag-demo"


class Command(BaseCommand):
    help = "Create the demo workspace (slug 'demo'), its owner and its documents. Safe to run again."

    def handle(self, *args, **options):
        with transaction.atomic():
            user, created_user = self._user()
            workspace = Workspace.objects.filter(slug="demo").first() or workspace_create(owner=user, name="Demo", slug="demo")
            owner, _ = Membership.objects.get_or_create(workspace=workspace, user=user, defaults={"role": Role.OWNER})
            added = [
                path.name
                for path in sorted(DEMO_DIR.glob("*.md"))
                if document_create(workspace=workspace, actor=owner, filename=path.name, data=path.read_bytes())[1]
            ]
        self.stdout.write(
            f"Demo workspace: /w/{workspace.slug}/ — {len(added)} document(s) queued for ingestion"
            if added
            else "Demo workspace: documents already there"
        )
        note = "" if created_user else " (unless it was changed since)"
        self.stdout.write(self.style.SUCCESS(f"Demo login: username '{DEMO_USERNAME}', password '{DEMO_PASSWORD}'{note}"))

    def _user(self):
        users = get_user_model()
        user = users.objects.filter(username=DEMO_USERNAME).first()
        if user is not None:
            return user, False
        return users.objects.create_user(DEMO_USERNAME, email="demo@example.com", password=DEMO_PASSWORD), True
