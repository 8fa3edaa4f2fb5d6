"""Install-wide values stored in the database so that every process agrees on them."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import upsert_insert
from docshelf.models import instance_settings

_VALUE = sa.select(instance_settings.c.value).where(instance_settings.c.key == sa.bindparam("k"))


async def get(conn: AsyncConnection, key: str) -> str | None:
    return (await conn.execute(_VALUE, {"k": key})).scalar_one_or_none()


async def claim(conn: AsyncConnection, key: str, value: str) -> bool:
    """Sets `key` unless some process already did; True when this call set it."""
    stmt = (
        upsert_insert(conn, instance_settings).values(key=key, value=value).on_conflict_do_nothing()
    )
    return (await conn.execute(stmt)).rowcount == 1


async def get_or_create(conn: AsyncConnection, key: str, factory: Callable[[], str]) -> str:
    existing = await get(conn, key)
    if existing is not None:
        return existing
    await claim(conn, key, factory())
    value = await get(conn, key)
    assert value is not None
    return value
