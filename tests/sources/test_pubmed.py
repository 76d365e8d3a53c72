"""PubMed by query, against the fake E-utilities server: a query imports its articles with their
metadata, a second run adds nothing, a changed abstract is re-ingested, NCBI's 429 and 5xx are
retried with backoff and end with a message, and requests keep to NCBI's rate. The check runs in
this process (importing.source_run, as the task runs it)."""

from __future__ import annotations

import itertools
import time
import xml.etree.ElementTree as ET

import pytest

from apps.audits.models import AuditEvent
from apps.documents.models import Document
from apps.sources import importing
from apps.sources.models import SourceItem, SourceStatus
from apps.sources.pubmed import article_html, parse_article
from apps.sources.services import source_check, source_pubmed_create
from tests.sources.fakes import PMIDS, QUERY, record


def run(personas, query: str = QUERY, max_count: int = 50):
    source, _ = source_pubmed_create(workspace=personas.workspace_a, actor=personas.member, query=query, max_count=max_count)
    return importing.source_run(workspace=personas.workspace_a, source_id=source.pk)


def recheck(personas, source):
    source_check(workspace=personas.workspace_a, actor=personas.member, source_id=source.pk)
    return importing.source_run(workspace=personas.workspace_a, source_id=source.pk)


def test_a_query_imports_its_articles_with_their_metadata(personas, eutils):
    source = run(personas)
    assert (source.status, source.message) == (SourceStatus.DONE, "4 articles: 4 added.")
    assert (source.progress_done, source.progress_total) == (4, 4)
    items = {i.external_id: i for i in SourceItem.objects.filter(source=source)}
    assert sorted(items) == sorted(PMIDS)
    first = items["27633186"]
    assert first.metadata == {
        "pmid": "27633186",
        "title": "Lighthouse keepers and night-shift sleep: a cohort study of coastal workers.",
        "journal": "BMC public health",
        "year": "2016",
        "authors": ["Marsh H", "Okafor D"],
        "doi": "10.1186/s12889-016-3702-1",
        "retracted": False,
    }
    assert (first.citation, first.link) == ("PMID 27633186", "https://pubmed.ncbi.nlm.nih.gov/27633186/")
    document = Document.objects.get(pk=first.document_id, workspace=personas.workspace_a)
    assert document.title == "Lighthouse keepers and night-shift sleep: a cohort study of coastal workers."
    assert document.filename == "pubmed-27633186.html"
    page = document.file.open("rb").read().decode()
    assert "Marsh H, Okafor D. BMC public health. 2016. PMID 27633186. DOI 10.1186/s12889-016-3702-1." in page
    assert "<h2>Results</h2><p>Lighthouse keepers slept on average 5.8 hours a day" in page
    search, fetch = eutils.calls("esearch"), eutils.calls("efetch")
    assert [len(search), len(fetch)] == [1, 1]
    assert search[0]["params"] | {} == {
        "db": "pubmed",
        "term": QUERY,
        "retmax": "50",
        "retmode": "xml",
        "tool": "trustrag",
        "email": "tests@example.org",
    }
    assert fetch[0]["params"]["id"] == ",".join(PMIDS)


def test_the_maximum_count_limits_the_articles(personas, eutils):
    source = run(personas, max_count=2)
    assert source.message == "2 articles: 2 added."
    assert eutils.calls("esearch")[0]["params"]["retmax"] == "2"
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 2


def test_running_the_query_again_adds_nothing(personas, eutils):
    source = run(personas)
    uploads = AuditEvent.objects.filter(action="document.upload").count()
    again = run(personas)  # the same query, imported again: the same source is checked
    assert again.pk == source.pk
    assert again.message == "4 articles: 4 unchanged."
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 4
    assert AuditEvent.objects.filter(action="document.upload").count() == uploads == 4


def test_another_query_adds_only_the_articles_not_yet_in_the_workspace(personas, eutils):
    run(personas)
    eutils.queries["caffeine night duty"] = ["33301246", "27633186"]
    source = run(personas, query="caffeine night duty")
    assert source.message == "2 articles: 2 already in the workspace."
    assert eutils.calls("efetch")[-1]["params"]["id"] == ",".join(PMIDS), "nothing fetched for the second query"
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 4


