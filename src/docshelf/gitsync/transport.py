"""dulwich's HTTP git client over the SSRF-guarded fetcher.

dulwich's client is blocking code that asks a urllib3-style pool manager for each request; it
takes any object with that face (`pool_manager=`). `GuardedPool` is one: every request, and
each redirect of it, is made by `fetch.Fetcher` on the event loop (every hop's address checked,
the connection pinned to it, size and time bounded), while the client runs in a thread.

The pool also bounds the whole exchange, which the fetcher's own deadline (one request's) does
not: past the pool's deadline, or once `stop` was called by the side awaiting the thread (which
no longer waits for it), no request is made, the one under way is cancelled and no answer is
read further, so a thread left behind cannot push.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import threading
import time
from collections.abc import Callable, Iterable, Mapping
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

    def __init__(self, fetched: Fetched, check: Callable[[], None]) -> None:
        self._check = check
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
        self._check()
        return self._body.read(-1 if size is None else size)

    def close(self) -> None:
        self._body.close()


class Stopped(Exception):
    """The exchange was stopped: past its deadline, or given up by the side awaiting it."""


class GuardedPool:
    """The pool manager dulwich's client is given: requests made by the fetcher, on `loop`
    (the client must run in another thread), all of them within `seconds` of its making."""

    def __init__(
        self, fetcher: Fetcher, loop: asyncio.AbstractEventLoop, url: str, *, seconds: float
    ) -> None:
        self._fetcher = fetcher
        self._loop = loop
        self._origin = _origin(url)
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds
        self._stopped = threading.Event()
        # Guards `_pending` between the client's thread and the one calling `stop`.
        self._lock = threading.Lock()
        self._pending: concurrent.futures.Future[Fetched] | None = None
        # Headers the client adds to every request (it reads and updates them).
        self.headers: dict[str, str] = {}

    def stop(self) -> None:
        """From any thread: nothing more is sent or read; a request under way is cancelled."""
        with self._lock:
            self._stopped.set()
            pending = self._pending
        if pending is not None:
            pending.cancel()

    def _check(self) -> None:
        if self._stopped.is_set():
            raise Stopped("the sync was stopped before its exchange with the remote ended")
        if time.monotonic() >= self._deadline:
            raise self._late()

    def _late(self) -> Stopped:
        return Stopped(
            f"the exchange with the remote ran longer than {self._seconds:g} s and was stopped"
        )

    async def _bounded(
        self, method: str, url: str, data: bytes | None, sent: Mapping[str, str]
    ) -> Fetched:
        deadline = asyncio.timeout(self._deadline - time.monotonic())
        try:
            async with deadline:
                return await self._fetcher.request(method, url, data, sent)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise self._late() from None

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
        with self._lock:
            # Checked under the lock: a `stop` now or later cancels what is scheduled here.
            self._check()
            pending = asyncio.run_coroutine_threadsafe(
                self._bounded(method, url, data, sent), self._loop
            )
            self._pending = pending
        try:
            fetched = pending.result()
        except concurrent.futures.CancelledError:
            self._check()
            raise
        finally:
            with self._lock:
                self._pending = None
        return _Response(fetched, self._check)


def client(
    url: str, pool: GuardedPool, username: str | None, password: str | None
) -> HttpGitClient:
    """A client of the repository at `url` through `pool` (made for `url`: the credentials
    are sent to its origin only)."""
    if password is not None and username is None:
        # Hosts take a token as the password of any user name (GitHub, GitLab, Gitea).
        username = "git"
    # Typed as urllib3's pool manager; the client uses only `headers` and `request`.
    return HttpGitClient(url, pool_manager=cast(Any, pool), username=username, password=password)
