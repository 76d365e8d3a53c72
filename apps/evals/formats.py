"""Evaluation set files: JSONL, CSV or SQuAD 2.0 JSON into questions, or one message that names
the line (or JSON path) and field at fault. Plain Python: the caller decides what to save.

JSON is read by the one reader of JSON from outside (no nesting deep enough to exhaust the
recursion limit), and every text kept is held to the one text guard (`apps.core.guard`): a NUL,
a lone surrogate or another control character is refused with its line, as the API refuses it."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from apps.core.guard import JSONUnreadable, read_json, short, text_problem

MAX_QUESTIONS = 5000
# Extension → format: what an evaluation upload may be (the hostile-input walk uploads each kind).
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".json": "squad"}
MAX_ANSWER_CHARS = 2000
TRUE_WORDS, FALSE_WORDS = {"true", "yes", "1", "y"}, {"false", "no", "0", "n"}


class EvalFileError(ValueError):
    pass


@dataclass(frozen=True)
class ParsedQuestion:
    question: str
    answerable: bool
    expected_answers: list[str] = field(default_factory=list)
    expected_source: str = ""


def parse_eval_file(filename: str, data: bytes, *, max_question_chars: int) -> tuple[str, list[ParsedQuestion]]:
    """The file's format ("jsonl", "csv" or "squad", by its extension) and its questions."""
    kind = next((kind for extension, kind in FORMATS.items() if filename.lower().endswith(extension)), None)
    if kind is None:
        raise EvalFileError("Upload a .jsonl, .csv or SQuAD 2.0 .json file.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EvalFileError(f"The file is not UTF-8 text (byte {exc.start} cannot be read).") from None
    questions = {"jsonl": _jsonl, "csv": _csv, "squad": _squad}[kind](text)
    if not questions:
        raise EvalFileError("The file holds no questions.")
    if len(questions) > MAX_QUESTIONS:
        raise EvalFileError(f"An evaluation set holds at most {MAX_QUESTIONS} questions; this file has {len(questions)}.")
    for where, q in questions:
        if len(q.question) > max_question_chars:
            raise EvalFileError(f"{where}: “question” is longer than {max_question_chars} characters.")
    return kind, [q for _, q in questions]


def _jsonl(text: str) -> list[tuple[str, ParsedQuestion]]:
    found = []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 may sit inside a JSON string
        if not line.strip():
            continue
        where = f"Line {number}"
        try:
            row = read_json(line)
        except JSONUnreadable as exc:
            raise EvalFileError(f"{where} is not valid JSON ({exc}).") from None
        if not isinstance(row, dict):
            raise EvalFileError(f"{where} must be a JSON object.")
        answerable = row.get("answerable")
        if not isinstance(answerable, bool):
            raise EvalFileError(f"{where}: “answerable” must be true or false.")
        found.append((where, _question(where, row, answerable)))
    return found


def _csv(text: str) -> list[tuple[str, ParsedQuestion]]:
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in ("question", "answerable") if name not in header]
    if missing:
        raise EvalFileError(f"Line 1 (the header) lacks the column(s) {', '.join(missing)}.")
    reader.fieldnames = header
    found = []
    try:
        for row in reader:
            where = f"Line {reader.line_num}"
            if not any(isinstance(value, str) and value.strip() for value in row.values()):
                continue
            word = (row.get("answerable") or "").strip().lower()
            if word not in TRUE_WORDS | FALSE_WORDS:
                raise EvalFileError(f"{where}: “answerable” must be true or false, not “{short(row.get('answerable') or '')}”.")
            found.append((where, _question(where, row, word in TRUE_WORDS)))
    except csv.Error as exc:
        raise EvalFileError(f"Line {reader.line_num} is not valid CSV ({exc}).") from None
    return found


def _question(where: str, row: dict, answerable: bool) -> ParsedQuestion:
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise EvalFileError(f"{where}: “question” is missing or empty.")
    _check_text(where, "question", question)
    expected = row.get("expected_answer") or []
    expected = [expected] if isinstance(expected, str) else expected
    if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
        raise EvalFileError(f"{where}: “expected_answer” must be text (or a list of texts).")
    for answer in expected:
        _check_text(where, "expected_answer", answer, max_length=MAX_ANSWER_CHARS)
    source = row.get("expected_source") or ""
    if not isinstance(source, str):
        raise EvalFileError(f"{where}: “expected_source” must be text.")
    _check_text(where, "expected_source", source, max_length=300)
    expected = [e.strip() for e in expected if e.strip()]
    return ParsedQuestion(" ".join(question.split()), answerable, expected, source.strip())


def _check_text(where: str, name: str, value: str, *, max_length: int | None = None) -> None:
    if problem := text_problem(value, max_length=max_length):
        raise EvalFileError(f"{where}: “{name}” {problem}")


def _squad(text: str) -> list[tuple[str, ParsedQuestion]]:
    try:
        articles = read_json(text)["data"]
    except JSONUnreadable as exc:
        raise EvalFileError(f"The file is not valid JSON ({exc}).") from None
    except (KeyError, TypeError):
        raise EvalFileError("SQuAD 2.0 JSON needs a top-level “data” list.") from None
    found = []
    for a, article in enumerate(_list(articles, "data")):
        for p, paragraph in enumerate(_list(article.get("paragraphs"), f"data[{a}].paragraphs")):
            for q, qa in enumerate(_list(paragraph.get("qas"), f"data[{a}].paragraphs[{p}].qas")):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                impossible = qa.get("is_impossible", False)
                if not isinstance(impossible, bool):
                    raise EvalFileError(f"{where}: “is_impossible” must be true or false.")
                answers = [x.get("text") for x in _list(qa.get("answers", []), f"{where}.answers") if isinstance(x, dict)]
                row = {"question": qa.get("question"), "expected_answer": [] if impossible else answers}
                found.append((where, _question(where, row, not impossible)))
    return found


def _list(value, where: str) -> list:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise EvalFileError(f"{where} must be a list of objects.")
    return value
