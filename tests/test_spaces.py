"""Spaces over HTTP: create, update, delete/restore/purge, duplicate, move and transfer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from docshelf.models import content_grants, jobs, spaces
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import TS, error, listing, snapshot

ADMIN_ONLY = error(403, "Only admins of the space can do this")
SPACE_NOT_FOUND = error(404, "Space not found")
RANKS = ("read", "comment", "edit", "review", "create", "admin")


def now() -> str:
    return isoformat(clock.now()) or ""


def space_permissions(role: str | None, *, locked: bool = False) -> dict[str, bool]:
    def at_least(needed: str) -> bool:
        return role is not None and RANKS.index(role) >= RANKS.index(needed)

    edit = at_least("edit") and not locked
    return {
        "view": at_least("read"),
        "access": at_least("read"),
        "admin": at_least("admin"),
        "viewInviteLinks": at_least("admin"),
        "edit": edit,
        "triggerGitSync": edit,
        "comment": at_least("comment"),
        "merge": at_least("review"),
        "review": at_least("review"),
        "installIntegration": at_least("admin"),
    }


def space_body(
    space_id: str,
    org_id: str,
    revision: str,
    *,
    title: str = "Untitled space",
    emoji: str = "",
    visibility: str = "private",
    default_level: str | None = "inherit",
    role: str | None = "admin",
    created: str = TS,
    updated: str | None = None,
    icon: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The whole Space object; `extra` holds the optional keys (parent, editMode, deletedAt,
    language) exactly as they should appear."""
    urls = {"location": f"{BASE}/v1/spaces/{space_id}", "app": f"{BASE}/s/{space_id}/"}
    if icon is not None:
        urls["icon"] = icon
    body: dict[str, Any] = {
        "object": "space",
        "id": space_id,
        "title": title,
        "emoji": emoji,
        "visibility": visibility,
        "createdAt": created,
        "updatedAt": updated or created,
        "organization": org_id,
        "revision": revision,
        "defaultLevel": default_level,
        "comments": 0,
        "changeRequests": 0,
        "changeRequestsOpen": 0,
        "changeRequestsDraft": 0,
        "mergeRules": {"type": "inherit"},
        "urls": urls,
        "permissions": space_permissions(role, locked=extra.get("editMode") == "locked"),
    }
    body.update(extra)
    return body


async def ids_in_org(client: httpx.AsyncClient, org_id: str, who: Who) -> list[str]:
    r = await client.get(f"/v1/orgs/{org_id}/spaces", headers=who.headers)
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["items"]]


async def ids_in_collection(client: httpx.AsyncClient, collection_id: str, who: Who) -> list[str]:
    r = await client.get(f"/v1/collections/{collection_id}/spaces", headers=who.headers)
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["items"]]


async def purges_run(db: AsyncEngine, job_env: JobEnv) -> int:
    """Runs the due jobs; how many of them were purges (each change also queues the dispatch
    of its event)."""

    async def done() -> int:
        async with db.connect() as conn:
            stmt = sa.select(sa.func.count()).where(
                jobs.c.kind == "space.purge", jobs.c.status == "done"
            )
            return int((await conn.execute(stmt)).scalar_one())

    before = await done()
    await JobRunner(db, job_env).drain()
    return await done() - before


async def space_row(db: AsyncEngine, space_id: str) -> sa.RowMapping | None:
    async with db.connect() as conn:
        stmt = sa.select(spaces).where(spaces.c.id == space_id)
        return (await conn.execute(stmt)).mappings().first()


# -- create ----------------------------------------------------------------------------------


new_space = factories.api_space


async def new_collection(client: httpx.AsyncClient, org_id: str, who: Who, **body: Any) -> str:
    return str((await factories.api_collection(client, org_id, who, **body))["id"])


