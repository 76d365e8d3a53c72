"""Fetching a URL a person typed, without letting it reach what it must not (SSRF).

The host name is resolved here, once per hop; every address it resolves to is checked, and the
connection goes to the checked address itself (pinned), so a name that resolves to a public
address when checked and to 127.0.0.1 when connected (DNS rebinding) cannot swap it. Redirects are
followed by hand, each hop checked again, within a limit; the size, the time and the content type
are limited, and every refusal is a `FetchRefused` whose message a person can act on.

Plain Python (no Django): the caller passes the policy, built from the settings."""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

REDIRECTS = (301, 302, 303, 307, 308)
HTML_TYPES = ("text/html", "application/xhtml+xml")
ALLOW_HINT = "An administrator can allow it with the SOURCES_ALLOWED_HOSTS setting."
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., list]


class FetchRefused(Exception):
    """The URL was not fetched, or what it answered was refused; the message says why."""


@dataclass(frozen=True)
class FetchPolicy:
    allowed: tuple[str, ...] = ()  # host names, addresses or networks the administrator allows
    timeout_s: float = 15.0  # for the whole fetch, redirects included
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5
    content_types: tuple[str, ...] = HTML_TYPES  # empty: any
    user_agent: str = "TrustRAG source import"


@dataclass(frozen=True)
class Fetched:
    url: str  # the last hop's URL
    status: int
    content_type: str
    body: bytes
    hops: tuple[str, ...] = ()  # every URL asked, in order


def fetch(url: str, policy: FetchPolicy, *, resolver: Resolver = socket.getaddrinfo, headers: dict | None = None) -> Fetched:
    """GET `url` under `policy`. Any final status comes back (the caller judges a 404 or a 503);
    what the policy forbids raises FetchRefused before a byte is sent to it."""
    deadline = time.monotonic() + policy.timeout_s
    hops: list[str] = []
    for _ in range(policy.max_redirects + 1):
        hops.append(url)
        target = _target(url)
        address = checked_address(target.hostname, target.port, policy, resolver)
        status, response_headers, body = _get(url, target, address, policy, deadline, headers or {})
        if status in REDIRECTS and response_headers.get("location"):
            url = urljoin(url, response_headers["location"])
            continue
        content_type = response_headers.get("content-type", "").split(";")[0].strip().lower()
        if 200 <= status < 300 and policy.content_types and content_type not in policy.content_types:
            shown = content_type or "no content type"
            raise FetchRefused(f"{url} is {shown}, not a web page ({' or '.join(policy.content_types)}).")
        return Fetched(url=url, status=status, content_type=content_type, body=body, hops=tuple(hops))
    raise FetchRefused(f"{hops[0]} redirects more than {policy.max_redirects} times; it was not fetched.")


def checkable_url(url: str, *, max_length: int = 2000) -> str:
    """`url` when it is an http(s) address a fetch can try; its host's addresses are checked when
    it is fetched (now is not then: a name may resolve elsewhere by the time the worker runs)."""
    if len(url) > max_length:
        raise FetchRefused(f"“{url[:60]}…” is longer than {max_length} characters.")
    _target(url)
    return url


@dataclass(frozen=True)
class _Target:
    scheme: str
    hostname: str
    port: int
    path: str


def _target(url: str) -> _Target:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise FetchRefused(f"“{url}” is not a valid URL.") from None
    if parts.scheme not in ("http", "https"):
        raise FetchRefused(f"“{url}” is not an http:// or https:// address.")
    if not parts.hostname:
        raise FetchRefused(f"“{url}” names no host.")
    if parts.username is not None or parts.password is not None:
        raise FetchRefused(f"“{url}” carries a user name or password; send the address without them.")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Target(parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80), path)


