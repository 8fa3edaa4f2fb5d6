"""Heavy work off the event loop: a small pool of worker processes with a time and memory cap.

CPU-bound work (converting an import, and later rendering PDFs or parsing OpenAPI documents)
would hold the GIL for seconds; in a thread it would still slow every request of the process.
In a separate process it costs the API nothing but a core, and a task that runs too long is
ended by killing its process (pebble), which no thread can offer. The pool is created on first
use, one per process, and the work handed to it must be a picklable module-level function over
plain data.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

T = TypeVar("T")

# Defaults; `configure` (called by create_app and the worker) sets them from the settings.
_workers = 1
_memory_bytes = 1024 * 1024 * 1024
_pool: ProcessPool | None = None
_pool_lock = threading.Lock()


class OffloadTimeout(Exception):
    """The work ran past its time limit; its process was killed."""


class OffloadCrashed(Exception):
    """The worker process died (out of memory, or a crash in native code)."""


def configure(*, workers: int, memory_bytes: int) -> None:
    global _workers, _memory_bytes
    _workers = max(1, workers)
    _memory_bytes = memory_bytes


def _limit_memory(memory_bytes: int) -> None:
    # A decompression or YAML bomb then fails with MemoryError inside the worker instead of
    # pushing the host into swap or the OOM killer.
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def _get_pool() -> ProcessPool:
    global _pool
    with _pool_lock:
        if _pool is None or not _pool.active:
            # spawn: the API process runs threads (database drivers, the server's), and a
            # forked child could inherit a lock held by one of them.
            _pool = ProcessPool(
                max_workers=_workers,
                max_tasks=50,
                initializer=_limit_memory,
                initargs=(_memory_bytes,),
                context=multiprocessing.get_context("spawn"),
            )
        return _pool


async def run(fn: Callable[..., T], *args: Any, seconds: float) -> T:
    """Runs fn(*args) in a worker process; raises OffloadTimeout past `seconds` and
    re-raises whatever fn raised (it must be picklable, as our own exceptions are)."""
    future = _get_pool().schedule(fn, args=args, timeout=seconds)
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
    """Starts the pool ahead of its first use, so no request waits for a process to spawn."""
    _get_pool()


def shutdown() -> None:
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.stop()  # type: ignore[no-untyped-call]
            _pool.join(timeout=5)
            _pool = None
