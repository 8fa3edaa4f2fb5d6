"""Per-token fixed-window rate limiting with GitBook-style X-RateLimit-* headers.

No request writes to the database for it. Counters live in this process's memory, where each
API process enforces its share of the limit, or in Redis (DOCSHELF_RATE_LIMIT_REDIS_URL), where
every process counts against one exact budget per token."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Protocol

from docshelf.kit.clock import clock
from docshelf.kit.errors import TooManyRequests

log = logging.getLogger("docshelf.ratelimit")


@dataclass(frozen=True, slots=True)
class Verdict:
    limit: int
    remaining: int
    reset: int  # epoch seconds when the window ends
    retry_after: int

    @property
    def allowed(self) -> bool:
        return self.remaining >= 0

    def _values(self) -> tuple[int, int, int]:
        return self.limit, max(self.remaining, 0), self.reset

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """`headers()` as ASGI header pairs, for the edge middleware's every answer."""
        values = self._values()
        return [(name, b"%d" % value) for name, value in zip(_RAW_NAMES, values, strict=True)]

    def headers(self) -> dict[str, str]:
        return {name: str(value) for name, value in zip(_NAMES, self._values(), strict=True)}


_NAMES = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
_RAW_NAMES = tuple(name.lower().encode() for name in _NAMES)


class StoreUnreachable(Exception):
    """The shared counter store did not answer."""


class SharedStorage(Protocol):
    """A counter store every API process reaches. `hit` raises StoreUnreachable when it does
    not answer."""

    async def hit(self, key: str, window: int, ttl: int) -> int: ...

    async def aclose(self) -> None: ...


_MAX_KEYS = 100_000


class MemoryStorage:
    """This process's counters: exact for one process, a share of the budget for several."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}

    def hit(self, key: str, window: int) -> int:
        current_window, count = self._counts.get(key, (window, 0))
        count = count + 1 if current_window == window else 1
        self._counts[key] = (window, count)
        if len(self._counts) > _MAX_KEYS:
            self._counts = {k: v for k, v in self._counts.items() if v[0] == window}
            if len(self._counts) > _MAX_KEYS:
                # A flood of distinct well-formed tokens: forget the lot rather than grow
                # without bound (the limit then restarts, it never wrongly refuses).
                self._counts = {key: (window, count)}
        return count


# A request must not wait on a sick counter store: a loopback or LAN Redis answers in well under a
# millisecond, so half a second means it is gone, and one immediate retry covers a pooled
# connection that Redis closed (a restart) without redis-py's default backoff of seconds.
_REDIS_TIMEOUT = 0.5


class RedisStorage:
    """One atomic INCR+EXPIRE script per request (limits' Redis storage), exact however many API
    processes share the Redis. The window's start is part of the key, so windows follow
    Docshelf's clock and the expiry only collects old keys."""

    def __init__(self, url: str) -> None:
        # redis-py and limits load only when a shared store is configured (~25 MB).
        from limits.aio.storage import RedisStorage as LimitsRedisStorage
        from limits.errors import StorageError
        from redis.asyncio import ConnectionPool
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        self._pool = ConnectionPool.from_url(
            url,
            socket_connect_timeout=_REDIS_TIMEOUT,
            socket_timeout=_REDIS_TIMEOUT,
            retry=Retry(NoBackoff(), 1),
        )
        self._storage = LimitsRedisStorage(
            _limits_uri(url),
            implementation="redispy",
            wrap_exceptions=True,
            key_prefix="docshelf:ratelimit",
            # Documented by limits (its options are typed as scalars only); owning the pool is
            # how the connections get closed, as limits has no close of its own.
            connection_pool=self._pool,  # type: ignore[arg-type]
        )
        self._storage_error = StorageError

    async def hit(self, key: str, window: int, ttl: int) -> int:
        try:
            return await self._storage.incr(f"{key}:{window}", ttl)
        except self._storage_error as exc:
            raise StoreUnreachable(str(exc)) from exc

    async def aclose(self) -> None:
        await self._pool.aclose()


def _limits_uri(url: str) -> str:
    # limits names its asyncio storages by scheme; the URL itself is redis-py's.
    if url.startswith("unix://"):
        return "async+redis+unix://" + url.removeprefix("unix://")
    return "async+" + url


# After a failure, requests count in memory for this long before Redis is tried again, so an
# outage costs one timeout per interval rather than one per request.
_RETRY_SHARED_AFTER = 5.0


class RateLimiter:
    """Counts in `shared` when given and reachable, against the whole `limit`; otherwise in this
    process's memory against its share, ceil(limit / processes).

    An unreachable Redis fails open to the share, with a warning: an outage of the counter store
    must not take the API down, and the share keeps the total near the limit meanwhile."""

    def __init__(
        self,
        *,
        limit: int,
        window_seconds: int,
        processes: int = 1,
        shared: SharedStorage | None = None,
    ) -> None:
        self.limit = limit
        self.window_seconds = window_seconds
        self.share = math.ceil(limit / max(processes, 1))
        self.shared = shared
        self.local = MemoryStorage()
        self.retry_shared_after = _RETRY_SHARED_AFTER
        self._shared_failed_at: float | None = None

    async def _count(self, key: str, window: int) -> tuple[int, int]:
        """The request's number in its window, and the limit it is held to."""
        failed_at = self._shared_failed_at
        if self.shared is not None and (
            failed_at is None or time.monotonic() - failed_at >= self.retry_shared_after
        ):
            try:
                # Kept a window longer than it lasts: processes' clocks may differ a little.
                count = await self.shared.hit(key, window, 2 * self.window_seconds)
            except StoreUnreachable as exc:
                if failed_at is None:
                    log.warning(
                        "rate-limit store unreachable (%s); each process enforces its share "
                        "of %d requests per %ds until it is back",
                        exc,
                        self.share,
                        self.window_seconds,
                    )
                self._shared_failed_at = time.monotonic()
            else:
                if failed_at is not None:
                    log.info("rate-limit store reachable again; counting there")
                    self._shared_failed_at = None
                return count, self.limit
        return self.local.hit(key, window), self.share

    async def check(self, key: str) -> Verdict | None:
        if self.limit <= 0:
            return None
        now = clock.timestamp()
        # Counters are keyed by the window's start in epoch seconds.
        window_start = math.floor(now / self.window_seconds) * self.window_seconds
        count, limit = await self._count(key, window_start)
        reset = window_start + self.window_seconds
        return Verdict(
            limit=limit,
            remaining=limit - count,
            reset=reset,
            retry_after=max(1, math.ceil(reset - now)),
        )

    async def enforce(self, key: str) -> Verdict | None:
        verdict = await self.check(key)
        if verdict is not None and not verdict.allowed:
            raise TooManyRequests(
                f"Rate limit of {verdict.limit} requests per {self.window_seconds}s exceeded; "
                f"retry in {verdict.retry_after}s",
                headers={**verdict.headers(), "Retry-After": str(verdict.retry_after)},
            )
        return verdict

    async def aclose(self) -> None:
        if self.shared is not None:
            await self.shared.aclose()
