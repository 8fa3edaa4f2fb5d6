"""scripts/setup.sh, run as `make run` and `make test` run it, in a copy of the checkout whose
.venv/bin/python records what it is asked to install: `make run` installs what running needs
and no development tool; `make test` adds them; each is a no-op when up to date."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _checkout(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "pip.log"}\n')
    python.chmod(0o755)
    return tmp_path


def _make(checkout: Path, target: str) -> list[str]:
    log = checkout / "pip.log"
    log.unlink(missing_ok=True)
    subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=checkout,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return log.read_text().splitlines() if log.exists() else []


def test_run_installs_only_what_running_needs_and_test_adds_the_tools(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    assert _make(checkout, "setup") == [
        "-m pip install --quiet --upgrade pip",
        "-m pip install --quiet -e .",
    ]
    assert _make(checkout, "setup") == []  # up to date
    assert _make(checkout, "setup-dev") == [
        "-m pip install --quiet --upgrade pip",
        "-m pip install --quiet -e .[dev]",
    ]
    assert _make(checkout, "setup-dev") == []
    # A development install also serves `make run`.
    assert _make(checkout, "setup") == []
    # A changed pyproject.toml is installed again.
    os.utime(checkout / "pyproject.toml", (4_000_000_000, 4_000_000_000))
    assert _make(checkout, "setup") == [
        "-m pip install --quiet --upgrade pip",
        "-m pip install --quiet -e .",
    ]
    # `make test` runs the development setup first.
    assert "scripts/setup.sh dev\n" in (ROOT / "scripts" / "test.sh").read_text()
