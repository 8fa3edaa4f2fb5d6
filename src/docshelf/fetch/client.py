"""Fetch a user-given URL without letting it reach anything the guard refuses.

Every hop (the first request and each redirect) goes through `check_url`, and the request is sent
to the address that was checked: the URL's host is replaced by that IP, the original host travels
in the Host header, and for https the original name is used for SNI and certificate verification
(httpcore's `sni_hostname` request extension). The HTTP client therefore never resolves a name
itself, so a DNS answer that changes between check and connect (rebinding) cannot redirect it.

Each attempt gets its own client: a pooled connection, verified for one name and keyed only by
IP, must never be reused for another name. Environment proxies are ignored (`trust_env=False`),
since a proxy would make the connection to an unchecked address on our behalf.

Limits: one deadline covers the whole fetch (DNS, connects, redirects, body); the body is
streamed and reading stops once it exceeds `max_bytes`, counted both on the wire and after
Content-Encoding decoding, which is done here with a bounded output so a compression bomb is
never inflated in memory.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docshelf.config import Settings
from docshelf.fetch.guard import (
    Resolver,
    Target,
    check_url,
    normalize_allowed_hosts,
    parse_allowed_hosts,
    system_resolver,
)
from docshelf.kit.errors import BadRequest

if TYPE_CHECKING:
    # httpx is imported where a fetch happens: on import it also loads its command line's
    # libraries when they are installed (click, rich, Pygments), which no API request needs.
    import httpx

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "docshelf-fetch"

# Only codings this module can decode with a bounded output are offered. Sent explicitly because
# httpx would otherwise also offer br/zstd as soon as those packages happen to be installed.
ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class FetchTimeout(BadRequest):
    """The fetch ran past its deadline (callers that report timeouts apart, like OpenAPI
    processing's FETCH_TIMEOUT, tell it from other refusals by type)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    # The final URL (after redirects), with its host name, not the pinned address.
    url: str
    status: int
    content_type: str | None
    # Decoded (Content-Encoding removed), at most max_bytes long.
    body: bytes


@dataclass(frozen=True, slots=True)
class _Send:
    method: str
    body: bytes | None
    headers: dict[str, str]
    # The final answer's body is read whatever its status (a protocol client judges it).
    any_status: bool = False


_GET = _Send("GET", None, {})
# The redirects that keep a POST a POST, with its body (RFC 9110, 15.4).
_SAME_METHOD_REDIRECTS = frozenset({307, 308})


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    location: str | None
    content_type: str | None
    body: bytes


class Fetcher:
    """Fetches user-given URLs with GET; every refusal or failure is a BadRequest."""

    def __init__(
        self,
        *,
        allowed_hosts: Iterable[str] = (),
        resolver: Resolver = system_resolver,
        max_bytes: int = DEFAULT_MAX_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if max_bytes < 1 or timeout <= 0 or max_redirects < 0:
            raise ValueError("max_bytes and timeout must be positive, max_redirects >= 0")
        self._allowed = normalize_allowed_hosts(allowed_hosts)
        self._resolver = resolver
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._max_redirects = max_redirects
        # None: the shared default, made on the first fetch (it imports httpx, and with it
        # click, rich and Pygments, ~8 MB that an API process which never fetches would keep).
        self._ssl_context = ssl_context

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        resolver: Resolver = system_resolver,
        max_bytes: int = DEFAULT_MAX_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
    ) -> Fetcher:
        return cls(
            allowed_hosts=parse_allowed_hosts(settings.fetch_allowed_hosts),
            resolver=resolver,
            max_bytes=max_bytes,
            timeout=timeout,
            max_redirects=max_redirects,
        )

    async def fetch(self, url: str) -> Fetched:
        return await self._within_deadline(url, _GET)

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Fetched:
        """POSTs `body` (a webhook delivery). Any final status is returned, for the caller to
        judge; redirects are followed only when they keep the method and body (307, 308), each
        hop checked like a GET's. Other redirects are the final answer."""
        return await self._within_deadline(url, _Send("POST", body, dict(headers)))

    async def request(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]
    ) -> Fetched:
        """A GET or POST whose final answer, body included, is returned whatever its status,
        for a protocol client to judge (git's smart HTTP). Redirects are followed as for
        `fetch` and `post`; credentials (`Authorization`) never follow one to another origin."""
        if method not in ("GET", "POST"):
            raise ValueError(f"unsupported method {method!r}")
        return await self._within_deadline(url, _Send(method, body, dict(headers), True))

    async def _within_deadline(self, url: str, send: _Send) -> Fetched:
        if self._ssl_context is None:
            # The process's first fetch: importing httpx and loading the CA bundle take ~0.5 s,
            # done in a thread rather than on the event loop, outside the fetch's own time.
            self._ssl_context = await asyncio.to_thread(_default_ssl_context)
        deadline = asyncio.timeout(self._timeout)
        try:
            async with deadline:
                return await self._follow(url, send)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise FetchTimeout(f"URL fetch timed out after {self._timeout:g} s") from None

    async def _follow(self, url: str, send: _Send) -> Fetched:
        current = url
        for _ in range(self._max_redirects + 1):
            # Re-resolved and re-checked on every hop: a public page may redirect inwards.
            targets = await check_url(current, resolver=self._resolver, allowed_hosts=self._allowed)
            answer = await self._exchange(targets, send)
            if answer.location is None:
                return Fetched(
                    url=str(targets[0].url),
                    status=answer.status,
                    content_type=answer.content_type,
                    body=answer.body,
                )
            current = _join(targets[0].url, answer.location)
            send = _across(send, targets[0].url, current)
        raise BadRequest(f"URL refused: more than {self._max_redirects} redirects")

    async def _exchange(self, targets: list[Target], send: _Send) -> _Answer:
        import httpx

        failure: httpx.HTTPError | None = None
        for target in targets:
            async with httpx.AsyncClient(
                verify=self._ssl_context or _default_ssl_context(),  # set by fetch()
                trust_env=False,
                follow_redirects=False,
                timeout=None,
            ) as client:
                try:
                    response = await client.send(_request(client, target, send), stream=True)
                except httpx.ConnectError as exc:
                    # Like any client, try the host's next (equally checked) address.
                    failure = exc
                    continue
                except httpx.HTTPError as exc:
                    raise BadRequest(f"URL fetch failed: {_describe(exc)}") from None
                try:
                    return await self._answer(response, send)
                except httpx.HTTPError as exc:
                    raise BadRequest(f"URL fetch failed: {_describe(exc)}") from None
                finally:
                    await response.aclose()
        detail = f" ({_describe(failure)})" if failure else ""
        raise BadRequest(f"URL fetch failed: could not connect to {targets[0].host}{detail}")

    async def _answer(self, response: httpx.Response, send: _Send) -> _Answer:
        status = response.status_code
        location = response.headers.get("location")
        content_type = response.headers.get("content-type")
        follow = REDIRECT_STATUSES if send.method == "GET" else _SAME_METHOD_REDIRECTS
        if status in follow and location:
            # The redirect's body is never read.
            return _Answer(status, location, content_type, b"")
        if send.any_status:
            return _Answer(status, None, content_type, await self._read_body(response))
        if send.method != "GET":
            # A POST's answer is its status: the body is never read.
            return _Answer(status, None, content_type, b"")
        if not 200 <= status < 300:
            raise BadRequest(f"URL fetch failed: the server answered HTTP {status}")
        return _Answer(status, None, content_type, await self._read_body(response))

    async def _read_body(self, response: httpx.Response) -> bytes:
        too_large = f"URL refused: response larger than {self._max_bytes} bytes"
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise BadRequest(too_large)
        decoder = _Decoder(_content_encoding(response.headers), self._max_bytes)
        wire = 0
        parts: list[bytes] = []
        # aiter_raw: bytes as sent (transfer coding removed, content coding kept), so both the
        # wire size and the decoded size are counted here, chunk by chunk.
        async for chunk in response.aiter_raw():
            wire += len(chunk)
            if wire > self._max_bytes:
                raise BadRequest(too_large)
            parts.append(decoder.feed(chunk))
        parts.append(decoder.finish())
        return b"".join(parts)


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    # Shared: loading the CA bundle is the expensive part of making a client, and the context
    # is never changed except for ALPN, which httpcore sets to the same value on every connect.
    import httpx

    return httpx.create_ssl_context()


