"""A space's content-addressed objects in the database, behind a process-wide cache.

Objects never change once written (their key is the hash of their bytes), so a cache can keep
them without invalidation across processes; a hash names the same bytes in every space.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.config import Settings
from docshelf.content.tree import hamt
from docshelf.kit.db import upsert_insert
from docshelf.kit.keep import kept
from docshelf.kit.lru import SizedLRU
from docshelf.models import content_objects

_CHUNK = 500


class ByteCache(SizedLRU[str, bytes]):
    """An LRU of byte strings bounded by their total length, not their count."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, len)

    def put(self, key: str, value: bytes) -> None:
        if key in self:
            return
        # Sized to its length, so the budget counts what is held (orjson's output is not).
        super().put(key, kept(value))


# Bytes, not entries: a 10,000-page space's index and records are ~10 MB. Sized from the
# environment directly: get_settings() would be cached before a command line set its variables.
_cache = ByteCache(Settings().object_cache_mb * 1024 * 1024)


class ObjectStore:
    """Reads and writes one space's objects on the request's connection."""

    def __init__(self, conn: AsyncConnection, space_id: str) -> None:
        self.conn = conn
        self.space_id = space_id

    async def get_many(self, hashes: Collection[str]) -> Mapping[str, bytes]:
        found: dict[str, bytes] = {}
        missing: list[str] = []
        for h in set(hashes):
            data = _cache.get(self.space_id + h)
            if data is None:
                missing.append(h)
            else:
                found[h] = data
        for start in range(0, len(missing), _CHUNK):
            chunk = missing[start : start + _CHUNK]
            rows = await self.conn.execute(
                sa.select(content_objects.c.hash, content_objects.c.data).where(
                    content_objects.c.space_id == self.space_id,
                    content_objects.c.hash.in_(chunk),
                )
            )
            for h, data in rows.all():
                data = bytes(data)
                _cache.put(self.space_id + h, data)
                found[h] = data
        absent = [h for h in missing if h not in found]
        if absent:
            raise KeyError(f"content objects missing from space {self.space_id}: {absent[:3]}")
        return found

    async def get_json(self, hashes: Collection[str]) -> dict[str, Any]:
        return {h: orjson.loads(data) for h, data in (await self.get_many(hashes)).items()}

    async def put_many(self, objects: Mapping[str, bytes]) -> None:
        if not objects:
            return
        stmt = upsert_insert(self.conn, content_objects).on_conflict_do_nothing()
        rows = [{"space_id": self.space_id, "hash": h, "data": d} for h, d in objects.items()]
        for start in range(0, len(rows), _CHUNK):
            await self.conn.execute(stmt, rows[start : start + _CHUNK])
        for h, d in objects.items():
            _cache.put(self.space_id + h, d)


def encode_json(value: Any) -> tuple[str, bytes]:
    data = hamt.encode(value)
    return hamt.object_hash(data), data


def text_object(text: str) -> tuple[str, bytes]:
    data = text.encode()
    return hamt.object_hash(data), data


async def copy_objects(
    conn: AsyncConnection, source: str, target: str, hashes: Collection[str]
) -> None:
    """The given objects of `source` into `target`, set-based (INSERT … SELECT), in chunks."""
    ordered = sorted(hashes)
    for start in range(0, len(ordered), _CHUNK):
        await conn.execute(
            sa.insert(content_objects).from_select(
                ["space_id", "hash", "data"],
                sa.select(
                    sa.literal(target).label("space_id"),
                    content_objects.c.hash,
                    content_objects.c.data,
                ).where(
                    content_objects.c.space_id == source,
                    content_objects.c.hash.in_(ordered[start : start + _CHUNK]),
                ),
            )
        )


def all_hashes(objects: Iterable[tuple[str, bytes]]) -> dict[str, bytes]:
    return dict(objects)
