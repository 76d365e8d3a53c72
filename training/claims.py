"""The development claims (SciFact train, HealthVer dev) and their split held out by document:
one reading and one split for every model measured here (the verifier, training/verifier/, never
trains on them; its learning curve reads the held-out side), so that results on the held-out side
are comparable across runs and with the retired feature judge, which was fitted on the other side.

Claims are grouped by source document, and claims sharing a text join their documents' group; a
group is held out when the SHA-256 bucket of its name falls in the lowest HELD_OUT_SHARE.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HELD_OUT_SHARE = 0.3


@dataclass
class Claim:
    """One claim in the BENCHMARKS.md claims format, with the text of its source."""

    id: str
    dataset: str
    source_id: str
    claim: str
    quote: str
    label: str
    quote_status: str
    source_text: str
    group: str = ""

    def as_json(self) -> dict:
        faithful = self.quote_status == "verbatim" and self.label == "supports"
        return {
            "id": self.id,
            "source_id": self.source_id,
            "claim": self.claim,
            "quote": self.quote,
            "label": self.label,
            "quote_status": self.quote_status,
            "faithful": faithful,
        }


def read_jsonl(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_claims(data: Path) -> list[Claim]:
    """Every development claim with its source's text, grouped for the split."""
    rows = []
    for dataset, claims, corpus in (
        ("scifact", data / "scifact/claims_train.jsonl", data / "scifact/claims_corpus.jsonl.gz"),
        ("healthver", data / "healthver/claims.jsonl", data / "healthver/corpus.jsonl"),
    ):
        texts = {str(d.get("id", d.get("_id"))): d["text"] for d in read_jsonl(corpus)}
        for c in read_jsonl(claims):
            rows.append(
                Claim(c["id"], dataset, c["source_id"], c["claim"], c["quote"], c["label"], c["quote_status"], texts[c["source_id"]])
            )
    assign_groups(rows)
    return rows


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
