"""Install-wide values stored in the database so that every process agrees on them.

A value is set once and never changed (`claim` never overwrites, and nothing updates or deletes
one), so once a read has seen it committed its engine keeps it: the signing keys asked for on
every request that signs a download link or opens a site token are read once per engine, not
once per request (on SQLite, reads and writes have engines of their own, and only reads keep).
Changing a value by hand therefore takes a restart of every process.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import reads_committed, upsert_insert
from docshelf.models import instance_settings

_VALUE = sa.select(instance_settings.c.value).where(instance_settings.c.key == sa.bindparam("k"))

# What each engine has read committed, per key. Per engine rather than per process: a process
# may serve several installs (the tests do), each with its own values. Only a read's statements
# are known to see committed rows (reads autocommit, so even a read's own claim is committed
# when it reads it back); a write may see its own claim, which a rollback undoes.
_seen: weakref.WeakKeyDictionary[sa.Engine, dict[str, str]] = weakref.WeakKeyDictionary()


async def get(conn: AsyncConnection, key: str) -> str | None:
    seen = _seen.get(conn.sync_engine)
    if seen is not None and (value := seen.get(key)) is not None:
        return value
    value = (await conn.execute(_VALUE, {"k": key})).scalar_one_or_none()
    if value is not None and reads_committed(conn):
        _seen.setdefault(conn.sync_engine, {})[key] = value
    return value


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
