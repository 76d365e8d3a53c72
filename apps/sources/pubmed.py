"""PubMed through NCBI's E-utilities: ESearch for a query's PMIDs, EFetch (XML) for the articles.

Every request names the tool and the e-mail address NCBI asks clients for (and the API key when
one is set), waits for its turn under NCBI's rate (3 requests a second without a key, 10 with
one; `throttle` is shared by every worker), and is retried with exponential backoff on a 429, a
5xx or a failed connection; past the retries the import stops with a message a person can act on.
Plain Python (no Django): the caller passes the configuration and the throttle."""

from __future__ import annotations

import html
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from apps.sources.fetch import FetchPolicy, FetchRefused, fetch

ARTICLE_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
EFETCH_BATCH = 100
MAX_XML_BYTES = 50 * 1024 * 1024


class PubMedError(Exception):
    """The import could not go on; the message says why and what to do."""


@dataclass(frozen=True)
class EutilsConfig:
    base_url: str
    tool: str
    email: str = ""
    api_key: str = ""
    timeout_s: float = 30.0
    retries: int = 4
    backoff_s: float = 1.0

    @property
    def rate(self) -> int:
        """Requests a second NCBI allows this client."""
        return 10 if self.api_key else 3


@dataclass(frozen=True)
class Article:
    pmid: str
    title: str
    abstract: tuple[tuple[str, str], ...]  # (section label or "", text), in order
    journal: str = ""
    year: str = ""
    authors: tuple[str, ...] = ()
    doi: str = ""
    publication_types: tuple[str, ...] = field(default=())

    @property
    def url(self) -> str:
        return ARTICLE_URL.format(pmid=self.pmid)

    @property
    def retracted(self) -> bool:
        return "Retracted Publication" in self.publication_types

    def metadata(self) -> dict:
        return {
            "pmid": self.pmid,
            "title": self.title,
            "journal": self.journal,
            "year": self.year,
            "authors": list(self.authors),
            "doi": self.doi,
            "retracted": self.retracted,
        }


class Eutils:
    """The two calls an import makes, with the politeness NCBI asks for."""

    def __init__(self, config: EutilsConfig, *, throttle: Callable[[], None], sleep: Callable[[float], None] = time.sleep):
        self.config, self.throttle, self.sleep = config, throttle, sleep
        host = urlsplit(config.base_url).hostname or ""
        # The E-utilities' address is the administrator's setting, not a user's input: trusted.
        self.policy = FetchPolicy(allowed=(host,), timeout_s=config.timeout_s, max_bytes=MAX_XML_BYTES, content_types=())

    def search(self, query: str, max_count: int) -> list[str]:
        """The PMIDs of `query`'s first `max_count` results, PubMed's order."""
        root = self._xml("esearch.fcgi", {"db": "pubmed", "term": query, "retmax": max_count, "retmode": "xml"})
        if (error := root.findtext("ERROR")) and not root.findall("IdList/Id"):
            raise PubMedError(f"PubMed refused the query: {error}")
        return [i.text.strip() for i in root.findall("IdList/Id") if i.text and i.text.strip().isdigit()][:max_count]

    def fetch(self, pmids: list[str]) -> Iterator[Article]:
        """The articles of `pmids`, fetched in batches."""
        for start in range(0, len(pmids), EFETCH_BATCH):
            root = self._xml("efetch.fcgi", {"db": "pubmed", "id": ",".join(pmids[start : start + EFETCH_BATCH]), "retmode": "xml"})
            yield from (parse_article(node) for node in root.iter("PubmedArticle"))

    def _xml(self, endpoint: str, params: dict) -> ET.Element:
        body = self._get(endpoint, params)
        if b"<!ENTITY" in body[:4096]:
            raise PubMedError("PubMed's answer declared XML entities; it was not read.")
        try:
            return ET.fromstring(body)
        except ET.ParseError as exc:
            raise PubMedError(f"PubMed's answer to {endpoint} was not readable XML ({exc}).") from None

    def _get(self, endpoint: str, params: dict) -> bytes:
        url = f"{self.config.base_url.rstrip('/')}/{endpoint}?{urlencode(params | self._identity())}"
        problem = ""
        for attempt in range(self.config.retries + 1):
            if attempt:
                self.sleep(self.config.backoff_s * 2 ** (attempt - 1))
            self.throttle()
            try:
                answer = fetch(url, self.policy)
            except FetchRefused as exc:
                problem = f"could not be reached ({_without_key(str(exc), self.config.api_key)})"
                continue
            if answer.status == 429 or answer.status >= 500:
                problem = f"answered {answer.status} {_reason(answer.status)}"
                continue
            if answer.status != 200:
                raise PubMedError(f"PubMed's E-utilities answered {answer.status} {_reason(answer.status)} to {endpoint}.")
            return answer.body
        raise PubMedError(
            f"PubMed's E-utilities {problem} on {self.config.retries + 1} tries, with backoff; the import stopped. "
            "Try again later; NCBI allows more requests with an API key (NCBI_API_KEY)."
        )

    def _identity(self) -> dict:
        identity = {"tool": self.config.tool}
        if self.config.email:
            identity["email"] = self.config.email
        if self.config.api_key:
            identity["api_key"] = self.config.api_key
        return identity


