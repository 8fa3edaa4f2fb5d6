"""Small keyword-only factories, one per aggregate, built on the services the API uses."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.auth.service import create_token
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.member import repository as member_repository
from docshelf.organization.schemas import CreateOrganization
from docshelf.organization.service import create_organization
from docshelf.user.service import create_user

_seq = itertools.count(1)


@dataclass(frozen=True)
class Who:
    id: str
    email: str
    name: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def user(db: AsyncEngine, *, email: str | None = None, name: str | None = None) -> Who:
    n = next(_seq)
    email = email or f"user{n}@example.com"
    name = name or f"User {n}"
    async with unit_of_work(db) as conn:
        user_id = await create_user(conn, email=email, name=name)
        token = await create_token(conn, user_id)
    return Who(id=user_id, email=email, name=name, token=token)


async def organization(db: AsyncEngine, *, owner: Who, title: str = "Acme Docs") -> str:
    async with unit_of_work(db) as conn:
        return await create_organization(conn, owner.id, CreateOrganization(title=title))


async def member(db: AsyncEngine, *, org: str, who: Who, role: str | None) -> None:
    async with unit_of_work(db) as conn:
        await member_repository.insert(conn, org_id=org, user_id=who.id, role=role, now=utcnow())


async def org_with_members(db: AsyncEngine, *roles: str | None) -> tuple[str, list[Who]]:
    """An organization whose first user is its admin, plus one member per role given."""
    admin = await user(db)
    org_id = await organization(db, owner=admin)
    people = [admin]
    for role in roles:
        who = await user(db)
        await member(db, org=org_id, who=who, role=role)
        people.append(who)
    return org_id, people


async def import_run(
    db: AsyncEngine, org_id: str, space_id: str, who: Who, *, status: str = "pending"
) -> str:
    """An import run as a queued import records it (its job is not queued)."""
    from docshelf.imports import repository as import_repository
    from docshelf.kit.ids import new_id

    run_id = new_id()
    async with unit_of_work(db) as conn:
        await import_repository.insert_run(
            conn,
            id=run_id,
            organization_id=org_id,
            space_id=space_id,
            status=status,
            source="zip",
            source_url="https://example.com/docs.zip",
            revision_id=new_id(),
            total_resources=250,
            detected="folder",
            created_by=who.id,
            created_at=utcnow(),
            updated_at=utcnow(),
        )
    return run_id


_INHERIT = "inherit"


async def api_space(
    client: httpx.AsyncClient,
    org_id: str,
    who: Who,
    *,
    default_level: str | None = _INHERIT,
    **body: Any,
) -> dict[str, Any]:
    """A space created over HTTP, as its creator sees it. Spaces start with `defaultLevel:
    inherit` (members get their organization role, as in GitBook); `default_level=None` makes
    one that only grants open."""
    r = await client.post(f"/v1/orgs/{org_id}/spaces", json=body, headers=who.headers)
    assert r.status_code == 201, r.text
    space: dict[str, Any] = r.json()
    if default_level != _INHERIT:
        r = await client.patch(
            f"/v1/spaces/{space['id']}", json={"defaultLevel": default_level}, headers=who.headers
        )
        assert r.status_code == 200, r.text
        space = r.json()
    return space


async def api_collection(
    client: httpx.AsyncClient, org_id: str, who: Who, **body: Any
) -> dict[str, Any]:
    r = await client.post(f"/v1/orgs/{org_id}/collections", json=body, headers=who.headers)
    assert r.status_code == 201, r.text
    collection: dict[str, Any] = r.json()
    return collection
