"""URL fetching refuses server-side request forgery.

No packet leaves loopback: names resolve through a fake resolver, an autouse fence fails the test
on any connect beyond 127.0.0.1/::1 and on any name lookup of a non-literal host (so the HTTP
client provably never resolves a name itself), and served files come from tiny asyncio servers
on 127.0.0.1 with an ephemeral port.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ipaddress
import shutil
import socket
import ssl
import subprocess
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from docshelf.config import Settings
from docshelf.fetch import (
    Fetched,
    Fetcher,
    check_url,
    parse_allowed_hosts,
    refusal_reason,
    system_resolver,
)
from docshelf.kit.errors import BadRequest

LOOPBACK = frozenset({"127.0.0.1", "::1"})
NOTHING: frozenset[str] = frozenset()

# --- the fence -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Hosts of every socket connect in the test. Anything beyond loopback fails the test."""
    seen: list[str] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = str(address[0]) if isinstance(address, tuple) else str(address)
        seen.append(host)
        if host not in LOOPBACK:
            raise AssertionError(f"the test tried to connect beyond loopback: {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        raise AssertionError(f"unexpected connect_ex({address!r})")

    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                raise AssertionError(f"the test tried to resolve {name!r}") from None
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return seen


class FakeResolver:
    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table = table or {}
        self.asked: list[str] = []

    async def __call__(self, host: str, /) -> list[str]:
        self.asked.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(self.table[host])


PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"

# --- a loopback HTTP server ------------------------------------------------------------------

Route = bytes | Callable[[asyncio.StreamWriter], Awaitable[None]]
REASONS = {200: "OK", 301: "Moved", 302: "Found", 303: "See Other", 307: "Temporary", 308: "Perm"}


def http_response(
    status: int = 200, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    fields = {"Content-Length": str(len(body)), "Connection": "close", **(headers or {})}
    head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    head += [f"{name}: {value}" for name, value in fields.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def redirect(location: str, status: int = 302) -> bytes:
    return http_response(status, headers={"Location": location})


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


class LoopbackServer:
    """Answers each request on 127.0.0.1 with a canned response or a coroutine."""

    def __init__(self, routes: dict[str, Route], tls: ssl.SSLContext | None) -> None:
        self.routes = routes
        self.requests: list[Seen] = []
        self._tls = tls
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{'https' if self._tls else 'http'}://{host}:{self.port}{path}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self._tls)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            path = head[0].split(" ")[1]
            headers = {}
            for line in head[1:]:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            self.requests.append(Seen(path, headers))
            route = self.routes.get(path, http_response(404))
            if isinstance(route, bytes):
                writer.write(route)
                await writer.drain()
            else:
                await route(writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the client hung up, as it does when it refuses a response
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._tasks.discard(task)


Serve = Callable[..., Awaitable[LoopbackServer]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[LoopbackServer] = []

    async def start(routes: dict[str, Route], tls: ssl.SSLContext | None = None) -> LoopbackServer:
        server = LoopbackServer(routes, tls)
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


DOC = b"# Hello\n\nA served file.\n"
DOC_ROUTE: dict[str, Route] = {
    "/doc.md": http_response(200, DOC, {"Content-Type": "text/markdown; charset=utf-8"})
}


def fetcher(
    allowed: Iterable[str] = ("127.0.0.1",), resolver: FakeResolver | None = None, **options: Any
) -> Fetcher:
    return Fetcher(allowed_hosts=allowed, resolver=resolver or FakeResolver(), **options)


async def refused(
    url: str, resolver: FakeResolver | None = None, allowed: Iterable[str] = ()
) -> str:
    with pytest.raises(BadRequest) as caught:
        await check_url(url, resolver=resolver or FakeResolver(), allowed_hosts=frozenset(allowed))
    assert caught.value.status == 400
    return caught.value.message


# --- the guard: schemes, credentials, malformed URLs -------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "scheme 'file' is not allowed"),
        ("ftp://docs.example.com/a", "scheme 'ftp' is not allowed"),
        ("gopher://docs.example.com:70/_x", "scheme 'gopher' is not allowed"),
        ("data:text/plain,hello", "scheme 'data' is not allowed"),
        ("javascript:alert(1)", "scheme 'javascript' is not allowed"),
        ("docs.example.com/a", "has no scheme"),
        ("//docs.example.com/a", "has no scheme"),
        ("", "has no scheme"),
    ],
)
async def test_only_http_and_https_are_fetched(url: str, reason: str) -> None:
    assert reason in await refused(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://user@docs.example.com/",
        "https://user:secret@docs.example.com/",
        "http://:secret@docs.example.com/",
        "http://127.0.0.1%2f@docs.example.com/",
    ],
)
async def test_credentials_in_the_url_are_refused(url: str) -> None:
    resolver = FakeResolver({"docs.example.com": [PUBLIC_V4]})
    assert "user names and passwords" in await refused(url, resolver)
    assert resolver.asked == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http:///a", "has no host"),
        ("http:\\\\evil.test\\a", "has no host"),
        ("http://a b/", "not a valid host name"),
        ("http://%31%32%37.0.0.1/", "not a canonical IPv4 address"),
        ("http://docs.example.com:99999/", "port 99999 is out of range"),
        ("http://[::1/", "invalid URL"),
        ("http://exa$mple.com/", "not a valid host name"),
    ],
)
async def test_malformed_urls_are_refused(url: str, reason: str) -> None:
    assert reason in await refused(url)


