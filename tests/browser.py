"""What the browser tests need: Debian's Chromium (driven by Playwright, never a downloaded
browser), axe-core fetched from the npm registry at a pinned version and cached on disk, and a
real server started as `docshelf serve` would run it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest

CHROMIUM = os.environ.get("DOCSHELF_CHROMIUM", "/usr/bin/chromium")
AXE_VERSION = "4.10.2"
ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("DOCSHELF_CACHE_DIR", ROOT / ".cache")) / "axe-core"
ARTIFACTS = ROOT / "test-artifacts" / "reader"


def need_chromium() -> str:
    """The browser's path; a test without it fails under CI and is skipped elsewhere."""
    if not Path(CHROMIUM).exists():
        message = f"Chromium is not installed at {CHROMIUM} (Debian package `chromium`)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        import playwright  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("playwright (PyPI) is not installed")
    return CHROMIUM


def _fetch_axe(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", tmp, "--silent"],
            check=True,
            capture_output=True,
            timeout=300,
        )
        (tgz,) = Path(tmp).glob("*.tgz")
        with tarfile.open(tgz) as tar:
            member = tar.extractfile("package/axe.min.js")
            assert member is not None
            data = member.read()
    assert b"axe" in data[:2000]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(target)


@cache
def axe_source() -> str:
    target = CACHE / AXE_VERSION / "axe.min.js"
    if not target.exists():
        try:
            _fetch_axe(target)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            if os.environ.get("CI") == "true":
                raise
            pytest.skip(f"axe-core {AXE_VERSION} could not be fetched: {exc}")
    return target.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(database_url: str, data_dir: Path) -> Iterator[str]:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DOCSHELF_DATA_DIR": str(data_dir),
        "DOCSHELF_DATABASE_URL": database_url,
        "DOCSHELF_SERVER": "uvicorn",
        "DOCSHELF_RUN_JOBS_IN_SERVER": "false",
        "DOCSHELF_RATE_LIMIT": "0",
        "DOCSHELF_CUSTOM_HOSTNAMES": "*",
        "DOCSHELF_BASE_URL": base,
        "DOCSHELF_LOG_LEVEL": "warning",
    }
    command = [sys.executable, "-c", "from docshelf.cli.main import main; main()"]
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """Debian's Chromium, headless, through Playwright (a `Browser`); closed on the way out."""
    executable = need_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=executable,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield browser
        finally:
            await browser.close()
