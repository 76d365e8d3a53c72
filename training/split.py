"""The development claims held out by document: one split for every model trained here (the
feature judge, scripts/train_judge.py, and the verifier, training/verifier/), so that no claim or
document trained on by either is ever measured on.

Claims are grouped by source document, and claims sharing a text join their documents' group; a
group is held out when the SHA-256 bucket of its name falls in the lowest HELD_OUT_SHARE.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

HELD_OUT_SHARE = 0.3


def assign_groups(rows) -> None:
    """Set `row.group` on rows with `dataset`, `source_id` and `claim`: the union of documents
    that share a claim text, so no claim or document is on both sides."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in rows:
        doc, claim = f"{r.dataset}:doc:{r.source_id}", f"{r.dataset}:claim:{r.claim.strip().lower()}"
        parent[find(doc)] = find(claim)
    members: dict[str, list[str]] = defaultdict(list)
    for key in list(parent):
        members[find(key)].append(key)
    names = {root: min(keys) for root, keys in members.items()}
    for r in rows:
        r.group = names[find(f"{r.dataset}:doc:{r.source_id}")]


def bucket(group: str, salt: str) -> float:
    return int(hashlib.sha256(f"{salt}:{group}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def is_held_out(group: str) -> bool:
    return bucket(group, "held-out") < HELD_OUT_SHARE