async def test_create_space_defaults(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    r = await client.post(f"/v1/orgs/{org_id}/spaces", headers=admin.headers)
    assert r.status_code == 201
    plain = r.json()
    assert r.headers["location"] == f"{BASE}/v1/spaces/{plain['id']}"
    assert plain == space_body(plain["id"], org_id, plain["revision"])

    clock.advance(timedelta(seconds=1))
    r = await client.post(
        f"/v1/orgs/{org_id}/spaces",
        json={"title": "  Handbook  ", "emoji": "📖", "editMode": "live", "language": "fr"},
        headers=admin.headers,
    )
    assert r.status_code == 201
    handbook = r.json()
    assert handbook == space_body(
        handbook["id"],
        org_id,
        handbook["revision"],
        title="Handbook",
        emoji="1f4d6",
        created=now(),
        editMode="live",
        language="fr",
    )
    assert handbook["revision"] != plain["revision"]

    collection_id = await new_collection(client, org_id, admin, title="Guides")
    r = await client.post(
        f"/v1/orgs/{org_id}/spaces",
        json={"title": "Inside", "parent": collection_id},
        headers=admin.headers,
    )
    assert r.status_code == 201
    inside = r.json()
    assert inside == space_body(
        inside["id"],
        org_id,
        inside["revision"],
        title="Inside",
        visibility="in-collection",
        created=now(),
        parent=collection_id,
    )

    # Root content first, then each collection's, each in creation order.
    r = await client.get(f"/v1/orgs/{org_id}/spaces", headers=admin.headers)
    assert r.json() == listing(plain, handbook, inside)
    r = await client.get(f"/v1/collections/{collection_id}/spaces", headers=admin.headers)
    assert r.json() == listing(inside)
    r = await client.get(f"/v1/spaces/{handbook['id']}", headers=admin.headers)
    assert r.json() == handbook


async def test_create_space_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    other_org, (other_admin,) = await factories.org_with_members(db)
    foreign = await new_collection(client, other_org, other_admin)
    url = f"/v1/orgs/{org_id}/spaces"
    before = await snapshot(db)

    r = await client.post(url, json={"visibility": "in-collection"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'visibility': 'in-collection' is only for spaces in a "
              "collection"),
    )  # fmt: skip
    for parent in ("nope", foreign):
        r = await client.post(url, json={"parent": parent}, headers=admin.headers)
        assert (r.status_code, r.json()) == (
            400,
            error(400, f"Invalid body field 'parent': collection '{parent}' not found"),
        )
    r = await client.post(url, json={"title": "x" * 51}, headers=admin.headers)
    assert r.status_code == 400
    r = await client.post(url, json={"title": "Mine"}, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "You cannot create content in this organization"),
    )
    assert await snapshot(db) == before


