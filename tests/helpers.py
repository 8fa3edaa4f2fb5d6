"""Expected wire objects and database snapshots for whole-body assertions."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.kit.db import metadata
from tests.conftest import BASE
from tests.factories import Who

TS = "2026-01-02T03:04:05.678Z"


def error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def user_body(who: Who) -> dict[str, Any]:
    return {
        "object": "user",
        "id": who.id,
        "displayName": who.name,
        "email": who.email,
        "urls": {"location": f"{BASE}/v1/users/{who.id}"},
    }


def member_body(
    who: Who, role: str | None, *, teams: int = 0, sso: bool = False, last_seen: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "member",
        "id": who.id,
        "role": role,
        "user": user_body(who),
        "disabled": False,
        "joinedAt": TS,
        "sso": sso,
        "spaces": 0,
        "teams": teams,
        "sites": 0,
    }
    if last_seen:
        body["lastSeenAt"] = last_seen
    return body


def org_permissions(role: str | None, *, owns_team: bool = False) -> dict[str, bool]:
    admin = role == "admin"
    full = role is not None
    create = role in ("admin", "create")
    return {
        "view": True,
        "access": True,
        "admin": admin,
        "ownTeam": admin or owns_team,
        "createContent": create,
        "createOpenAPISpec": create,
        "ingestConversations": create,
        "viewBilling": admin,
        "listMembers": full,
        "listTeams": full,
        "listIntegrations": full,
        "listInstallations": admin,
        "installIntegration": admin,
    }


def org_body(
    org_id: str, role: str | None, *, title: str = "Acme Docs", **extra: Any
) -> dict[str, Any]:
    body = {
        "object": "organization",
        "id": org_id,
        "title": title,
        "createdAt": TS,
        "emailDomains": [],
        "type": "business",
        "inviteLinks": True,
        "plan": "enterprise_2024",
        "trial": {"status": "notapplicable", "count": 0},
        "sso": False,
        "ai": False,
        "internal_isOnNewTrial": True,
        "mergeRules": {"type": "none"},
        "urls": {"location": f"{BASE}/v1/orgs/{org_id}", "app": f"{BASE}/o/{org_id}/"},
        "permissions": org_permissions(role),
    }
    body.update(extra)
    return body


def team_body(
    team_id: str, title: str, *, members: int = 0, admin: bool = True, view: bool = True
) -> dict[str, Any]:
    return {
        "object": "team",
        "id": team_id,
        "title": title,
        "members": members,
        "spaces": 0,
        "createdAt": TS,
        "permissions": {"admin": admin, "view": view},
    }


async def snapshot(db: AsyncEngine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table except the install-wide keys (the cursor key is created by an
    install's first request, whatever it asks), for "changes nothing" checks."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    async with db.connect() as conn:
        for table in metadata.sorted_tables:
            if table.name == "instance_settings":
                continue
            rows = (await conn.execute(sa.select(table))).all()
            out[table.name] = sorted((tuple(r) for r in rows), key=repr)
    return out


def listing(*items: dict[str, Any]) -> dict[str, Any]:
    return {"items": list(items), "count": len(items)}


@asynccontextmanager
async def second_app(settings: Settings, **update: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of another app instance on the same database, with some settings changed (what
    another API process is)."""
    app = create_app(settings.model_copy(update=update))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
            c.headers["X-Engine"] = app.state.engine.url.drivername
            yield c
    finally:
        await app.state.limiter.aclose()
        await app.state.engine.dispose()


DOCSHELF = str(Path(sys.executable).parent / "docshelf")


def cli_env(settings: Settings, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `docshelf` command run by a user on the suite's database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.update(
        DOCSHELF_DATA_DIR=str(data_dir),
        DOCSHELF_DATABASE_URL=settings.resolved_database_url,
        **extra,
    )
    return env


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DOCSHELF, *args], env=env, capture_output=True, text=True, timeout=120)


async def eventually(what: str, check: Callable[[], Awaitable[Any]], seconds: float = 180) -> Any:
    """Polls until `check` gives something true (background work done); fails naming `what`
    past `seconds`. A deadline for a hang, never a timing assertion."""
    deadline = time.monotonic() + seconds
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: still not done after {seconds:g} s")
        await asyncio.sleep(0.2)


@asynccontextmanager
async def executed() -> AsyncIterator[list[Any]]:
    """The statement objects (not their SQL) every engine runs inside the block, in order: two
    runs of a statement built once are the same object."""
    seen: list[Any] = []

    def record(_conn: Any, clauseelement: Any, *_args: Any) -> None:
        seen.append(clauseelement)

    sa.event.listen(sa.Engine, "before_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(sa.Engine, "before_execute", record)