# --- the guard: addresses --------------------------------------------------------------------

REFUSED_ADDRESSES = [
    ("127.0.0.1", "a loopback address"),
    ("127.255.255.254", "a loopback address"),
    ("10.0.0.5", "a private address"),
    ("172.16.0.1", "a private address"),
    ("172.31.255.255", "a private address"),
    ("192.168.1.1", "a private address"),
    ("169.254.169.254", "a link-local address"),
    ("169.254.0.1", "a link-local address"),
    ("100.64.0.1", "a carrier-grade NAT address"),
    ("100.127.255.254", "a carrier-grade NAT address"),
    ("224.0.0.1", "a multicast address"),
    ("239.255.255.250", "a multicast address"),
    ("0.0.0.0", "an unspecified address"),
    ("0.1.2.3", "a reserved address"),
    ("240.0.0.1", "a reserved address"),
    ("255.255.255.255", "a reserved address"),
    ("192.0.2.10", "not a public address"),  # documentation range, via the is_global fallback
    ("198.18.0.1", "not a public address"),  # benchmarking range
    ("::1", "a loopback address"),
    ("::", "an unspecified address"),
    ("fc00::1", "a private address"),
    ("fd12:3456:789a::1", "a private address"),
    ("fec0::1", "a private address"),
    ("fe80::1", "a link-local address"),
    ("febf::1", "a link-local address"),
    ("ff02::1", "a multicast address"),
    ("ff0e::1", "a multicast address"),
    ("64:ff9b:1::a00:5", "a private address"),
    ("::7f00:1", "a reserved address"),  # IPv4-compatible ::127.0.0.1
    ("::ffff:127.0.0.1", "an IPv4-mapped address embedding a loopback address"),
    ("::ffff:10.0.0.5", "an IPv4-mapped address embedding a private address"),
    ("::ffff:169.254.169.254", "an IPv4-mapped address embedding a link-local address"),
    ("64:ff9b::10.0.0.5", "a NAT64 address embedding a private address"),
    ("64:ff9b::7f00:1", "a NAT64 address embedding a loopback address"),
    ("64:ff9b::a9fe:a9fe", "a NAT64 address embedding a link-local address"),
    ("2002:a00:5::1", "a 6to4 address embedding a private address"),
    ("2002:7f00:1::", "a 6to4 address embedding a loopback address"),
    ("2002:6440:1::", "a 6to4 address embedding a carrier-grade NAT address"),
    ("2001:db8::1", "not a public address"),
    ("2001::1", "not a public address"),  # Teredo
    ("4000::1", "a reserved address"),
]


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@pytest.mark.parametrize(("address", "reason"), REFUSED_ADDRESSES)
async def test_literal_addresses_outside_the_public_internet_are_refused(
    address: str, reason: str
) -> None:
    resolver = FakeResolver()
    message = await refused(f"http://{_url_host(address)}/a", resolver)
    assert message == f"URL refused: {address} is {reason}"
    assert resolver.asked == []


