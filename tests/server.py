"""A real `docshelf serve` process for tests that need one (signals, several processes)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from docshelf.config import Settings


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`docshelf serve` in its own process group, so SIGKILL reaches every process it started,
    as when a container or a machine dies."""

    def __init__(
        self,
        settings: Settings,
        data_dir: Path,
        *,
        prefix: tuple[str, ...] = (),
        default_jobs: bool = False,
        **env: str,
    ) -> None:
        """`prefix` runs the server through another command (a namespace, a shell) that execs
        it. `default_jobs` leaves DOCSHELF_RUN_JOBS_IN_SERVER unset, so the server runs jobs as
        it does out of the box; other tests run none, so the database is theirs alone."""
        self.prefix = list(prefix)
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if k != "DOCSHELF_RUN_JOBS_IN_SERVER"},
            "DOCSHELF_DATA_DIR": str(data_dir),
            "DOCSHELF_DATABASE_URL": settings.resolved_database_url,
            "DOCSHELF_RATE_LIMIT": "0",
            "DOCSHELF_BASE_URL": self.base,
            "DOCSHELF_LOG_LEVEL": "warning",
            **env,
        }
        if not default_jobs:
            self.env.setdefault("DOCSHELF_RUN_JOBS_IN_SERVER", "false")
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "server.log"

    def start(self) -> None:
        command = [sys.executable, "-c", "from docshelf.cli.main import main; main()"]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*self.prefix, *command, "serve", "--port", str(self.port)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        for _ in range(600):
            try:
                if httpx.get(f"{self.base}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None, self.log.read_text(errors="replace")
            time.sleep(0.1)
        pytest.fail("the server did not become ready:\n" + self.log.read_text(errors="replace"))

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(20)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
