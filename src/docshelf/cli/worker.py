"""The job runner as a process: `docshelf worker`, and the child that `docshelf serve` starts
when it runs jobs itself. Jobs never share the API's event loop, so a long import or purge
cannot delay a request; on SQLite the child is the one other writer, queued on the same lock.

The child is not daemonic: a daemonic process may not start children, and the jobs hand their
heavy work (conversion, parsing) to the offload pools, which are processes. It still ends with
`serve` whichever way that ends: stopped by `serve` on the way out, or, when `serve` was killed,
by the signal the kernel sends it then (kit/lifeline.py) and a check of its parent's pid."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
from multiprocessing.process import BaseProcess

from docshelf.blobs import open_blob_store
from docshelf.config import Settings
from docshelf.kit import lifeline, logs, offload
from docshelf.kit.db import create_engine

# How often the served child looks for its parent where no death signal is delivered.
_PARENT_CHECK_SECONDS = 1.0


def run_worker(settings: Settings, *, parent_pid: int | None = None) -> None:
    from docshelf import tasks  # registers every job kind
    from docshelf.worker.registry import JobEnv
    from docshelf.worker.runner import JobRunner

    offload.configure(
        workers=settings.offload_workers, memory_bytes=settings.offload_memory_mb * 1024 * 1024
    )
    tasks.configure(settings)

    async def run() -> None:
        engine = create_engine(settings)
        runner = JobRunner(engine, JobEnv(open_blob_store(settings), settings))

        def on_signal() -> None:
            # Told to stop, the runner lets the current job finish for a while; with its parent
            # gone there is no one to finish it for, so it hands the job back at once.
            orphaned = parent_pid is not None and lifeline.parent_gone(parent_pid)
            runner.stop(now=orphaned)

        async def watch_parent(pid: int) -> None:
            # Polled: nothing signals a change of parent where PR_SET_PDEATHSIG is missing.
            while True:
                await asyncio.sleep(_PARENT_CHECK_SECONDS)
                if lifeline.parent_gone(pid):
                    runner.stop(now=True)
                    return

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        watcher = None if parent_pid is None else asyncio.create_task(watch_parent(parent_pid))
        try:
            await runner.run_forever()
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            offload.shutdown()
            await engine.dispose()

    asyncio.run(run())


def _child(settings_json: str, parent_pid: int) -> None:
    lifeline.die_with_parent(parent_pid)
    lifeline.name_process("docshelf-jobs")
    settings = Settings.model_validate_json(settings_json)
    logs.configure(settings.log_level, settings.log_format)
    run_worker(settings, parent_pid=parent_pid)


def start_worker_process(settings: Settings) -> BaseProcess:
    """Starts the job runner in a child process (spawned: the parent may hold threads). Call it
    from the thread that lives as long as the child should (the main thread): the kernel's
    death signal follows that thread."""
    process = multiprocessing.get_context("spawn").Process(
        target=_child,
        args=(settings.model_dump_json(), os.getpid()),
        name="docshelf-worker",
        daemon=False,
    )
    process.start()
    return process


def stop_worker_process(process: BaseProcess, timeout: float = 30) -> None:
    if process.is_alive():
        process.terminate()  # SIGTERM: the runner finishes or hands back its job, then exits
        process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