@pytest.mark.parametrize(("address", "reason"), REFUSED_ADDRESSES)
async def test_names_resolving_outside_the_public_internet_are_refused(
    address: str, reason: str
) -> None:
    message = await refused("https://evil.test/a", FakeResolver({"evil.test": [address]}))
    # The resolved address is not echoed: that would let callers map internal DNS.
    assert message == f"URL refused: evil.test resolves to {reason}"


@pytest.mark.parametrize(
    "answers",
    [
        [PUBLIC_V4, "10.0.0.5"],
        ["10.0.0.5", PUBLIC_V4],
        [PUBLIC_V6, PUBLIC_V4, "::1"],
        [PUBLIC_V4, "::ffff:169.254.169.254"],
    ],
)
async def test_one_refused_address_among_public_ones_refuses_the_url(answers: list[str]) -> None:
    message = await refused("http://mixed.test/", FakeResolver({"mixed.test": answers}))
    assert message.startswith("URL refused: mixed.test resolves to ")


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",  # decimal 127.0.0.1
        "0x7f000001",  # hex
        "0X7F000001",
        "0177.0.0.1",  # octal
        "0177.0.0.01",
        "127.1",  # short forms
        "127.0.1",
        "0x7f.0.0.1",
        "0x7f.1",
        "017700000001",
        "1.2.3.4.5",
        "10.0.0.0x5",
        "3627732514",  # decimal form of a public address: refused too, no guessing
        "0x",
    ],
)
async def test_non_canonical_numeric_hosts_are_refused_without_resolving(host: str) -> None:
    resolver = FakeResolver({host: [PUBLIC_V4]})
    # Even with loopback allowed: the form is refused, not decoded.
    message = await refused(f"http://{host}/", resolver, allowed=["127.0.0.1", "10.0.0.5"])
    assert "not a canonical IPv4 address" in message or "invalid URL" in message
    assert resolver.asked == []


async def test_a_trailing_dot_does_not_disguise_an_address() -> None:
    assert await refused("http://127.0.0.1./") == "URL refused: 127.0.0.1 is a loopback address"


async def test_ipv6_zone_identifiers_are_refused() -> None:
    assert "zone identifiers" in await refused("http://[fe80::1%25eth0]/")
    resolver = FakeResolver({"zone.test": ["fe80::1%eth0"]})
    assert "scoped" in await refused("http://zone.test/", resolver, allowed=["zone.test"])


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        (None, "could not resolve unknown.test"),
        ([], "unknown.test does not resolve to any address"),
        (["not-an-address"], "unknown.test resolves to an invalid address"),
    ],
)
async def test_names_that_do_not_resolve_are_refused(
    answers: list[str] | None, reason: str
) -> None:
    resolver = FakeResolver({} if answers is None else {"unknown.test": answers})
    assert await refused("http://unknown.test/", resolver) == f"URL refused: {reason}"


