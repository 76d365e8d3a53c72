"""The generation prompt, and a tolerant reader of what a model returns for it."""

from __future__ import annotations

import json
import re

from apps.pipeline.types import Answer, Candidate, Claim

SYSTEM = (
    "You answer questions for a team from their own documents, and only from them. "
    "Every statement you make must be an atomic claim backed by a quote copied character for character "
    "from one numbered source. Never use outside knowledge. If the sources do not answer the question, "
    'say so by setting "insufficient" to true and giving no claims. '
    'Reply with one JSON object and nothing else: {"answer": string, "claims": '
    '[{"text": string, "source": number, "quote": string}], "insufficient": boolean}. '
    '"answer" is a short answer made of the claims; "source" is the number of the source the quote comes from; '
    '"quote" is one or two whole sentences copied verbatim from that source.'
)

REPAIR = (
    "Your reply could not be read as the JSON object asked for ({problem}). "
    'Reply again with only that JSON object: {{"answer": string, "claims": [{{"text": string, "source": number, '
    '"quote": string}}], "insufficient": boolean}}, quotes copied verbatim from the numbered sources.'
)


class UnusableOutput(ValueError):
    """The model's reply is not the JSON answer asked for; the message says what is wrong."""


def messages_for(question: str, sources: list[Candidate], max_claims: int) -> list[dict]:
    numbered = "\n\n".join(f"[{i}] {c.document_title}\n{c.text}" for i, c in enumerate(sources, 1))
    user = f"Sources:\n\n{numbered}\n\nQuestion: {question}\n\nAnswer with at most {max_claims} claims, as the JSON object described."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def repair_messages(messages: list[dict], reply: str, problem: str) -> list[dict]:
    return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": REPAIR.format(problem=problem)}]


def parse_answer(reply: str, *, max_claims: int, provider: str) -> Answer:
    """Read the answer from a reply that may wrap its JSON in code fences or prose."""
    data = _json_object(reply)
    insufficient = data.get("insufficient", False)
    if not isinstance(insufficient, bool):
        raise UnusableOutput('"insufficient" is not true or false')
    claims = data.get("claims", [])
    if not isinstance(claims, list):
        raise UnusableOutput('"claims" is not a list')
    parsed = tuple(_claim(item) for item in claims[:max_claims])
    text = data.get("answer", "")
    if not isinstance(text, str):
        raise UnusableOutput('"answer" is not a string')
    if not parsed and not insufficient:
        raise UnusableOutput("no claims and not marked insufficient")
    if insufficient:
        parsed = ()
    text = " ".join(text.split()) or " ".join(c.text for c in parsed)
    return Answer(text=text, claims=parsed, insufficient=insufficient, provider=provider)


def partial_answer(buffer: str) -> str:
    """The part of the "answer" string a streaming reply has produced so far, for showing it live."""
    found = re.search(r'"answer"\s*:\s*"', buffer)
    if not found:
        return ""
    out, escaped = [], False
    for char in buffer[found.end() :]:
        if escaped:
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/"}.get(char, ""))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            break
        else:
            out.append(char)
    return "".join(out)


def strip_fences(reply: str) -> str:
    """The reply without the Markdown code fence models like to wrap JSON in."""
    return re.sub(r"^```(?:json)?\s*|\s*```$", "", reply.strip(), flags=re.IGNORECASE)


def _json_object(reply: str) -> dict:
    text = strip_fences(reply)
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and ("claims" in value or "answer" in value or "insufficient" in value):
            return value
    raise UnusableOutput("no JSON object with answer, claims and insufficient was found")


def _claim(item) -> Claim:
    if not isinstance(item, dict):
        raise UnusableOutput("a claim is not an object")
    text, quote = item.get("text"), item.get("quote")
    if not isinstance(text, str) or not text.strip() or not isinstance(quote, str) or not quote.strip():
        raise UnusableOutput("a claim lacks its text or its quote")
    return Claim(text=" ".join(text.split()), source=_source_number(item.get("source")), quote=quote.strip())


def _source_number(value) -> int:
    # Models write 2, "2", "[2]" or "Source 2"; a number outside the sources is kept
    # as it is, for the verifier to flag the citation.
    if isinstance(value, bool):
        raise UnusableOutput("a claim's source is not a number")
    if isinstance(value, int):
        return value
    digits = re.search(r"\d+", str(value or ""))
    if not digits:
        raise UnusableOutput("a claim's source is not a number")
    return int(digits.group())


REWRITE = (
    "Rewrite the user's question as a short web search query: the key entities and terms, no filler words, "
    'at most 12 words. Reply with one JSON object and nothing else: {"query": string}.'
)


def rewrite_messages(question: str) -> list[dict]:
    return [{"role": "system", "content": REWRITE}, {"role": "user", "content": question}]


def parse_rewrite(reply: str) -> str:
    try:
        value = json.loads(strip_fences(reply))
    except json.JSONDecodeError as exc:
        raise UnusableOutput("the rewrite is not JSON") from exc
    query = value.get("query") if isinstance(value, dict) else None
    if not isinstance(query, str) or not query.strip() or len(query) > 300:
        raise UnusableOutput('the rewrite has no usable "query"')
    return " ".join(query.split())