async def test_creator_administers_their_space(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, creator, other_creator) = await factories.org_with_members(
        db, "create", "create"
    )
    space = await new_space(client, org_id, creator, title="Notes")
    sid = space["id"]
    assert space == space_body(sid, org_id, space["revision"], title="Notes")

    r = await client.get(f"/v1/spaces/{sid}", headers=creator.headers)
    assert r.json() == space
    clock.advance(timedelta(minutes=1))
    r = await client.patch(f"/v1/spaces/{sid}", json={"title": "My notes"}, headers=creator.headers)
    assert r.status_code == 200
    assert r.json() == space_body(sid, org_id, space["revision"], title="My notes", updated=now())
    assert await ids_in_org(client, org_id, creator) == [sid]
    assert await ids_in_org(client, org_id, admin) == [sid]

    # Private means not public: other members reach it with their organization role, as in
    # GitBook (defaultLevel `inherit`); a creator of the organization creates there, not more.
    r = await client.get(f"/v1/spaces/{sid}", headers=other_creator.headers)
    assert r.status_code == 200
    assert r.json()["permissions"]["admin"] is False
    assert await ids_in_org(client, org_id, other_creator) == [sid]
    # With no default level, only grants open it.
    r = await client.patch(
        f"/v1/spaces/{sid}", json={"defaultLevel": None}, headers=creator.headers
    )
    assert r.status_code == 200, r.text
    r = await client.get(f"/v1/spaces/{sid}", headers=other_creator.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    assert await ids_in_org(client, org_id, other_creator) == []


# -- update ----------------------------------------------------------------------------------


async def test_update_space(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    space = await new_space(client, org_id, admin)
    sid, rev = space["id"], space["revision"]
    url = f"/v1/spaces/{sid}"

    async def patch(body: dict[str, Any]) -> dict[str, Any]:
        clock.advance(timedelta(seconds=1))
        r = await client.patch(url, json=body, headers=admin.headers)
        assert r.status_code == 200, r.text
        result: dict[str, Any] = r.json()
        return result

    assert await patch({"title": "Handbook"}) == space_body(
        sid, org_id, rev, title="Handbook", updated=now()
    )
    assert await patch({"emoji": "1F4D6"}) == space_body(
        sid, org_id, rev, title="Handbook", emoji="1f4d6", updated=now()
    )
    assert await patch({"emoji": "🚀"}) == space_body(
        sid, org_id, rev, title="Handbook", emoji="1f680", updated=now()
    )
    # A joined sequence keeps every codepoint.
    assert (await patch({"emoji": "👩‍💻"}))["emoji"] == "1f469-200d-1f4bb"
    icon = "https://cdn.example.com/icon.png"
    # GitBook's body is one of {emoji} | {icon}: both at once is refused.
    r = await client.patch(url, json={"emoji": "📖", "icon": icon}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        {"error": {"code": 400, "message": "Invalid body: give 'emoji' or 'icon', not both"}},
    )
    await patch({"emoji": "📖"})
    assert await patch({"icon": icon}) == space_body(
        sid, org_id, rev, title="Handbook", emoji="1f4d6", icon=icon, updated=now()
    )
    assert await patch({"emoji": None, "icon": None}) == space_body(
        sid, org_id, rev, title="Handbook", updated=now()
    )
    assert await patch({"editMode": "locked"}) == space_body(
        sid, org_id, rev, title="Handbook", updated=now(), editMode="locked"
    )
    assert (await patch({"editMode": "locked"}))["permissions"]["edit"] is False
    assert await patch({"editMode": "live"}) == space_body(
        sid, org_id, rev, title="Handbook", updated=now(), editMode="live"
    )
    assert await patch({"editMode": None, "language": "de"}) == space_body(
        sid, org_id, rev, title="Handbook", updated=now(), language="de"
    )
    final = await patch({"visibility": "unlisted", "defaultLevel": "read", "language": None})
    assert final == space_body(
        sid,
        org_id,
        rev,
        title="Handbook",
        visibility="unlisted",
        default_level="read",
        updated=now(),
    )
    r = await client.get(url, headers=admin.headers)
    assert r.json() == final
    # No longer private, with defaultLevel read: the editor reads it, no more.
    r = await client.get(url, headers=editor.headers)
    assert r.json() == final | {"permissions": space_permissions("read")}
    assert (await patch({"defaultLevel": None}))["defaultLevel"] is None
    r = await client.get(url, headers=editor.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)


async def test_locked_space_is_not_editable(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    collection_id = await new_collection(client, org_id, admin)
    space = await new_space(client, org_id, admin, parent=collection_id, editMode="locked")
    r = await client.get(f"/v1/spaces/{space['id']}", headers=editor.headers)
    assert r.json() == space | {"permissions": space_permissions("edit", locked=True)}
    assert r.json()["permissions"]["edit"] is False
    assert r.json()["permissions"]["comment"] is True


async def test_update_space_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    collection_id = await new_collection(client, org_id, admin)
    inside = await new_space(client, org_id, admin, parent=collection_id, emoji="1f4d6")
    root = await new_space(client, org_id, admin)
    before = await snapshot(db)

    not_an_emoji = "not an emoji: give the character or its codepoint, such as 1f4d6"
    for bad in ("xx", "book", "1f4d6-zz", "📖a", "110000", "0041", "📖📖"):
        r = await client.patch(
            f"/v1/spaces/{inside['id']}", json={"emoji": bad}, headers=admin.headers
        )
        assert (r.status_code, r.json()) == (
            400,
            error(400, f"Invalid body field 'emoji': {not_an_emoji}"),
        ), bad
    # Ten characters are within the input limit, but their codepoints would not fit the column
    # (PostgreSQL answered 500): a kiss with two skin tones is one emoji of ten codepoints.
    kiss = "\U0001f469\U0001f3fb\u200d\u2764\ufe0f\u200d\U0001f48b\u200d\U0001f468\U0001f3fc"
    r = await client.patch(
        f"/v1/spaces/{inside['id']}", json={"emoji": kiss}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'emoji': too long: at most 50 characters in codepoint form"),
    )
    r = await client.patch(
        f"/v1/spaces/{inside['id']}", json={"title": None}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'title': must not be null"),
    )
    r = await client.patch(f"/v1/spaces/{inside['id']}", json={"title": ""}, headers=admin.headers)
    assert r.status_code == 400
    r = await client.patch(
        f"/v1/spaces/{inside['id']}", json={"icon": "ftp://x"}, headers=admin.headers
    )
    assert r.status_code == 400
    r = await client.patch(f"/v1/spaces/{inside['id']}", json={"owner": "x"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (400, error(400, "Unknown body field 'owner'"))
    r = await client.patch(
        f"/v1/spaces/{root['id']}", json={"visibility": "in-collection"}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'visibility': 'in-collection' is only for spaces in a "
              "collection"),
    )  # fmt: skip
    # The editor sees the space (it follows its collection) but does not administer it.
    r = await client.get(f"/v1/spaces/{inside['id']}", headers=editor.headers)
    assert r.status_code == 200
    r = await client.patch(
        f"/v1/spaces/{inside['id']}", json={"title": "Mine"}, headers=editor.headers
    )
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    # So does the space at the top (private: not public; members inherit their role).
    r = await client.patch(
        f"/v1/spaces/{root['id']}", json={"title": "Mine"}, headers=editor.headers
    )
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    assert await snapshot(db) == before


# -- delete, restore, purge ------------------------------------------------------------------


async def test_delete_and_restore(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    collection_id = await new_collection(client, org_id, admin)
    space = await new_space(client, org_id, admin, title="Doomed", parent=collection_id)
    sid = space["id"]
    clock.advance(timedelta(seconds=1))
    other = await new_space(client, org_id, admin, title="Other", parent=collection_id)
    assert await ids_in_collection(client, collection_id, admin) == [sid, other["id"]]
    r = await client.get(f"/v1/spaces/{sid}", headers=editor.headers)
    assert r.status_code == 200

    clock.advance(timedelta(hours=1))
    r = await client.delete(f"/v1/spaces/{sid}", headers=editor.headers)
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    r = await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)
    assert (r.status_code, r.content) == (205, b"")
    deleted_at = now()

    assert await ids_in_org(client, org_id, admin) == [other["id"]]
    assert await ids_in_collection(client, collection_id, admin) == [other["id"]]
    assert await ids_in_collection(client, collection_id, editor) == [other["id"]]
    r = await client.get(f"/v1/spaces/{sid}", headers=admin.headers)
    assert r.json() == space | {"updatedAt": deleted_at, "deletedAt": deleted_at}
    # Deleted: its admins see it on GET (and may restore it); nobody else sees it at all.
    r = await client.get(f"/v1/spaces/{sid}", headers=editor.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    for who in (editor, admin):
        r = await client.patch(f"/v1/spaces/{sid}", json={"title": "x"}, headers=who.headers)
        assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
        r = await client.delete(f"/v1/spaces/{sid}", headers=who.headers)
        assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    r = await client.post(f"/v1/spaces/{sid}/restore", headers=editor.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)

    # Just inside the seven days.
    clock.advance(timedelta(days=7) - timedelta(milliseconds=1))
    r = await client.post(f"/v1/spaces/{sid}/restore", headers=admin.headers)
    assert r.status_code == 200
    restored = space | {"updatedAt": now()}
    assert r.json() == restored
    r = await client.get(f"/v1/spaces/{sid}", headers=editor.headers)
    assert r.json() == restored | {"permissions": space_permissions("edit")}
    # Restored at the end of its parent's order.
    assert await ids_in_collection(client, collection_id, admin) == [other["id"], sid]
    # Restoring what is not deleted is a no-op.
    clock.advance(timedelta(seconds=1))
    r = await client.post(f"/v1/spaces/{sid}/restore", headers=admin.headers)
    assert (r.status_code, r.json()) == (200, restored)

    # Deleted again and left for seven days: too late to restore, and the runner purges it.
    r = await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)
    assert r.status_code == 205
    clock.advance(timedelta(days=7))
    r = await client.post(f"/v1/spaces/{sid}/restore", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    # The first deletion's job finds the space restored since; the second one purges.
    assert await purges_run(db, job_env=job_env) == 2
    assert await space_row(db, sid) is None
    r = await client.get(f"/v1/spaces/{sid}", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    assert await ids_in_collection(client, collection_id, admin) == [other["id"]]


async def test_purge_after_retention(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, (admin, creator) = await factories.org_with_members(db, "create")
    # The creator's own grant goes with the space.
    space = await new_space(client, org_id, creator)
    sid = space["id"]
    keep = await new_space(client, org_id, admin)
    r = await client.delete(f"/v1/spaces/{sid}", headers=creator.headers)
    assert r.status_code == 205

    clock.advance(timedelta(days=7) - timedelta(seconds=1))
    assert await purges_run(db, job_env=job_env) == 0
    assert await space_row(db, sid) is not None

    clock.advance(timedelta(seconds=1))
    r = await client.post(f"/v1/spaces/{sid}/restore", headers=creator.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    assert await purges_run(db, job_env=job_env) == 1
    assert await space_row(db, sid) is None
    async with db.connect() as conn:
        grants = await conn.execute(
            sa.select(content_grants).where(content_grants.c.target_id == sid)
        )
        assert grants.all() == []
    for who in (admin, creator):
        r = await client.get(f"/v1/spaces/{sid}", headers=who.headers)
        assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    r = await client.get(f"/v1/spaces/{keep['id']}", headers=admin.headers)
    assert r.json() == keep


async def test_restored_space_is_not_purged(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    once = await new_space(client, org_id, admin, title="Restored")
    twice = await new_space(client, org_id, admin, title="Deleted again")
    for s in (once, twice):
        r = await client.delete(f"/v1/spaces/{s['id']}", headers=admin.headers)
        assert r.status_code == 205
    clock.advance(timedelta(days=1))
    for s in (once, twice):
        r = await client.post(f"/v1/spaces/{s['id']}/restore", headers=admin.headers)
        assert r.status_code == 200
    clock.advance(timedelta(days=1))
    r = await client.delete(f"/v1/spaces/{twice['id']}", headers=admin.headers)
    deleted_again = now()

    # Day 7: both first jobs run and find nothing of theirs to purge.
    clock.advance(timedelta(days=5))
    assert await purges_run(db, job_env=job_env) == 2
    r = await client.get(f"/v1/spaces/{once['id']}", headers=admin.headers)
    assert (r.status_code, "deletedAt" in r.json()) == (200, False)
    r = await client.get(f"/v1/spaces/{twice['id']}", headers=admin.headers)
    assert (r.status_code, r.json()["deletedAt"]) == (200, deleted_again)

    # The second deletion's seven days still run: it can be restored, and then stays.
    r = await client.post(f"/v1/spaces/{twice['id']}/restore", headers=admin.headers)
    assert r.status_code == 200
    clock.advance(timedelta(days=30))
    assert await purges_run(db, job_env=job_env) == 1
    assert sorted(await ids_in_org(client, org_id, admin)) == sorted([once["id"], twice["id"]])


# -- duplicate -------------------------------------------------------------------------------


async def test_duplicate(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    collection_id = await new_collection(client, org_id, admin)
    first = await new_space(client, org_id, admin, title="First", parent=collection_id)
    clock.advance(timedelta(seconds=1))
    last = await new_space(client, org_id, admin, title="Last", parent=collection_id)
    clock.advance(timedelta(seconds=1))
    icon = "https://cdn.example.com/i.png"
    r = await client.patch(
        f"/v1/spaces/{first['id']}", json={"emoji": "1f4d6"}, headers=admin.headers
    )
    assert r.status_code == 200
    r = await client.patch(
        f"/v1/spaces/{first['id']}",
        json={
            "icon": icon,
            "editMode": "locked",
            "defaultLevel": "comment",
            "language": "ja",
        },
        headers=admin.headers,
    )
    # The copy keeps who may do what, and the custom field values.
    r = await client.post(
        f"/v1/spaces/{first['id']}/permissions",
        json={"role": "edit", "users": [reader.id]},
        headers=admin.headers,
    )
    assert r.status_code == 204
    r = await client.post(
        f"/v1/orgs/{org_id}/custom-fields",
        json={"name": "owner", "type": "text"},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    r = await client.patch(
        f"/v1/spaces/{first['id']}/custom-fields",
        json={"values": {"owner": {"value": "Ann"}}},
        headers=admin.headers,
    )
    assert r.status_code == 204, r.text
    original = (await client.get(f"/v1/spaces/{first['id']}", headers=admin.headers)).json()

    clock.advance(timedelta(minutes=5))
    r = await client.post(f"/v1/spaces/{first['id']}/duplicate", headers=admin.headers)
    assert r.status_code == 201
    copy = r.json()
    for sub in ("permissions/users", "custom-fields"):
        copied = await client.get(f"/v1/spaces/{copy['id']}/{sub}", headers=admin.headers)
        source = await client.get(f"/v1/spaces/{first['id']}/{sub}", headers=admin.headers)
        assert copied.json() == source.json(), sub
    values = await client.get(f"/v1/spaces/{copy['id']}/custom-fields", headers=admin.headers)
    assert [(v["customField"]["name"], v["value"]) for v in values.json()] == [("owner", "Ann")]
    users = await client.get(f"/v1/spaces/{copy['id']}/permissions/users", headers=admin.headers)
    assert [(i["permission"], i["user"]["id"]) for i in users.json()["items"]] == [
        ("edit", reader.id)
    ]
    assert copy["id"] != first["id"]
    assert r.headers["location"] == f"{BASE}/v1/spaces/{copy['id']}"
    # The copy's content is its own first revision, holding what the original's main holds.
    assert copy["revision"] != first["revision"]
    assert copy == space_body(
        copy["id"],
        org_id,
        copy["revision"],
        title="First (copy)",
        emoji="1f4d6",
        icon=icon,
        visibility="in-collection",
        default_level="comment",
        created=now(),
        parent=collection_id,
        editMode="locked",
        language="ja",
    )
    r = await client.get(f"/v1/spaces/{first['id']}", headers=admin.headers)
    assert r.json() == original
    assert await ids_in_collection(client, collection_id, admin) == [
        first["id"],
        copy["id"],
        last["id"],
    ]

    # At the root too, right after the original; the title stays within 50 characters.
    a = await new_space(client, org_id, admin, title="A" * 50)
    b = await new_space(client, org_id, admin, title="B")
    r = await client.post(f"/v1/spaces/{a['id']}/duplicate", headers=admin.headers)
    assert r.status_code == 201
    assert r.json()["title"] == "A" * 43 + " (copy)"
    assert "parent" not in r.json()
    assert r.json()["visibility"] == "private"
    assert await ids_in_org(client, org_id, admin) == [
        a["id"],
        r.json()["id"],
        b["id"],
        first["id"],
        copy["id"],
        last["id"],
    ]


async def test_duplicate_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, reader, creator) = await factories.org_with_members(db, "read", "create")
    private = await new_space(client, org_id, admin)
    r = await client.patch(
        f"/v1/spaces/{private['id']}", json={"defaultLevel": None}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    collection_id = await new_collection(client, org_id, admin)
    inside = await new_space(client, org_id, admin, parent=collection_id)
    before = await snapshot(db)
    for who in (reader, creator):
        r = await client.post(f"/v1/spaces/{private['id']}/duplicate", headers=who.headers)
        assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    r = await client.post(f"/v1/spaces/{inside['id']}/duplicate", headers=reader.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "You cannot create content in this collection"),
    )
    assert await snapshot(db) == before
    r = await client.post(f"/v1/spaces/{inside['id']}/duplicate", headers=creator.headers)
    assert r.status_code == 201


# -- move ------------------------------------------------------------------------------------


def space_at(space_id: str) -> dict[str, Any]:
    return {"type": "space", "space": space_id}


async def test_move_space(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    a, b, c = [(await new_space(client, org_id, admin, title=t))["id"] for t in "ABC"]
    collection_id = await new_collection(client, org_id, admin)
    d = await new_space(client, org_id, admin, title="D", parent=collection_id)
    assert await ids_in_org(client, org_id, admin) == [a, b, c, d["id"]]

    async def move(space_id: str, body: dict[str, Any]) -> dict[str, Any]:
        r = await client.post(f"/v1/spaces/{space_id}/move", json=body, headers=admin.headers)
        assert r.status_code == 200, r.text
        result: dict[str, Any] = r.json()
        return result

    await move(c, {"position": {"before": space_at(a)}})
    assert await ids_in_org(client, org_id, admin) == [c, a, b, d["id"]]
    await move(c, {"position": {"after": space_at(b)}})
    assert await ids_in_org(client, org_id, admin) == [a, b, c, d["id"]]
    await move(a, {"parent": None, "position": {"after": space_at(c)}})
    assert await ids_in_org(client, org_id, admin) == [b, c, a, d["id"]]

    # Into the collection: at the end, or next to a sibling there.
    clock.advance(timedelta(seconds=1))
    moved = await move(b, {"parent": collection_id})
    assert moved["parent"] == collection_id
    assert moved["updatedAt"] == now()
    assert moved["visibility"] == "private"
    await move(c, {"parent": collection_id, "position": {"before": space_at(d["id"])}})
    await move(a, {"parent": collection_id, "position": {"after": space_at(c)}})
    assert await ids_in_collection(client, collection_id, admin) == [c, a, d["id"], b]
    assert await ids_in_org(client, org_id, admin) == [c, a, d["id"], b]
    # Within the collection, a position alone keeps the parent.
    await move(b, {"position": {"before": space_at(c)}})
    assert await ids_in_collection(client, collection_id, admin) == [b, c, a, d["id"]]

    # Out to the root: a space that followed its collection becomes private.
    clock.advance(timedelta(seconds=1))
    out = await move(d["id"], {"parent": None})
    assert out == {k: v for k, v in d.items() if k != "parent"} | {
        "visibility": "private",
        "updatedAt": now(),
    }
    assert await ids_in_org(client, org_id, admin) == [d["id"], b, c, a]
    assert await ids_in_collection(client, collection_id, admin) == [b, c, a]


async def test_new_content_goes_after_a_gap(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    """Items leaving a parent leave gaps in its positions; what arrives next still goes last
    (it once took the sibling count as its position, landing before or tying with the rest)."""
    org_id, (admin,) = await factories.org_with_members(db)
    collection_id = await new_collection(client, org_id, admin)
    a, b, c = [(await new_space(client, org_id, admin, parent=collection_id))["id"] for _ in "abc"]
    r = await client.post(f"/v1/spaces/{a}/move", json={"parent": None}, headers=admin.headers)
    assert r.status_code == 200
    r = await client.delete(f"/v1/spaces/{b}", headers=admin.headers)
    assert r.status_code == 205
    d = (await new_space(client, org_id, admin, parent=collection_id))["id"]
    assert await ids_in_collection(client, collection_id, admin) == [c, d]
    r = await client.post(f"/v1/spaces/{b}/restore", headers=admin.headers)
    assert r.status_code == 200
    assert await ids_in_collection(client, collection_id, admin) == [c, d, b]
    e = await new_collection(client, org_id, admin, parent=collection_id)
    r = await client.post(
        f"/v1/spaces/{a}/move",
        json={
            "parent": collection_id,
            "position": {"before": {"type": "collection", "collection": e}},
        },
        headers=admin.headers,
    )
    assert r.status_code == 200
    assert await ids_in_collection(client, collection_id, admin) == [c, d, b, a]


async def test_move_space_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    collection_id = await new_collection(client, org_id, admin)
    root = await new_space(client, org_id, admin)
    inside = await new_space(client, org_id, admin, parent=collection_id)
    other = await new_space(client, org_id, admin, parent=collection_id)
    url = f"/v1/spaces/{root['id']}/move"
    before = await snapshot(db)

    r = await client.post(url, json={}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field: give 'parent' and/or 'position'"),
    )
    r = await client.post(
        url, json={"position": {"before": space_at(inside["id"])}}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Invalid body field 'position': space '{inside['id']}' is not in the target "
              "parent"),
    )  # fmt: skip
    r = await client.post(
        url,
        json={"parent": collection_id, "position": {"after": space_at(root["id"])}},
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'position': an item cannot be placed relative to itself"),
    )
    r = await client.post(
        url,
        json={"position": {"before": space_at(other["id"]), "after": space_at(inside["id"])}},
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'position': give 'before' or 'after', not both"),
    )
    r = await client.post(url, json={"parent": "nope"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'parent': collection 'nope' not found"),
    )
    r = await client.post(
        f"/v1/spaces/{inside['id']}/move", json={"parent": None}, headers=editor.headers
    )
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    assert await snapshot(db) == before


# -- transfer --------------------------------------------------------------------------------


async def test_transfer_space(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_a, (admin, editor) = await factories.org_with_members(db, "edit")
    org_b, (admin_b,) = await factories.org_with_members(db)
    await factories.member(db, org=org_b, who=admin, role="admin")
    collection_id = await new_collection(client, org_a, admin)
    space = await new_space(client, org_a, admin, title="Moving", parent=collection_id)
    staying = await new_space(client, org_a, admin, title="Staying", parent=collection_id)
    resident = (await new_space(client, org_b, admin_b, title="Resident"))["id"]
    sid = space["id"]
    r = await client.get(f"/v1/spaces/{sid}", headers=editor.headers)
    assert r.status_code == 200

    clock.advance(timedelta(minutes=1))
    r = await client.post(
        f"/v1/spaces/{sid}/transfer", json={"organization": org_b}, headers=admin.headers
    )
    assert r.status_code == 200
    # At the target's root: no parent, and private rather than following a collection.
    moved = {k: v for k, v in space.items() if k != "parent"} | {
        "organization": org_b,
        "visibility": "private",
        "updatedAt": now(),
    }
    assert r.json() == moved
    r = await client.get(f"/v1/spaces/{sid}", headers=admin_b.headers)
    assert r.json() == moved
    r = await client.get(f"/v1/spaces/{sid}", headers=editor.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    assert await ids_in_org(client, org_a, admin) == [staying["id"]]
    assert await ids_in_collection(client, collection_id, admin) == [staying["id"]]
    assert await ids_in_org(client, org_b, admin_b) == [resident, sid]


async def test_transfer_space_into_collection(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_a, (admin,) = await factories.org_with_members(db)
    org_b, (admin_b,) = await factories.org_with_members(db)
    await factories.member(db, org=org_b, who=admin, role="admin")
    target = await new_collection(client, org_b, admin_b)
    space = await new_space(client, org_a, admin)
    r = await client.post(
        f"/v1/spaces/{space['id']}/transfer",
        json={"organization": org_b, "parent": target},
        headers=admin.headers,
    )
    assert r.status_code == 200
    assert r.json() == space | {"organization": org_b, "parent": target}
    assert await ids_in_collection(client, target, admin_b) == [space["id"]]


async def test_transfer_space_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_a, (admin, creator) = await factories.org_with_members(db, "create")
    org_b, _ = await factories.org_with_members(db)
    await factories.member(db, org=org_b, who=admin, role="edit")
    await factories.member(db, org=org_b, who=creator, role="admin")
    org_c, _ = await factories.org_with_members(db)
    space = await new_space(client, org_a, admin)
    own = await new_space(client, org_a, creator)
    before = await snapshot(db)

    url = f"/v1/spaces/{space['id']}/transfer"
    r = await client.post(url, json={"organization": org_b}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "You must be an admin of the target organization"),
    )
    for target in ("nope", org_c):
        r = await client.post(url, json={"organization": target}, headers=admin.headers)
        assert (r.status_code, r.json()) == (
            400,
            error(400, f"Invalid body field 'organization': organization '{target}' not found"),
        )
    r = await client.post(url, json={}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Missing required body field 'organization'"),
    )
    # Administering the space is not enough: the source organization's admins decide.
    r = await client.post(
        f"/v1/spaces/{own['id']}/transfer", json={"organization": org_b}, headers=creator.headers
    )
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can transfer spaces"),
    )
    assert await snapshot(db) == before
