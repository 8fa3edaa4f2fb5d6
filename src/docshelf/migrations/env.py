"""Alembic environment: runs migrations over the async engine built from Settings."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from docshelf import models  # noqa: F401  (registers every table)
from docshelf.config import Settings
from docshelf.kit.db import create_engine, is_postgres, metadata

config = context.config


def _include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    # On SQLite the search index is an FTS5 virtual table (and its shadow tables), created by
    # raw SQL in migration 0007; the metadata's search_sections describes PostgreSQL's table.
    return not (type_ == "table" and name is not None and name.startswith("search_sections"))


def _include_object(obj: Any, name: str | None, type_: str, reflected: bool, other: Any) -> bool:
    return _include_name(name, type_, None)


def _run(connection: Connection) -> None:
    sqlite = not is_postgres(connection)
    if sqlite:
        # Batch mode rebuilds a table by copying it and dropping the old one; with foreign keys
        # on, that DROP deletes every row first and cascades into the tables pointing at it.
        # The pragma only takes effect outside a transaction, hence the driver's own cursor
        # before the migrations begin theirs; the check after them restores the guarantee.
        cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        cursor.execute("PRAGMA foreign_keys=OFF")
        cursor.close()
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=sqlite,
        compare_type=True,
        include_name=_include_name if sqlite else None,
        include_object=_include_object if sqlite else None,
    )
    with context.begin_transaction():
        context.run_migrations()
        if sqlite:
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise RuntimeError(f"migrations left rows without their parents: {broken[:5]}")


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
