"""The README and docs/ stay a front door and a set of pages that hold together: every link in
them resolves to a file of the repository, none leads out of it, and the README stays short."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200

FENCED = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
COMMENT = re.compile(r"<!--.*?-->", re.S)
# [text](target) and ![alt](target); a target may carry a "title" after a space.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
AUTOLINK = re.compile(r"<((?:https?|ftp)://[^>\s]+)>")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.M)


def links(text: str) -> list[str]:
    """Every link target written in markdown prose (not in code, not in comments)."""
    prose = INLINE_CODE.sub("", FENCED.sub("", COMMENT.sub("", text)))
    return LINK.findall(prose) + AUTOLINK.findall(prose) + REFERENCE.findall(prose)


def anchors(text: str) -> set[str]:
    """The anchors a markdown page's headings get, spelt as GitHub spells them."""
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in HEADING.findall(FENCED.sub("", text))}


def problem(page: Path, target: str) -> str | None:
    """Why a link target is not a file (and heading) of the repository, or None when it is."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
        return "points outside the repository"
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path.split("?", 1)[0]).resolve() if path else page
    if not resolved.is_relative_to(ROOT):
        return "escapes the repository"
    if not resolved.is_file():
        return "names no file of the repository"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
        return f"{resolved.relative_to(ROOT)} has no heading #{anchor}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_of_the_readme_and_docs_resolves_inside_the_repository(page):
    broken = [f"{target}: {why}" for target in links(page.read_text()) if (why := problem(page, target))]
    assert not broken, f"{page.relative_to(ROOT)} has links a reader of the repository cannot follow:\n" + "\n".join(broken)


def test_the_readme_is_a_front_door_of_at_most_200_lines():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a page of docs/"


def test_the_readme_shows_its_images_and_maps_every_docs_page():
    readme = links((ROOT / "README.md").read_text())
    assert {"docs/images/answer.png", "docs/images/audit-record.png"} <= set(readme)
    pages = {f"docs/{page.name}" for page in PAGES if page.parent.name == "docs"}
    assert pages <= set(readme), f"docs pages missing from the README's map: {sorted(pages - set(readme))}"


def test_the_link_check_catches_what_it_should():
    page = ROOT / "docs" / "example.md"
    text = (
        "[ok](api.md#errors) ![img](images/answer.png) [out](https://example.com) [up](../../etc/passwd) "
        "[gone](missing.md) [no heading](api.md#no-such-heading) <http://example.org> `[code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n"
    )
    found = {target: problem(page, target) for target in links(text)}
    assert found == {
        "api.md#errors": None,
        "images/answer.png": None,
        "https://example.com": "points outside the repository",
        "../../etc/passwd": "escapes the repository",
        "missing.md": "names no file of the repository",
        "api.md#no-such-heading": "docs/api.md has no heading #no-such-heading",
        "http://example.org": "points outside the repository",
    }
