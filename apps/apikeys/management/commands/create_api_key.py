from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from apps.apikeys.models import KEY_ROLES
from apps.apikeys.services import apikey_create
from apps.core.errors import ApplicationError
from apps.workspaces.models import Workspace


class Command(BaseCommand):
    help = "Create a workspace API key and print it (the only time it is shown)."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="the workspace's slug")
        parser.add_argument("--role", required=True, choices=[str(role) for role in KEY_ROLES])
        parser.add_argument("--name", default="created with manage.py", help="what will use the key")

    def handle(self, *args, workspace: str, role: str, name: str, **options):
        found = Workspace.objects.filter(slug=workspace).first()
        if found is None:
            raise CommandError(f"No workspace with the slug “{workspace}”.")
        try:
            key, secret = apikey_create(workspace=found, actor=None, name=name, role=role)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(f"Key {key.prefix} ({key.name}, {key.role}) for {found.name}; it is not shown again:")
        self.stdout.write(secret)