def _request(client: httpx.AsyncClient, target: Target, send: _Send) -> httpx.Request:
    headers = {
        **send.headers,
        # The URL now names the IP; the server must still see the name the user asked for.
        "Host": target.url.netloc.decode("ascii"),
        "Accept": "*/*",
        "Accept-Encoding": ACCEPT_ENCODING,
        "User-Agent": USER_AGENT,
    }
    extensions: dict[str, str] = {}
    if target.url.scheme == "https" and not target.host_is_ip:
        # SNI and certificate verification against the name, not the pinned IP.
        extensions["sni_hostname"] = target.host
    return client.build_request(
        send.method,
        target.pinned_url,
        headers=headers,
        content=send.body,
        extensions=extensions,
    )


def _join(base: httpx.URL, location: str) -> str:
    import httpx

    try:
        return str(base.join(location))
    except httpx.InvalidURL:
        raise BadRequest("URL refused: the redirect location is not a valid URL") from None


def _across(send: _Send, base: httpx.URL, location: str) -> _Send:
    """What is sent to a redirect's location: without credentials when it is another origin."""
    import httpx

    target = httpx.URL(location)
    if (target.scheme, target.host, target.port) == (base.scheme, base.host, base.port):
        return send
    kept = {k: v for k, v in send.headers.items() if k.lower() != "authorization"}
    return _Send(send.method, send.body, kept, send.any_status)


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _content_encoding(headers: httpx.Headers) -> str:
    codings = [
        coding.strip().lower()
        for value in headers.get_list("content-encoding")
        for coding in value.split(",")
    ]
    codings = [coding for coding in codings if coding and coding != "identity"]
    if not codings:
        return "identity"
    if len(codings) == 1 and codings[0] in _WBITS:
        return codings[0]
    raise BadRequest(f"URL refused: unsupported Content-Encoding {', '.join(codings)!r}")


