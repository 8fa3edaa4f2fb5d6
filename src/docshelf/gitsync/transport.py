"""dulwich's HTTP git client over the SSRF-guarded fetcher.

dulwich's client is blocking code that asks a urllib3-style pool manager for each request; it
takes any object with that face (`pool_manager=`). `GuardedPool` is one: every request, and
each redirect of it, is made by `fetch.Fetcher` on the event loop (every hop's address checked,
the connection pinned to it, size and time bounded), while the client runs in a thread.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterable, Mapping
from typing import Any, cast
from urllib.parse import urlsplit

from dulwich.client import HttpGitClient

from docshelf.fetch import Fetched, Fetcher


def _origin(url: str) -> str:
    # urllib, not httpx: the API process loads httpx only on its first fetch.
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


class _Headers:
    """An answer's headers as the client reads them (case-insensitive `get`)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {k.lower(): v for k, v in values.items()}

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._values.get(name.lower(), default)


class _Response:
    """A fetched answer with the face of a urllib3 response that dulwich reads."""

    def __init__(self, fetched: Fetched) -> None:
        self.status = fetched.status
        self.headers = _Headers(
            {"content-type": fetched.content_type} if fetched.content_type else {}
        )
        self._url = fetched.url
        self._body = io.BytesIO(fetched.body)
        # Set by the client on the answer it is handed.
        self.content_type: str | None = None
        self.redirect_location = ""

    def geturl(self) -> str:
        return self._url

    def read(self, size: int | None = -1) -> bytes:
        return self._body.read(-1 if size is None else size)

    def close(self) -> None:
        self._body.close()


class GuardedPool:
    """The pool manager dulwich's client is given: requests made by the fetcher, on `loop`
    (the client must run in another thread)."""

    def __init__(self, fetcher: Fetcher, loop: asyncio.AbstractEventLoop, origin: str) -> None:
        self._fetcher = fetcher
        self._loop = loop
        self._origin = origin
        # Headers the client adds to every request (it reads and updates them).
        self.headers: dict[str, str] = {}

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | Iterable[bytes] | None = None,
        **_options: Any,  # preload_content, timeout: the fetcher bounds its own reads
    ) -> _Response:
        data = body if body is None or isinstance(body, bytes) else b"".join(body)
        sent = {**self.headers, **(headers or {})}
        if _origin(url) != self._origin:
            # Wherever the client goes next (a redirect it followed), the link's credentials
            # stay with the link's own host, whatever the dulwich release does with them.
            sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
        made = self._fetcher.request(method, url, data, sent)
        return _Response(asyncio.run_coroutine_threadsafe(made, self._loop).result())


def client(
    url: str,
    fetcher: Fetcher,
    loop: asyncio.AbstractEventLoop,
    username: str | None,
    password: str | None,
) -> HttpGitClient:
    """A client of the repository at `url` (its credentials sent to its origin only)."""
    if password is not None and username is None:
        # Hosts take a token as the password of any user name (GitHub, GitLab, Gitea).
        username = "git"
    # Typed as urllib3's pool manager; the client uses only `headers` and `request`.
    pool = cast(Any, GuardedPool(fetcher, loop, _origin(url)))
    return HttpGitClient(url, pool_manager=pool, username=username, password=password)
