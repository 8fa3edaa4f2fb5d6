"""Alembic environment: runs migrations over the async engine built from Settings."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from docshelf import models  # noqa: F401  (registers every table)
from docshelf.config import Settings
from docshelf.kit.db import create_engine, metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(settings: Settings) -> None:
    engine = create_engine(settings)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_run)
            await conn.commit()
    finally:
        await engine.dispose()


settings = config.attributes.get("settings") or Settings()
connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    asyncio.run(_run_async(settings))
