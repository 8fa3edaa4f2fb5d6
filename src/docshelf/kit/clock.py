"""Time, in one place, so tests can move it without sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from functools import lru_cache


class Clock:
    def __init__(self) -> None:
        self._offset = timedelta(0)
        self._frozen: datetime | None = None

    def now(self) -> datetime:
        if self._frozen is not None:
            return self._frozen
        # Millisecond precision: what the wire shows is what the database keeps, on both engines.
        current = datetime.now(UTC) + self._offset
        return current.replace(microsecond=current.microsecond // 1000 * 1000)

    def timestamp(self) -> float:
        """Seconds since the epoch, as `now().timestamp()` but at full precision and without
        building a datetime (the rate limiter asks on every request)."""
        if self._frozen is not None:
            return self._frozen.timestamp()
        return time.time() + self._offset.total_seconds()

    def advance(self, delta: timedelta) -> None:
        if self._frozen is not None:
            self._frozen += delta
        else:
            self._offset += delta

    def freeze(self, at: datetime | None = None) -> None:
        self._frozen = at or self.now()

    def reset(self) -> None:
        self._offset = timedelta(0)
        self._frozen = None


clock = Clock()


def utcnow() -> datetime:
    return clock.now()


def isoformat(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds and a Z, the form GitBook emits."""
    if value is None:
        return None
    return _isoformat(value)


# Every presenter formats the same few timestamps over and over (an organization's creation
# on each read): a hit is ~0.1 µs against ~3 µs of formatting.
@lru_cache(maxsize=1024)
def _isoformat(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
