"""Job kinds and their handlers. A handler runs inside the job's unit of work: its writes and
the job's completion commit together, or neither does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

Handler = Callable[[AsyncConnection, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Schedule:
    kind: str
    every: timedelta


_HANDLERS: dict[str, Handler] = {}
_SCHEDULES: list[Schedule] = []


def task(kind: str, *, every: timedelta | None = None) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        if kind in _HANDLERS and _HANDLERS[kind] is not fn:
            raise RuntimeError(f"job kind {kind!r} registered twice")
        _HANDLERS[kind] = fn
        if every is not None:
            _SCHEDULES.append(Schedule(kind, every))
        return fn

    return register


def handler_for(kind: str) -> Handler | None:
    return _HANDLERS.get(kind)


def schedules() -> list[Schedule]:
    return list(_SCHEDULES)
