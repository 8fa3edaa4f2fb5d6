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
import multiprocessing
import os
import resource
import threading
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


async def run(fn: Callable[..., T], *args: Any, seconds: float, lane: Lane) -> T:
    """Runs fn(*args) in a worker process of `lane` (no default: a new caller chooses whose
    work it may wait behind); raises OffloadTimeout past `seconds` and re-raises whatever fn
    raised (it must be picklable, as our own exceptions are)."""
    future = _get_pool(lane).schedule(fn, args=args, timeout=seconds)
    try:
        return await asyncio.wrap_future(future)
    except FutureTimeout:
        raise OffloadTimeout(f"the work took longer than {seconds:g} s and was stopped") from None
    except ProcessExpired as exc:
        raise OffloadCrashed(f"the worker process ended unexpectedly ({exc})") from None
    except asyncio.CancelledError:
        future.cancel()  # type: ignore[no-untyped-call]
        raise


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