def test_a_changed_or_retracted_abstract_is_re_ingested_in_its_document(personas, eutils):
    source = run(personas)
    item = SourceItem.objects.get(external_id="31452104")
    before = Document.objects.get(pk=item.document_id).sha256
    eutils.records["31452104"] = (
        record("31452104")
        .replace("fewer lapses of attention", "as many lapses of attention")
        .replace(
            '<PublicationType UI="D016428">Journal Article</PublicationType>', "<PublicationType>Retracted Publication</PublicationType>"
        )
    )
    source = recheck(personas, source)
    assert source.message == "4 articles: 1 changed and re-ingested, 3 unchanged."
    document = Document.objects.get(pk=item.document_id)
    assert document.sha256 != before
    assert document.status == "queued"
    page = document.file.open("rb").read().decode()
    assert "as many lapses of attention" in page
    assert "This article has been retracted." in page
    item.refresh_from_db()
    assert item.metadata["retracted"] is True
    assert AuditEvent.objects.filter(action="document.replace", data__document=str(document.pk)).count() == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_ncbi_failures_are_retried_with_backoff_then_the_import_goes_on(personas, eutils, settings, status):
    settings.NCBI_BACKOFF_S = 0.2
    time.sleep(1.1)  # the rate's window holds none of an earlier test's requests: the waits are the backoff's
    eutils.fail = [status, status]
    source = run(personas)
    assert source.message == "4 articles: 4 added."
    calls = eutils.calls("esearch")
    assert len(calls) == 3
    first, second = (b["at"] - a["at"] for a, b in itertools.pairwise(calls))
    assert 0.2 <= first < 0.35, "the first retry waits the backoff"
    assert second >= 0.4, "the second waits twice as long"


@pytest.mark.parametrize(("status", "said"), [(429, "429 Too Many Requests"), (502, "502 Bad Gateway")])
def test_ncbi_failing_past_the_retries_ends_with_a_message(personas, eutils, settings, status, said):
    settings.NCBI_MAX_RETRIES = 2
    eutils.fail = [status] * 10
    source = run(personas)
    assert source.status == SourceStatus.FAILED
    assert source.message == (
        f"PubMed's E-utilities answered {said} on 3 tries, with backoff; the import stopped. "
        "Try again later; NCBI allows more requests with an API key (NCBI_API_KEY)."
    )
    assert len(eutils.calls("esearch")) == 3
    assert not Document.objects.exists()


def test_an_unreachable_eutils_ends_with_a_message(personas, eutils, settings):
    settings.NCBI_BASE_URL, settings.NCBI_MAX_RETRIES = "http://127.0.0.1:9/entrez/eutils", 1
    source = run(personas)
    assert source.status == SourceStatus.FAILED
    assert source.message.startswith("PubMed's E-utilities could not be reached (")
    assert "on 2 tries, with backoff" in source.message


def test_requests_keep_to_ncbis_rate_three_a_second_without_a_key_and_ten_with_one(settings):
    time.sleep(1.1)  # an earlier test's requests leave the shared window
    started = time.monotonic()
    for _ in range(7):
        importing.ncbi_throttle()
    assert time.monotonic() - started >= 1.9, "the 4th waits for the 1st to leave the second, the 7th for the 4th"
    time.sleep(1.1)
    settings.NCBI_API_KEY = "ncbi-test-key"
    started = time.monotonic()
    for _ in range(10):
        importing.ncbi_throttle()
    assert time.monotonic() - started < 0.9
    importing.ncbi_throttle()
    assert time.monotonic() - started >= 0.95


def test_the_api_key_is_sent_when_set_and_never_shown(personas, eutils, settings):
    settings.NCBI_API_KEY = "ncbi-secret-key"
    run(personas, max_count=1)
    assert {c["params"].get("api_key") for c in eutils.requests} == {"ncbi-secret-key"}
    settings.NCBI_BASE_URL, settings.NCBI_MAX_RETRIES = "http://127.0.0.1:9/entrez/eutils", 0
    source = run(personas, query="another query")
    assert "ncbi-secret-key" not in source.message
    assert "api_key=…" in source.message


def test_efetch_xml_is_read_into_articles_and_pages_that_do_not_change_by_themselves():
    collective = parse_article(ET.fromstring(record("31452104")))
    assert collective.authors == ("Lindqvist K", "Nordic Maritime Fatigue Group")
    assert (collective.doi, collective.year, collective.abstract[0][0]) == ("", "2019", "")
    dated = parse_article(ET.fromstring(record("29220478")))
    assert (dated.year, dated.doi) == ("2017", "10.1016/j.sleh.2017.09.004")
    assert article_html(dated) == article_html(parse_article(ET.fromstring(record("29220478"))))
