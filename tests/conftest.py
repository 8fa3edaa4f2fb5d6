"""Every test runs the real app over HTTP (ASGI transport) against a real database built by the
migrations: SQLite by default, PostgreSQL when DOCSHELF_TEST_DATABASE_URL names one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.kit.clock import clock
from docshelf.kit.db import metadata
from docshelf.kit.migrate import upgrade

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
        run_jobs_in_server=False,
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
def db(app: FastAPI) -> AsyncEngine:
    engine: AsyncEngine = app.state.engine
    return engine


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
        yield c
