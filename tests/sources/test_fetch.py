"""The URL fetcher against the fake web server: what it fetches, and every request it refuses
(SSRF: private, loopback, link-local and other special addresses, by name, by redirect or by
rebinding; too large, too slow, not a web page). No database."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from apps.sources.fetch import FetchPolicy, FetchRefused, address_problem, fetch

ALLOWED = FetchPolicy(allowed=("127.0.0.1",), timeout_s=5.0)
CLOSED = FetchPolicy(allowed=(), timeout_s=5.0)


def resolver(table: dict[str, list[str]], calls: list[str] | None = None):
    """A stand-in for DNS: each name of `table` answers its addresses (or a list of lists: one per
    call, in turn); an address is itself."""

    def resolve(host, port, type=0):
        if calls is not None:
            calls.append(host)
        if host not in table:  # an address in the URL
            return socket.getaddrinfo(host, port, type=type)
        answers = table[host]
        addresses = answers.pop(0) if answers and isinstance(answers[0], list) else answers
        if not addresses:
            raise socket.gaierror("no such name")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolve


def test_a_page_is_fetched_from_an_address_the_administrator_allows(web):
    page = fetch(f"{web.url}/guide", ALLOWED)
    assert page.status == 200
    assert page.content_type == "text/html"
    assert b"thirty minutes before sunset" in page.body
    assert page.hops == (f"{web.url}/guide",)


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("localhost", "loopback"),  # a name, resolved by the system's resolver
        ("[::1]", "loopback"),
        ("[::ffff:127.0.0.1]", "loopback"),  # IPv4-mapped IPv6
        ("0.0.0.0", "unspecified"),
    ],
)
def test_the_loopback_server_is_refused_when_not_allowed_and_never_asked(web, host, kind):
    with pytest.raises(FetchRefused) as refused:
        fetch(f"http://{host}:{web.port}/guide", CLOSED)
    assert f"a {kind} address: TrustRAG does not fetch from it" in str(refused.value)
    assert "SOURCES_ALLOWED_HOSTS" in str(refused.value)
    assert web.requests == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://[fe80::1]/", "fe80::1 is a link-local address"),
        ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
        ("http://[::ffff:10.0.0.1]/", "a private address"),
        ("http://192.168.1.1:8080/admin", "192.168.1.1 is a private address"),
        ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ],
)
def test_special_addresses_are_refused_before_any_connection(url, message):
    with pytest.raises(FetchRefused, match=message):
        fetch(url, CLOSED, resolver=socket.getaddrinfo)


@pytest.mark.parametrize(
    ("addresses", "shown"),
    [
        (["127.0.0.1"], "intranet.example resolves to 127.0.0.1, a loopback address"),
        (["10.0.0.1"], "intranet.example resolves to 10.0.0.1, a private address"),
        (["169.254.169.254"], "intranet.example resolves to 169.254.169.254, a link-local address"),
        (["93.184.216.34", "10.0.0.1"], "intranet.example resolves to 10.0.0.1, a private address"),  # every address
    ],
)
def test_a_name_is_refused_when_any_of_its_addresses_is_special(addresses, shown):
    with pytest.raises(FetchRefused, match=shown):
        fetch("https://intranet.example/wiki", CLOSED, resolver=resolver({"intranet.example": addresses}))


def test_an_unresolvable_name_is_refused_with_a_message():
    with pytest.raises(FetchRefused, match=r"nowhere\.example could not be resolved"):
        fetch("http://nowhere.example/", CLOSED, resolver=resolver({"nowhere.example": []}))


@pytest.mark.parametrize("target", ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:{port}/guide"])
def test_a_redirect_to_a_special_address_is_refused(web, target):
    """The first hop is a host name the administrator allows (fake-web.test, on 127.0.0.1); the
    redirect's address is checked again and refused, and never asked."""
    target = target.format(port=web.port)
    web.pages["/hop"] = {"status": 302, "headers": {"Location": target}}
    policy = FetchPolicy(allowed=("fake-web.test",), timeout_s=5.0)
    with pytest.raises(FetchRefused, match="address: TrustRAG does not fetch from it"):
        fetch(f"http://fake-web.test:{web.port}/hop", policy, resolver=resolver({"fake-web.test": ["127.0.0.1"]}))
    assert [r["path"] for r in web.requests] == ["/hop"]


