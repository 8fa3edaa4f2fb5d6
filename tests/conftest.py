"""Every test runs the real app over HTTP (ASGI transport) against a real database built by the
migrations: SQLite by default, PostgreSQL when DOCSHELF_TEST_DATABASE_URL names one."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis
import sqlalchemy as sa
from fastapi import FastAPI
from hypothesis import settings as hypothesis_settings
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.kit.clock import clock
from docshelf.kit.db import metadata
from docshelf.kit.migrate import upgrade
from docshelf.worker.registry import JobEnv

# CI runs every property test on the same derived examples, so a green main stays green; runs
# elsewhere keep exploring new inputs (and have found real bugs that way).
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    hypothesis_settings.load_profile("ci")

BASE = "http://testserver"
FROZEN = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def _database_url(tmp: Path) -> str:
    return os.environ.get("DOCSHELF_TEST_DATABASE_URL") or f"sqlite+aiosqlite:///{tmp / 'test.db'}"


def pytest_report_header(config: pytest.Config) -> str:
    url = os.environ.get("DOCSHELF_TEST_DATABASE_URL")
    return f"docshelf database: {'PostgreSQL (' + url.split('@')[-1] + ')' if url else 'SQLite'}"


async def _reset_postgres_schema(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        await conn.execute(sa.text("CREATE SCHEMA public"))
    await engine.dispose()


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    data_dir = tmp_path_factory.mktemp("data")
    url = _database_url(data_dir)
    if url.startswith("postgresql"):
        asyncio.run(_reset_postgres_schema(url))
    s = Settings(
        data_dir=data_dir,
        database_url=url,
        base_url=BASE,
        rate_limit=0,
        anonymous_rate_limit=0,
        run_jobs_in_server=False,
        # Any custom hostname (tests/test_site_hostname.py checks the narrower forms).
        custom_hostnames="*",
    )
    upgrade(s)
    return s


@pytest.fixture(autouse=True)
def frozen_clock() -> Iterator[None]:
    clock.reset()
    clock.freeze(FROZEN)
    yield
    clock.reset()


async def truncate_all(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            names = ", ".join(t.name for t in metadata.sorted_tables)
            await conn.execute(sa.text(f"TRUNCATE {names} CASCADE"))
        else:
            for table in reversed(metadata.sorted_tables):
                await conn.execute(table.delete())


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings)
    await truncate_all(application.state.engine)
    yield application
    await application.state.engine.dispose()


@pytest.fixture
def job_env(app: FastAPI, request: pytest.FixtureRequest) -> JobEnv:
    """What the app hands the jobs a runner of the tests runs: its blob store and settings, or
    the settings of a module's `loopback` fixture when the test asks for it (the jobs' fetches
    may then reach the test's own servers)."""
    env: JobEnv = app.state.job_env
    if "loopback" in request.fixturenames:
        return replace(env, settings=request.getfixturevalue("loopback"))
    return env


@pytest.fixture
def db(app: FastAPI) -> AsyncEngine:
    engine: AsyncEngine = app.state.engine
    return engine


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
        yield c


# -- Redis (the shared rate-limit store): a real redis-server from Debian, one per test session --


class RedisServer:
    """A throwaway redis-server on a free loopback port, without persistence, in its own dir."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            message = (
                "redis-server is not installed: the Redis rate-limit tests need the Debian "
                "package 'redis-server' (.ci/run installs it)"
            )
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
        args = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(self.directory)]
        with (self.directory / "redis.log").open("ab") as out:
            self._proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1)
        try:
            deadline = time.monotonic() + 15
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if self._proc.poll() is not None or time.monotonic() > deadline:
                        log = (self.directory / "redis.log").read_text(errors="replace")
                        pytest.fail(f"redis-server did not start on port {self.port}:\n{log}")
                    time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=15)
            self._proc = None

    def flush(self) -> None:
        with redis.Redis.from_url(self.url) as client:
            client.flushdb()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis, emptied for this test."""
    redis_server.flush()
    return redis_server.url