async def test_public_names_give_one_pinned_target_per_address() -> None:
    resolver = FakeResolver({"docs.example.com": [PUBLIC_V4, PUBLIC_V6, PUBLIC_V4]})
    targets = await check_url(
        "https://Docs.Example.com./guide?x=1", resolver=resolver, allowed_hosts=NOTHING
    )
    assert [str(t.address) for t in targets] == [PUBLIC_V4, PUBLIC_V6]
    assert {(t.host, t.port, t.host_is_ip) for t in targets} == {("docs.example.com", 443, False)}
    assert [str(t.pinned_url) for t in targets] == [
        f"https://{PUBLIC_V4}/guide?x=1",
        f"https://[{PUBLIC_V6}]/guide?x=1",
    ]
    assert resolver.asked == ["docs.example.com"]


@pytest.mark.parametrize(
    "host",
    [
        PUBLIC_V4,
        f"[{PUBLIC_V6}]",
        "[::ffff:93.184.216.34]",  # IPv4-mapped, DNS64 and 6to4 forms of a public address
        "[64:ff9b::5db8:d822]",
        "[2002:5db8:d822::1]",
    ],
)
async def test_public_literals_pass_without_resolving(host: str) -> None:
    resolver = FakeResolver()
    [target] = await check_url(f"http://{host}:8080/", resolver=resolver, allowed_hosts=NOTHING)
    assert target.host_is_ip and target.port == 8080
    assert target.host == str(target.address)
    assert resolver.asked == []


@pytest.mark.parametrize("address", [PUBLIC_V4, PUBLIC_V6, "8.8.8.8", "2a00:1450:4001::200e"])
def test_public_addresses_have_no_refusal_reason(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) is None


async def test_the_allowance_exempts_listed_names_and_addresses_only() -> None:
    resolver = FakeResolver(
        {
            "files.test": ["127.0.0.1", "::1"],
            "local.test": ["127.0.0.1"],
            "both.test": ["127.0.0.1", "10.0.0.5"],
        }
    )
    allowed = parse_allowed_hosts("FILES.test., 127.0.0.1")

    async def addresses(url: str) -> list[str]:
        targets = await check_url(url, resolver=resolver, allowed_hosts=allowed)
        return [str(t.address) for t in targets]

    # A listed name exempts all its addresses; a listed address exempts itself, by any name.
    assert await addresses("http://files.test:8000/") == ["127.0.0.1", "::1"]
    assert await addresses("http://local.test/") == ["127.0.0.1"]
    assert await addresses("http://127.0.0.1:9/") == ["127.0.0.1"]
    assert "resolves to a private address" in await refused("http://both.test/", resolver, allowed)
    assert "::1 is a loopback" in await refused("http://[::1]/", resolver, allowed)
    assert "scheme 'file'" in await refused("file://files.test/etc/passwd", resolver, allowed)


def test_the_allowance_setting_is_normalized_and_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_allowed_hosts("") == NOTHING
    assert parse_allowed_hosts(" 127.0.0.1 , Files.Test. ,[::1], ,0:0::1,bücher.de") == {
        "127.0.0.1",
        "files.test",
        "::1",
        "xn--bcher-kva.de",
    }
    for bad in ["files.test:8000", "http://files.test", "user@files.test", "127.1", "a b"]:
        with pytest.raises(ValueError, match="invalid host"):
            parse_allowed_hosts(bad)
    monkeypatch.setenv("DOCSHELF_FETCH_ALLOWED_HOSTS", "127.0.0.1,files.test")
    assert Settings().fetch_allowed_hosts == "127.0.0.1,files.test"
    monkeypatch.delenv("DOCSHELF_FETCH_ALLOWED_HOSTS")
    assert Settings().fetch_allowed_hosts == ""


async def test_the_system_resolver_answers_literals_without_dns() -> None:
    assert await system_resolver("127.0.0.1") == ["127.0.0.1"]


