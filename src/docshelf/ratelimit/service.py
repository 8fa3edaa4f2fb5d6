from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work, upsert_insert
from docshelf.kit.errors import TooManyRequests
from docshelf.models import rate_limit_counters


@dataclass(frozen=True, slots=True)
class Verdict:
    limit: int
    remaining: int
    reset: int  # epoch seconds when the window ends
    retry_after: int

    @property
    def allowed(self) -> bool:
        return self.remaining >= 0

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.remaining, 0)),
            "X-RateLimit-Reset": str(self.reset),
        }


class Storage(Protocol):
    async def hit(self, key: str, window: int) -> int: ...


_MAX_KEYS = 100_000


class MemoryStorage:
    """Exact for a single serving process (the embedded SQLite default)."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}

    async def hit(self, key: str, window: int) -> int:
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


class DatabaseStorage:
    """One atomic upsert per request: exact however many API processes share the database."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        stmt = upsert_insert(engine.dialect.name, rate_limit_counters).values(
            key=sa.bindparam("k"), window=sa.bindparam("w"), count=1
        )
        self._stmt = stmt.on_conflict_do_update(
            index_elements=["key", "window"],
            set_={"count": rate_limit_counters.c.count + 1},
        ).returning(rate_limit_counters.c.count)

    async def hit(self, key: str, window: int) -> int:
        async with unit_of_work(self._engine) as conn:
            return int((await conn.execute(self._stmt, {"k": key, "w": window})).scalar_one())


class RateLimiter:
    def __init__(self, storage: Storage, *, limit: int, window_seconds: int) -> None:
        self.storage = storage
        self.limit = limit
        self.window_seconds = window_seconds

    async def check(self, key: str) -> Verdict | None:
        if self.limit <= 0:
            return None
        now = utcnow().timestamp()
        # Counters are keyed by the window's start in epoch seconds.
        window_start = math.floor(now / self.window_seconds) * self.window_seconds
        count = await self.storage.hit(key, window_start)
        reset = window_start + self.window_seconds
        return Verdict(
            limit=self.limit,
            remaining=self.limit - count,
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
