from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from apps.audits.selectors import audit_chain_check
from apps.workspaces.models import Workspace


class Command(BaseCommand):
    help = "Recompute every workspace's audit hash chain (or one's) and report the first broken link; exits 1 when one is broken."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", help="only this workspace (its slug)")

    def handle(self, *args, workspace: str | None, **options):
        workspaces = Workspace.objects.order_by("slug")
        if workspace is not None:
            workspaces = workspaces.filter(slug=workspace)
            if not workspaces.exists():
                raise CommandError(f"No workspace with the slug “{workspace}”.")
        broken = [ws.slug for ws in workspaces if not self._verify(ws)]
        if broken:
            raise CommandError(f"The audit chain is broken in {len(broken)} workspace(s): {', '.join(broken)}.")

    def _verify(self, workspace: Workspace) -> bool:
        check = audit_chain_check(workspace=workspace)
        if check.intact:
            self.stdout.write(self.style.SUCCESS(f"{workspace.slug}: {check.records:,} record(s), the chain holds."))
        else:
            self.stdout.write(self.style.ERROR(f"{workspace.slug}: broken at record #{check.first_broken_sequence}: {check.reason}."))
        return check.intact
