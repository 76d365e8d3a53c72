"""Admin actions, raised where they happen and stored by the audit trail.

Every app records its admin actions (a setting changed, a member added, a key revoked, a
document deleted) by calling `event_record` here, in the transaction of the change. core and
workspaces sit below audits in the app graph and cannot import it, so the audits app plugs the
one recorder in when Django starts (`AuditsConfig.ready`). An event raised with no recorder is
an error, never dropped: an admin action without its trail must not happen.
"""

from __future__ import annotations

from collections.abc import Callable

Recorder = Callable[..., object]
_recorder: list[Recorder] = []


def event_recorder_set(recorder: Recorder) -> None:
    _recorder[:] = [recorder]


def event_record(*, workspace, actor, action: str, data: dict):
    """One admin action in `workspace` by `actor` (a Membership, a KeyMembership for an API key,
    or None for a management command); `data` says what changed."""
    if not _recorder:
        raise RuntimeError("No audit recorder is installed: is apps.audits in INSTALLED_APPS?")
    return _recorder[0](workspace=workspace, actor=actor, action=action, data=data)
