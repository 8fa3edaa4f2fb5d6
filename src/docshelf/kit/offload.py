"""Heavy work off the event loop: a small pool of worker processes with a time and memory cap.

CPU-bound work (converting an import, rendering PDFs, parsing OpenAPI documents) would hold the
GIL for seconds; in a thread it would still slow every request of the process. In a separate
process it costs the API nothing but a core, and a task that runs too long is ended by killing
its process (pebble), which no thread can offer. The pools are created on first use, one per
lane and process, and the work handed to them must be a picklable module-level function over
plain data. Workers end with the process that started them (kit/lifeline.py).
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import resource
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Literal, TypeVar

from pebble import ProcessExpired, ProcessPool

from docshelf.kit import lifeline

T = TypeVar("T")

# Defaults; `configure` (called by create_app and the worker) sets them from the settings.
_workers = 1
_memory_bytes = 1024 * 1024 * 1024
# One pool per kind of work, so that short work a reader or writer waits for never queues behind
# long work of someone else's (pebble's time limit counts from when a task starts, not from when
# it was queued):
# - parse: the markdown of a page write or batch (seconds at most), OpenAPI documents in jobs;
# - read: the published reader's long pages (never behind an export or an import);
# - convert: everything an import does, converting the source and parsing its pages;
# - render: PDF exports (up to minutes).
# `read` and `render` start on first use: `render`'s worker holds WeasyPrint, Pango and fonts,
# memory an install that never exports should not pay, and not every install publishes.
Lane = Literal["parse", "read", "convert", "render"]
_pools: dict[str, ProcessPool] = {}
_pool_lock = threading.Lock()


class _Turns:
    """Admission to one lane's workers, by turns between tenants (organizations). At most as
    many tasks as the lane has workers are handed to its pool; the others wait here, and a
    freed worker goes to the tenant admitted least recently, first come first served within
    one. Pebble's own queue serves everyone in arrival order: one organization's ten exports
    would hold another's one behind all ten, here behind the one running."""

    def __init__(self) -> None:
        self.busy = 0
        self.waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self.turn = itertools.count()
        self.admitted: dict[str, int] = {}  # tenant -> turn of its last admission

    async def enter(self, tenant: str) -> None:
        if self.busy < _workers and not self.waiting:
            self.busy += 1
            self.admitted[tenant] = next(self.turn)
            return
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(tenant, deque()).append(ticket)
        try:
            await ticket
        except asyncio.CancelledError:
            if ticket.done() and not ticket.cancelled():
                self.leave()  # admitted as it was cancelled: the worker goes to the next
            else:
                queue = self.waiting.get(tenant)
                if queue is not None and ticket in queue:
                    queue.remove(ticket)
                    if not queue:
                        del self.waiting[tenant]
            raise

    def leave(self) -> None:
        while self.waiting:
            tenant = min(self.waiting, key=lambda t: self.admitted.get(t, -1))
            queue = self.waiting[tenant]
            ticket = queue.popleft()
            if not queue:
                del self.waiting[tenant]
            if ticket.done():
                # Cancelled while it waited, its caller not yet back to take it out: skipped,
                # or the worker would pass to nobody and the lane stay busy for good.
                continue
            self.admitted[tenant] = next(self.turn)
            ticket.set_result(None)  # the worker passes on: `busy` stays
            return
        self.busy -= 1
        if self.busy == 0:
            self.admitted.clear()  # idle: nobody's past turns matter any more


_turns: dict[str, _Turns] = {}


class OffloadTimeout(Exception):
    """The work ran past its time limit; its process was killed."""


class OffloadCrashed(Exception):
    """The worker process died (out of memory, or a crash in native code)."""


def configure(*, workers: int, memory_bytes: int) -> None:
    global _workers, _memory_bytes
    _workers = max(1, workers)
    _memory_bytes = memory_bytes


def _start_worker(memory_bytes: int, lane: str, parent_pid: int) -> None:
    # A decompression or YAML bomb then fails with MemoryError inside the worker instead of
    # pushing the host into swap or the OOM killer.
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    lifeline.name_process(f"docshelf-{lane}")
    # Polled rather than the kernel's death signal: pebble starts replacement workers from a
    # thread of its own, and that signal follows the starting thread, not the process.
    lifeline.exit_with_parent(parent_pid)


def _get_pool(lane: Lane) -> ProcessPool:
    with _pool_lock:
        pool = _pools.get(lane)
        if pool is None or not pool.active:
            # spawn: the API process runs threads (database drivers, the server's), and a
            # forked child could inherit a lock held by one of them.
            pool = _pools[lane] = ProcessPool(
                max_workers=_workers,
                max_tasks=50,
                initializer=_start_worker,
                initargs=(_memory_bytes, lane, os.getpid()),
                context=multiprocessing.get_context("spawn"),
            )
        return pool


async def run(
    fn: Callable[..., T], *args: Any, seconds: float, lane: Lane, tenant: str | None = None
) -> T:
    """Runs fn(*args) in a worker process of `lane` (no default: a new caller chooses whose
    work it may wait behind), taking turns with other `tenant`s (organizations; None for work
    of no one in particular) for its workers; raises OffloadTimeout past `seconds` and
    re-raises whatever fn raised (it must be picklable, as our own exceptions are)."""
    turns = _turns.setdefault(lane, _Turns())
    await turns.enter(tenant or "")
    try:
        future = _get_pool(lane).schedule(fn, args=args, timeout=seconds)
        try:
            return await asyncio.wrap_future(future)
        except FutureTimeout:
            raise OffloadTimeout(
                f"the work took longer than {seconds:g} s and was stopped"
            ) from None
        except ProcessExpired as exc:
            raise OffloadCrashed(f"the worker process ended unexpectedly ({exc})") from None
        except asyncio.CancelledError:
            future.cancel()  # type: ignore[no-untyped-call]
            raise
    finally:
        turns.leave()


def start() -> None:
    """Starts the pools ahead of their first use, so no request waits for a process to spawn."""
    _get_pool("parse")
    _get_pool("convert")


def shutdown() -> None:
    with _pool_lock:
        for pool in _pools.values():
            pool.stop()  # type: ignore[no-untyped-call]
            pool.join(timeout=5)
        _pools.clear()
        _turns.clear()