class _Decoder:
    """Content-Encoding decoding with a hard ceiling: inflation is asked for at most one byte
    more than the room left, so a bomb is detected after `limit + 1` bytes of output instead of
    being expanded in memory first (httpx's own decoders inflate a whole chunk at once)."""

    def __init__(self, encoding: str, limit: int) -> None:
        self._encoding = encoding
        self._limit = limit
        self._size = 0
        wbits = _WBITS.get(encoding)
        self._inflater = None if wbits is None else zlib.decompressobj(wbits)
        self._may_be_raw = encoding == "deflate"

    def feed(self, data: bytes) -> bytes:
        return self._count(data if self._inflater is None else self._inflate(data))

    def finish(self) -> bytes:
        return b"" if self._inflater is None else self._count(self._inflater.flush())

    def _inflate(self, data: bytes) -> bytes:
        assert self._inflater is not None
        room = self._limit - self._size
        try:
            # max_length = room + 1 (never 0, which would mean unlimited). Output shorter than
            # that means the input was used up; reaching it means the ceiling is exceeded.
            out = self._inflater.decompress(data, room + 1)
        except zlib.error:
            if not self._may_be_raw:
                raise BadRequest(
                    f"URL fetch failed: the response is not valid {self._encoding} data"
                ) from None
            # "deflate" is zlib-wrapped per RFC 9110 but some servers send raw deflate; browsers
            # and httpx retry raw when the first chunk does not parse, and so does this.
            self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            self._may_be_raw = False
            return self._inflate(data)
        self._may_be_raw = False
        return out

    def _count(self, out: bytes) -> bytes:
        self._size += len(out)
        if self._size > self._limit:
            raise BadRequest(
                f"URL refused: response larger than {self._limit} bytes when decompressed"
            )
        return out