# --- the fetcher: refusals happen before any connection ------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.test/",
        "http://mixed.test/",
        "http://10.0.0.5/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://2130706433/",
        "http://127.1/",
        "http://localhost/",
        "file:///etc/passwd",
        "http://user@docs.example.com/",
    ],
)
async def test_refused_urls_are_never_connected_to(url: str, connects: list[str]) -> None:
    resolver = FakeResolver(
        {
            "evil.test": ["10.0.0.5"],
            "mixed.test": [PUBLIC_V4, "192.168.0.1"],
            "localhost": ["127.0.0.1", "::1"],
        }
    )
    with pytest.raises(BadRequest, match=r"^URL refused: "):
        await fetcher(allowed=(), resolver=resolver).fetch(url)
    assert connects == []


# --- the fetcher against loopback servers ----------------------------------------------------


async def test_a_file_is_fetched_from_an_allowed_loopback_server(
    serve: Serve, connects: list[str]
) -> None:
    server = await serve(DOC_ROUTE)
    fetched = await fetcher().fetch(server.url("/doc.md"))
    assert fetched.url == server.url("/doc.md")
    assert fetched.status == 200
    assert fetched.content_type == "text/markdown; charset=utf-8"
    assert fetched.body == DOC
    [seen] = server.requests
    assert seen.headers["host"] == f"127.0.0.1:{server.port}"
    assert seen.headers["accept-encoding"] == "gzip, deflate"
    assert connects == ["127.0.0.1"]


async def test_loopback_is_refused_unless_allowed(serve: Serve, connects: list[str]) -> None:
    server = await serve(DOC_ROUTE)
    with pytest.raises(BadRequest, match=r"127\.0\.0\.1 is a loopback address"):
        await fetcher(allowed=()).fetch(server.url("/doc.md"))
    assert connects == []


async def test_the_connection_is_pinned_to_the_checked_address(
    serve: Serve, connects: list[str]
) -> None:
    server = await serve(DOC_ROUTE)
    resolver = FakeResolver({"files.test": ["127.0.0.1"]})
    fetched = await fetcher(["files.test"], resolver).fetch(server.url("/doc.md", "files.test"))
    # One lookup, by the guard; the client connected to the checked IP (the fence refuses any
    # lookup of "files.test" by anyone else) and still told the server the name.
    assert resolver.asked == ["files.test"]
    assert connects == ["127.0.0.1"]
    assert server.requests[0].headers["host"] == f"files.test:{server.port}"
    assert fetched.url == f"http://files.test:{server.port}/doc.md"
    assert fetched.body == DOC


async def test_the_next_checked_address_is_tried_when_one_does_not_connect(
    serve: Serve, connects: list[str]
) -> None:
    server = await serve(DOC_ROUTE)
    resolver = FakeResolver({"files.test": ["::1", "127.0.0.1"]})  # nothing listens on ::1
    fetched = await fetcher(["files.test"], resolver).fetch(server.url("/doc.md", "files.test"))
    assert fetched.body == DOC
    assert connects[-1] == "127.0.0.1"


async def test_a_closed_port_is_a_clear_failure() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BadRequest, match=r"^URL fetch failed: could not connect to 127\.0\.0\.1"):
        await fetcher().fetch(f"http://127.0.0.1:{port}/")


@pytest.mark.parametrize("status", [400, 404, 500, 503, 304])
async def test_a_final_status_outside_2xx_is_refused(serve: Serve, status: int) -> None:
    server = await serve({"/x": http_response(status, b"nope")})
    with pytest.raises(BadRequest, match=f"the server answered HTTP {status}$"):
        await fetcher().fetch(server.url("/x"))


