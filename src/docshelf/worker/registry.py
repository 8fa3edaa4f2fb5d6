"""Job kinds and their handlers. A handler runs inside the job's unit of work: its writes and
the job's completion commit together, or neither does. Slow work that writes nothing (reading
a blob, converting, fetching) goes in the kind's `prepare` step, which runs before that
transaction opens, so no job holds a write lock while it waits or computes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from docshelf.blobs import BlobStore
from docshelf.config import Settings

Handler = Callable[..., Awaitable[None]]
Prepare = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class JobEnv:
    """What a process hands its jobs, as the app's state is handed to requests: the settings
    and blob store of the serving app, or those a worker process opened."""

    blobs: BlobStore
    settings: Settings


@dataclass(frozen=True)
class Schedule:
    kind: str
    every: timedelta
    # How far away the run queued when a runner starts is, if none is pending (else `every`).
    first: timedelta | None = None


# The longest a job may run, prepare step and handler together, unless its kind says less. It
# stays below the runner's lease (5 minutes), so a job still running is never taken by another
# runner; past it the job is stopped (its offloaded work killed) and counts as a failed attempt.
MAX_SECONDS = 240.0


@dataclass(frozen=True)
class Kind:
    # handler(conn, payload, *, env), or handler(conn, payload, prepared, *, env) when
    # `prepare` is set; prepare(engine, payload, *, env).
    handler: Handler
    prepare: Prepare | None = None
    # on_give_up(conn, payload, *, env)
    on_give_up: Handler | None = None
    seconds: float = MAX_SECONDS


_KINDS: dict[str, Kind] = {}
_SCHEDULES: list[Schedule] = []


def task(
    kind: str,
    *,
    every: timedelta | None = None,
    first: timedelta | None = None,
    prepare: Prepare | None = None,
    on_give_up: Handler | None = None,
    seconds: float = MAX_SECONDS,
) -> Callable[[Handler], Handler]:
    """A kind with `every` runs periodically, one run pending at a time; `first` brings the
    run queued when a runner starts closer, for sweeps that catch up after an upgrade.
    `prepare(engine, payload)` runs before the job's transaction opens and its result is
    passed to the handler. `on_give_up` runs, in the transaction that marks the job failed,
    once its last attempt has failed: the place to release what the job held (its handler's
    writes rolled back). `seconds` bounds a run, at most MAX_SECONDS."""
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"job kind {kind!r}: seconds must be in (0, {MAX_SECONDS:g}]")

    def register(fn: Handler) -> Handler:
        if kind in _KINDS and _KINDS[kind].handler is not fn:
            raise RuntimeError(f"job kind {kind!r} registered twice")
        _KINDS[kind] = Kind(fn, prepare, on_give_up, seconds)
        if every is not None:
            _SCHEDULES.append(Schedule(kind, every, first))
        return fn

    return register


def kind_of(name: str) -> Kind | None:
    return _KINDS.get(name)


def kinds() -> list[str]:
    """Every registered kind, sorted."""
    return sorted(_KINDS)


def schedule_key(kind: str) -> str:
    """The dedupe key that keeps one run of a scheduled kind pending at a time."""
    return f"schedule:{kind}"


def schedules() -> list[Schedule]:
    return list(_SCHEDULES)
