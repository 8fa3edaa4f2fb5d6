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
_GIVE_UP: dict[str, Handler] = {}
_SCHEDULES: list[Schedule] = []


def task(
    kind: str, *, every: timedelta | None = None, on_give_up: Handler | None = None
) -> Callable[[Handler], Handler]:
    """`on_give_up` runs, in the transaction that marks the job failed, once its last attempt
    has failed: the place to release what the job held (its handler's writes rolled back)."""

    def register(fn: Handler) -> Handler:
        if kind in _HANDLERS and _HANDLERS[kind] is not fn:
            raise RuntimeError(f"job kind {kind!r} registered twice")
        _HANDLERS[kind] = fn
        if on_give_up is not None:
            _GIVE_UP[kind] = on_give_up
        if every is not None:
            _SCHEDULES.append(Schedule(kind, every))
        return fn

    return register


def handler_for(kind: str) -> Handler | None:
    return _HANDLERS.get(kind)


def give_up_handler_for(kind: str) -> Handler | None:
    return _GIVE_UP.get(kind)


def schedules() -> list[Schedule]:
    return list(_SCHEDULES)