# --- redirects -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirects_are_followed(serve: Serve, status: int) -> None:
    server = await serve({**DOC_ROUTE, "/old": redirect("/doc.md", status)})
    fetched = await fetcher().fetch(server.url("/old"))
    assert fetched.url == server.url("/doc.md")
    assert fetched.body == DOC
    assert [seen.path for seen in server.requests] == ["/old", "/doc.md"]


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://evil.test/secret", "evil.test resolves to a private address"),
        ("http://metadata.test/latest", "metadata.test resolves to a link-local address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://[::ffff:10.0.0.5]/", "embedding a private address"),
        ("http://0x7f000001/", "not a canonical IPv4 address"),
        ("file:///etc/passwd", "scheme 'file' is not allowed"),
        ("gopher://evil.test/", "scheme 'gopher' is not allowed"),
    ],
)
async def test_redirects_are_checked_like_the_first_url(
    serve: Serve, connects: list[str], location: str, reason: str
) -> None:
    server = await serve({"/go": redirect(location)})
    resolver = FakeResolver({"evil.test": ["10.0.0.5"], "metadata.test": ["169.254.169.254"]})
    with pytest.raises(BadRequest, match=f"^URL refused: .*{reason}"):
        await fetcher(["127.0.0.1"], resolver).fetch(server.url("/go"))
    # Only the allowed loopback server was ever connected to.
    assert connects == ["127.0.0.1"]


async def test_a_redirect_from_an_allowed_name_to_loopback_is_refused(
    serve: Serve, connects: list[str]
) -> None:
    server = await serve({**DOC_ROUTE, "/go": b""})
    server.routes["/go"] = redirect(server.url("/doc.md"))  # same server, by address
    resolver = FakeResolver({"files.test": ["127.0.0.1"]})
    with pytest.raises(BadRequest, match=r"^URL refused: 127\.0\.0\.1 is a loopback address$"):
        await fetcher(["files.test"], resolver).fetch(server.url("/go", "files.test"))
    assert connects == ["127.0.0.1"]


