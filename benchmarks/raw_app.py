"""The raw-driver contestant: FastAPI under plain uvicorn (asyncio loop, h11) doing the two
look-ups Docshelf needs, on the same database, with the driver and hand-written SQL:
token hash -> user, then the organization (or the space) joined to the caller's membership.
It answers the same bytes as Docshelf (read from RAW_ORG_PAYLOAD_FILE / RAW_SPACE_PAYLOAD_FILE)
so only the data path differs; a miss answers 404 and a bad token 401.

SQLite (RAW_SQLITE_PATH): one `sqlite3` connection used inline on the event loop.
PostgreSQL (RAW_PG_DSN): an asyncpg pool of 10.

    uvicorn raw_app:app --loop asyncio --http h11   (this directory on PYTHONPATH)
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, Header, HTTPException
from fastapi.responses import Response

ORG = orjson.loads(Path(os.environ["RAW_ORG_PAYLOAD_FILE"]).read_bytes())
SPACE = orjson.loads(Path(os.environ["RAW_SPACE_PAYLOAD_FILE"]).read_bytes())
SQLITE_PATH = os.environ.get("RAW_SQLITE_PATH")
PG_DSN = os.environ.get("RAW_PG_DSN")

TOKEN_SQL = (
    "SELECT u.id FROM api_tokens t JOIN users u ON u.id = t.user_id "
    "WHERE t.token_hash = {0} AND t.revoked_at IS NULL"
)
ORG_SQL = (
    "SELECT o.*, m.role FROM organizations o JOIN members m "
    "ON m.organization_id = o.id AND m.user_id = {0} WHERE o.id = {1}"
)
SPACE_SQL = (
    "SELECT s.*, m.role FROM spaces s JOIN members m "
    "ON m.organization_id = s.organization_id AND m.user_id = {0} WHERE s.id = {1}"
)

state: dict[str, Any] = {}


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    if PG_DSN:
        import asyncpg

        state["pool"] = await asyncpg.create_pool(PG_DSN, min_size=10, max_size=10)
        yield
        await state["pool"].close()
    else:
        assert SQLITE_PATH
        state["db"] = sqlite3.connect(SQLITE_PATH, isolation_level=None)
        yield
        state["db"].close()


app = FastAPI(lifespan=lifespan)


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


async def lookup(authorization: str | None, sql: str, object_id: str) -> None:
    if not authorization or not authorization.startswith("Bearer "):
        raise HTTPException(401)
    token_hash = hashlib.sha256(authorization[7:].encode()).hexdigest()
    if PG_DSN:
        async with state["pool"].acquire() as conn:
            user = await conn.fetchrow(TOKEN_SQL.format("$1"), token_hash)
            if user is None:
                raise HTTPException(401)
            row = await conn.fetchrow(sql.format("$1", "$2"), user[0], object_id)
    else:
        db = state["db"]
        user = db.execute(TOKEN_SQL.format("?"), (token_hash,)).fetchone()
        if user is None:
            raise HTTPException(401)
        row = db.execute(sql.format("?", "?"), (user[0], object_id)).fetchone()
    if row is None:
        raise HTTPException(404)


@app.get("/v1/orgs/{organizationId}")
async def organization(organizationId: str, authorization: str | None = Header(None)) -> JSON:
    await lookup(authorization, ORG_SQL, organizationId)
    return JSON(ORG)


@app.get("/v1/spaces/{spaceId}")
async def space(spaceId: str, authorization: str | None = Header(None)) -> JSON:
    await lookup(authorization, SPACE_SQL, spaceId)
    return JSON(SPACE)