def checked_address(host: str, port: int, policy: FetchPolicy, resolver: Resolver = socket.getaddrinfo) -> str:
    """The one address to connect to for `host`: every address the name resolves to must be public
    (or allowed), else the whole host is refused. A host name the administrator lists is trusted."""
    addresses = _resolve(host, port, resolver)
    if host not in _allowed_names(policy):
        for address in addresses:
            if (problem := address_problem(address)) and not _allowed_address(address, policy):
                named = f"{address} is" if host.strip("[]") == str(address) else f"{host} resolves to {address},"
                raise FetchRefused(f"{named} a {problem} address: TrustRAG does not fetch from it. {ALLOW_HINT}")
    return str(addresses[0])


def address_problem(address: Address) -> str | None:
    """What makes `address` one a fetch must not reach ("loopback", "private"…); None when it is public."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address_problem(address.ipv4_mapped)
    for flag, label in (
        ("is_unspecified", "unspecified"),
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_reserved", "reserved"),
        ("is_private", "private"),
        ("is_site_local", "site-local"),
    ):
        if getattr(address, flag, False):
            return label
    return None if address.is_global else "non-public"


def _resolve(host: str, port: int, resolver: Resolver) -> list[Address]:
    try:
        infos = resolver(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise FetchRefused(f"{host} could not be resolved to an address.") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
    if not addresses:
        raise FetchRefused(f"{host} could not be resolved to an address.")
    return addresses


def _allowed_names(policy: FetchPolicy) -> set[str]:
    return {entry.lower() for entry in policy.allowed if _network(entry) is None}


def _allowed_address(address: Address, policy: FetchPolicy) -> bool:
    return any(address in network for entry in policy.allowed if (network := _network(entry)) is not None)


def _network(entry: str):
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return None


def _get(url: str, target: _Target, address: str, policy: FetchPolicy, deadline: float, headers: dict):
    """One GET of `target` over a connection to `address` (the checked one, never resolved again)."""
    connection = _connection(target, address, _remaining(url, deadline, policy))
    try:
        connection.request("GET", target.path, headers={"User-Agent": policy.user_agent, "Accept": "*/*"} | headers)
        sock = connection.sock  # kept: the connection lets go of it when the response will close it
        response = connection.getresponse()
        response_headers = {k.lower(): v for k, v in response.getheaders()}
        if response.status in REDIRECTS:
            return response.status, response_headers, b""
        return response.status, response_headers, _read(url, response, sock, policy, deadline)
    except TimeoutError:
        raise FetchRefused(f"{url} did not answer within {policy.timeout_s:g} s.") from None
    except ssl.SSLError as exc:
        raise FetchRefused(f"{url}: the secure connection failed ({exc.reason or exc}).") from None
    except (OSError, http.client.HTTPException) as exc:
        raise FetchRefused(f"{url} could not be fetched ({exc.__class__.__name__}: {exc}).") from None
    finally:
        connection.close()


def _connection(target: _Target, address: str, timeout: float) -> http.client.HTTPConnection:
    if target.scheme == "https":
        connection = http.client.HTTPSConnection(target.hostname, target.port, timeout=timeout, context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=timeout)

    # The name stays in the Host header and in TLS (SNI, the certificate's check); the socket goes
    # to the address checked above.
    def pinned(_, timeout_s, source_address=None):
        return socket.create_connection((address, target.port), timeout_s, source_address)

    connection._create_connection = pinned
    return connection


def _read(url: str, response, sock, policy: FetchPolicy, deadline: float) -> bytes:
    declared = response.getheader("Content-Length")
    if declared and declared.isdigit() and int(declared) > policy.max_bytes:
        raise FetchRefused(f"{url} is {int(declared):,} bytes, over the {policy.max_bytes:,}-byte limit (SOURCES_FETCH_MAX_BYTES).")
    body = bytearray()
    while True:
        sock.settimeout(_remaining(url, deadline, policy))  # the whole fetch's time, not each read's
        piece = response.read1(65536)
        if not piece:
            return bytes(body)
        body += piece
        if len(body) > policy.max_bytes:
            raise FetchRefused(f"{url} is larger than the {policy.max_bytes:,}-byte limit (SOURCES_FETCH_MAX_BYTES).")


def _remaining(url: str, deadline: float, policy: FetchPolicy) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchRefused(f"{url} did not answer within {policy.timeout_s:g} s.")
    return left