async def test_redirect_targets_are_resolved_again(serve: Serve) -> None:
    server = await serve({**DOC_ROUTE, "/go": b""})
    server.routes["/go"] = redirect(server.url("/doc.md", "other.test"))
    resolver = FakeResolver({"files.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    fetched = await fetcher(["files.test", "other.test"], resolver).fetch(
        server.url("/go", "files.test")
    )
    assert resolver.asked == ["files.test", "other.test"]
    assert fetched.url == server.url("/doc.md", "other.test")
    assert server.requests[1].headers["host"] == f"other.test:{server.port}"


async def test_redirect_loops_stop_at_the_cap(serve: Serve) -> None:
    server = await serve({"/loop": redirect("/loop")})
    with pytest.raises(BadRequest, match=r"^URL refused: more than 5 redirects$"):
        await fetcher().fetch(server.url("/loop"))
    assert len(server.requests) == 6  # the first request and five redirects


async def test_the_redirect_cap_is_exact(serve: Serve) -> None:
    routes: dict[str, Route] = {**DOC_ROUTE, "/r0": redirect("/r1"), "/r1": redirect("/r2")}
    server = await serve({**routes, "/r2": redirect("/doc.md")})
    assert (await fetcher(max_redirects=3).fetch(server.url("/r0"))).body == DOC
    assert (await fetcher(max_redirects=2).fetch(server.url("/r1"))).body == DOC
    with pytest.raises(BadRequest, match="more than 2 redirects"):
        await fetcher(max_redirects=2).fetch(server.url("/r0"))


async def test_a_redirect_without_location_is_a_failed_status(serve: Serve) -> None:
    server = await serve({"/x": http_response(302)})
    with pytest.raises(BadRequest, match="HTTP 302"):
        await fetcher().fetch(server.url("/x"))


# --- size ------------------------------------------------------------------------------------


async def endless_body(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
    while True:  # until the client hangs up
        writer.write(b"x" * 65536)
        await writer.drain()
        await asyncio.sleep(0)


async def test_the_body_is_capped_while_streaming(serve: Serve) -> None:
    server = await serve({"/endless": endless_body})
    with pytest.raises(BadRequest, match=r"^URL refused: response larger than 100000 bytes$"):
        await fetcher(max_bytes=100_000, timeout=5).fetch(server.url("/endless"))


async def test_a_declared_length_over_the_cap_is_refused_before_reading(serve: Serve) -> None:
    server = await serve({"/big": http_response(200, b"", {"Content-Length": "1048577"})})
    with pytest.raises(BadRequest, match=r"^URL refused: response larger than 1048576 bytes$"):
        await fetcher(max_bytes=1048576).fetch(server.url("/big"))


async def test_a_body_exactly_at_the_cap_is_accepted(serve: Serve) -> None:
    body = b"y" * 4096
    server = await serve({"/x": http_response(200, body)})
    assert (await fetcher(max_bytes=4096).fetch(server.url("/x"))).body == body
    with pytest.raises(BadRequest, match="larger than 4095 bytes"):
        await fetcher(max_bytes=4095).fetch(server.url("/x"))


async def test_a_compression_bomb_is_capped_by_its_decompressed_size(serve: Serve) -> None:
    bomb = gzip.compress(b"\0" * (16 * 1024 * 1024), 9)
    assert len(bomb) < 64 * 1024  # small on the wire, 16 MiB inflated
    server = await serve({"/bomb": http_response(200, bomb, {"Content-Encoding": "gzip"})})
    with pytest.raises(
        BadRequest, match=r"^URL refused: response larger than 1048576 bytes when decompressed$"
    ):
        await fetcher(max_bytes=1048576).fetch(server.url("/bomb"))


@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [
        ("gzip", gzip.compress(DOC)),
        ("x-gzip", gzip.compress(DOC)),
        ("deflate", zlib.compress(DOC)),
        ("deflate", zlib.compress(DOC, wbits=-zlib.MAX_WBITS)),  # raw deflate, seen in the wild
        ("identity", DOC),
        ("GZIP, identity", gzip.compress(DOC)),
    ],
)
async def test_compressed_bodies_are_decoded(serve: Serve, encoding: str, encoded: bytes) -> None:
    server = await serve({"/x": http_response(200, encoded, {"Content-Encoding": encoding})})
    assert (await fetcher().fetch(server.url("/x"))).body == DOC


async def test_a_compressed_body_exactly_at_the_cap_is_accepted(serve: Serve) -> None:
    body = bytes(range(256)) * 64
    server = await serve(
        {"/x": http_response(200, gzip.compress(body), {"Content-Encoding": "gzip"})}
    )
    assert (await fetcher(max_bytes=len(body)).fetch(server.url("/x"))).body == body
    with pytest.raises(BadRequest, match="when decompressed"):
        await fetcher(max_bytes=len(body) - 1).fetch(server.url("/x"))


@pytest.mark.parametrize(
    ("encoding", "body", "reason"),
    [
        ("br", b"\x8b\x03\x80hello\x03", "unsupported Content-Encoding 'br'"),
        ("gzip, gzip", gzip.compress(gzip.compress(DOC)), "unsupported Content-Encoding"),
        ("compress", b"\x1f\x9d", "unsupported Content-Encoding 'compress'"),
        ("gzip", b"not gzip at all", "not valid gzip data"),
    ],
)
async def test_undecodable_bodies_are_refused(
    serve: Serve, encoding: str, body: bytes, reason: str
) -> None:
    server = await serve({"/x": http_response(200, body, {"Content-Encoding": encoding})})
    with pytest.raises(BadRequest, match=reason):
        await fetcher().fetch(server.url("/x"))


# --- time ------------------------------------------------------------------------------------


async def stall(writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(30)


async def drip(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n")
    while True:  # each read makes progress, so only a total deadline ends this
        writer.write(b"z")
        await writer.drain()
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("route", [stall, drip])
async def test_a_stalling_server_hits_the_total_deadline(serve: Serve, route: Route) -> None:
    server = await serve({"/slow": route})
    started = time.monotonic()
    with pytest.raises(BadRequest, match=r"^URL fetch timed out after 0\.5 s$"):
        await fetcher(timeout=0.5).fetch(server.url("/slow"))
    assert 0.4 < time.monotonic() - started < 3


async def test_a_slow_resolver_hits_the_deadline_too() -> None:
    async def slow(host: str, /) -> list[str]:
        await asyncio.sleep(30)
        return [PUBLIC_V4]

    with pytest.raises(BadRequest, match=r"timed out after 0\.2 s$"):
        await Fetcher(resolver=slow, timeout=0.2).fetch("http://docs.example.com/")


# --- https: pinned to the checked address, verified against the name ---------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            openssl,
            *("req", "-x509", "-nodes", "-days", "2", "-subj", "/CN=docs.test"),
            *("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-keyout", str(key), "-out", str(cert)),
            *("-addext", "subjectAltName=DNS:docs.test"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_https_is_pinned_with_the_name_used_for_sni_and_verification(
    serve: Serve, connects: list[str], certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    sni: list[str | None] = []
    server_tls.sni_callback = lambda _sock, name, _ctx: sni.append(name)
    server = await serve(DOC_ROUTE, server_tls)
    client_tls = ssl.create_default_context(cafile=str(cert))
    resolver = FakeResolver({"docs.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    fetch = fetcher(["docs.test", "other.test"], resolver, ssl_context=client_tls).fetch

    fetched = await fetch(server.url("/doc.md", "docs.test"))
    assert fetched.body == DOC
    assert fetched.url == f"https://docs.test:{server.port}/doc.md"
    assert sni == ["docs.test"]
    assert server.requests[0].headers["host"] == f"docs.test:{server.port}"
    assert connects == ["127.0.0.1"]

    # Same address, other name: the certificate is checked against the name, so this fails.
    with pytest.raises(
        BadRequest, match=r"could not connect to other\.test .*CERTIFICATE_VERIFY_FAILED"
    ):
        await fetch(server.url("/doc.md", "other.test"))


async def test_the_fetcher_reads_the_allowance_from_settings(serve: Serve) -> None:
    server = await serve(DOC_ROUTE)
    settings = Settings(fetch_allowed_hosts=" 127.0.0.1 , files.test ")
    fetched = await Fetcher.from_settings(settings, resolver=FakeResolver()).fetch(
        server.url("/doc.md")
    )
    assert fetched.body == DOC
    with pytest.raises(BadRequest, match="loopback"):
        await Fetcher.from_settings(
            Settings(fetch_allowed_hosts=""), resolver=FakeResolver()
        ).fetch(server.url("/doc.md"))


async def test_a_protocol_request_gets_any_final_answer_with_its_body(serve: Serve) -> None:
    server = await serve(
        {"/refs": http_response(401, b"who are you?", {"Content-Type": "text/plain"})}
    )
    fetched = await fetcher().request("GET", server.url("/refs"), None, {"Git-Protocol": "v2"})
    assert fetched == Fetched(server.url("/refs"), 401, "text/plain", b"who are you?")
    assert server.requests[0].headers["git-protocol"] == "v2"


async def test_credentials_follow_a_redirect_to_the_same_origin_only(serve: Serve) -> None:
    server = await serve({**DOC_ROUTE, "/same": redirect("/doc.md"), "/away": b""})
    server.routes["/away"] = redirect(server.url("/doc.md", "other.test"))
    resolver = FakeResolver({"other.test": ["127.0.0.1"]})
    basic = {"Authorization": "Basic d3JpdGVyOnNlY3JldA=="}
    client = fetcher(["127.0.0.1", "other.test"], resolver)
    await client.request("GET", server.url("/same"), None, basic)
    await client.request("GET", server.url("/away"), None, basic)
    assert [(seen.path, seen.headers.get("authorization")) for seen in server.requests] == [
        ("/same", basic["Authorization"]),
        ("/doc.md", basic["Authorization"]),
        ("/away", basic["Authorization"]),
        ("/doc.md", None),
    ]
