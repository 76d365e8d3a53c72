"""What other apps hear of a workspace going, so that they remove what they keep for it outside
its rows (documents: the workspace's vector index).

Sent with `workspace_id` inside the transaction that deleted the workspace, after its rows."""

from __future__ import annotations

from django.dispatch import Signal

workspace_deleted = Signal()
