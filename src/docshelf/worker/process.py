"""The job runner as a process: `docshelf worker`, and the child that `docshelf serve` starts
when it runs jobs itself. Jobs never share the API's event loop, so a long import or purge
cannot delay a request; on SQLite the child is the one other writer, queued on the same lock."""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from multiprocessing.process import BaseProcess

from docshelf.config import Settings
from docshelf.kit import logs, offload
from docshelf.kit.db import create_engine


def run_worker(settings: Settings) -> None:
    from docshelf import tasks  # registers every job kind
    from docshelf.worker.runner import JobRunner

    offload.configure(
        workers=settings.offload_workers, memory_bytes=settings.offload_memory_mb * 1024 * 1024
    )
    tasks.configure(settings)

    async def run() -> None:
        engine = create_engine(settings)
        runner = JobRunner(engine)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, runner.stop)
        try:
            await runner.run_forever()
        finally:
            offload.shutdown()
            await engine.dispose()

    asyncio.run(run())


def _child(settings_json: str) -> None:
    settings = Settings.model_validate_json(settings_json)
    logs.configure(settings.log_level, settings.log_format)
    run_worker(settings)


def start_worker_process(settings: Settings) -> BaseProcess:
    """Starts the job runner in a child process (spawned: the parent may hold threads)."""
    process = multiprocessing.get_context("spawn").Process(
        target=_child, args=(settings.model_dump_json(),), name="docshelf-worker", daemon=True
    )
    process.start()
    return process


def stop_worker_process(process: BaseProcess, timeout: float = 30) -> None:
    if process.is_alive():
        process.terminate()  # SIGTERM: the runner finishes its current job, then exits
        process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