def test_redirects_are_followed_within_the_limit_and_each_hop_is_recorded(web):
    web.pages["/old"] = {"status": 301, "headers": {"Location": "/moved"}}
    web.pages["/moved"] = {"status": 307, "headers": {"Location": f"{web.url}/guide"}}
    page = fetch(f"{web.url}/old", ALLOWED)
    assert page.hops == (f"{web.url}/old", f"{web.url}/moved", f"{web.url}/guide")
    assert page.url == f"{web.url}/guide"
    web.pages["/loop"] = {"status": 302, "headers": {"Location": "/loop"}}
    with pytest.raises(FetchRefused, match="redirects more than 3 times"):
        fetch(f"{web.url}/loop", FetchPolicy(allowed=("127.0.0.1",), max_redirects=3))
    assert len([r for r in web.requests if r["path"] == "/loop"]) == 4


def test_the_connection_goes_to_the_checked_address_so_rebinding_cannot_swap_it(web):
    """The name resolves once per hop: to 127.0.0.1 (allowed) when checked, and would resolve to
    10.0.0.1 the next time. The fetch connects to the checked address and sends the name as Host."""
    calls: list[str] = []
    rebinding = resolver({"pinned.test": [["127.0.0.1"], ["10.0.0.1"], ["10.0.0.1"]]}, calls)
    page = fetch(f"http://pinned.test:{web.port}/guide", ALLOWED, resolver=rebinding)
    assert page.status == 200
    assert calls == ["pinned.test"]
    assert web.requests == [{"path": "/guide", "host": f"pinned.test:{web.port}"}]


def test_an_oversized_page_is_refused_by_its_declared_length_and_by_what_it_sends(web):
    small = FetchPolicy(allowed=("127.0.0.1",), max_bytes=4096)
    web.pages["/big"] = {"body": b"<p>" + b"x" * 10_000 + b"</p>"}
    with pytest.raises(FetchRefused, match=r"is 10,007 bytes, over the 4,096-byte limit \(SOURCES_FETCH_MAX_BYTES\)"):
        fetch(f"{web.url}/big", small)
    web.pages["/undeclared"] = {"body": b"<p>" + b"x" * 10_000 + b"</p>", "no_length": True}
    with pytest.raises(FetchRefused, match=r"is larger than the 4,096-byte limit"):
        fetch(f"{web.url}/undeclared", small)


def test_a_slow_server_is_given_up_on_within_the_time_limit(web):
    quick = FetchPolicy(allowed=("127.0.0.1",), timeout_s=0.5)
    web.pages["/slow"] = {"body": b"<p>late</p>", "delay": 2.0}
    with pytest.raises(FetchRefused, match=r"did not answer within 0.5 s"):
        fetch(f"{web.url}/slow", quick)
    # A page that keeps sending a little at a time is held to the whole fetch's time, not each read's.
    web.pages["/trickle"] = {"body": b"<p>" + b"y" * 8000 + b"</p>", "trickle": 0.2}
    with pytest.raises(FetchRefused, match=r"did not answer within 0.5 s"):
        fetch(f"{web.url}/trickle", quick)


@pytest.mark.parametrize("content_type", ["application/pdf", "application/json", "image/png", ""])
def test_what_is_not_a_web_page_is_refused(web, content_type):
    web.pages["/file"] = {"body": b"%PDF-1.7", "type": content_type}
    with pytest.raises(FetchRefused, match="not a web page"):
        fetch(f"{web.url}/file", ALLOWED)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "is not an http:// or https:// address"),
        ("ftp://example.org/x", "is not an http:// or https:// address"),
        ("http://user:secret@example.org/", "carries a user name or password"),
        ("http:///path-only", "names no host"),
        ("http://example.org:99999/", "is not a valid URL"),
    ],
)
def test_addresses_that_are_not_web_pages_are_refused(url, message):
    with pytest.raises(FetchRefused, match=message):
        fetch(url, ALLOWED)


def test_what_counts_as_special():
    problems = {a: address_problem(ipaddress.ip_address(a)) for a in ["8.8.8.8", "2606:4700::1111", "100.64.0.1", "::", "fc00::1"]}
    assert problems == {"8.8.8.8": None, "2606:4700::1111": None, "100.64.0.1": "non-public", "::": "unspecified", "fc00::1": "private"}