def parse_article(node: ET.Element) -> Article:
    """One <PubmedArticle> of EFetch's XML."""
    citation = node.find("MedlineCitation")
    article = citation.find("Article") if citation is not None else None
    if citation is None or article is None:
        raise PubMedError("PubMed answered an article without its citation.")
    sections = tuple((part.get("Label", "").strip(), _text(part)) for part in article.findall("Abstract/AbstractText") if _text(part))
    return Article(
        pmid=(citation.findtext("PMID") or "").strip(),
        title=_text(article.find("ArticleTitle")),
        abstract=sections,
        journal=_text(article.find("Journal/Title")),
        year=_year(article),
        authors=tuple(a for a in (_author(a) for a in article.findall("AuthorList/Author")) if a),
        doi=_doi(node, article),
        publication_types=tuple(_text(t) for t in article.findall("PublicationTypeList/PublicationType")),
    )


def article_html(article: Article) -> bytes:
    """The article as the web page the HTML parser reads: the same article always makes the same
    bytes, so its content hash changes only when PubMed's record does."""
    e = html.escape
    facts = [", ".join(article.authors), article.journal, article.year, f"PMID {article.pmid}"]
    if article.doi:
        facts.append(f"DOI {article.doi}")
    parts = [
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(article.title)}</title></head><body><main>',
        f"<h1>{e(article.title)}</h1>",
        f"<p>{e('. '.join(f for f in facts if f))}.</p>",
    ]
    if article.retracted:
        parts.append("<p>This article has been retracted.</p>")
    for label, text in article.abstract or (("", "No abstract is available."),):
        parts.append((f"<h2>{e(label.capitalize())}</h2>" if label else "") + f"<p>{e(text)}</p>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts).encode()


def _text(node: ET.Element | None) -> str:
    return " ".join("".join(node.itertext()).split()) if node is not None else ""


def _year(article: ET.Element) -> str:
    issue = article.find("Journal/JournalIssue/PubDate")
    if issue is None:
        return ""
    return (issue.findtext("Year") or issue.findtext("MedlineDate") or "")[:4]


def _author(author: ET.Element) -> str:
    if collective := _text(author.find("CollectiveName")):
        return collective
    return " ".join(p for p in (author.findtext("LastName"), author.findtext("Initials")) if p)


def _doi(node: ET.Element, article: ET.Element) -> str:
    for location in article.findall("ELocationID"):
        if location.get("EIdType") == "doi" and location.text:
            return location.text.strip()
    for identifier in node.findall("PubmedData/ArticleIdList/ArticleId"):
        if identifier.get("IdType") == "doi" and identifier.text:
            return identifier.text.strip()
    return ""


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _without_key(message: str, key: str) -> str:
    return message.replace(key, "…") if key else message
