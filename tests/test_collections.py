"""Collections over HTTP: create, list, update, delete (with the spaces inside), move, order
shared with spaces, transfer, and the spaces listing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from docshelf.models import spaces
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, listing, snapshot

COLLECTION_NOT_FOUND = error(404, "Collection not found")
SPACE_NOT_FOUND = error(404, "Space not found")
ADMIN_ONLY = error(403, "Only admins of the collection can do this")
RANKS = ("read", "comment", "edit", "review", "create", "admin")


def now() -> str:
    return isoformat(clock.now()) or ""


def collection_body(
    collection_id: str,
    org_id: str,
    *,
    title: str = "Untitled collection",
    default_level: str | None = "inherit",
    role: str = "admin",
    **extra: Any,
) -> dict[str, Any]:
    """The whole Collection object; `extra` holds the optional keys (description, parent)."""
    rank = RANKS.index(role)
    body: dict[str, Any] = {
        "object": "collection",
        "id": collection_id,
        "title": title,
        "organization": org_id,
        "defaultLevel": default_level,
        "urls": {
            "location": f"{BASE}/v1/collections/{collection_id}",
            "app": f"{BASE}/c/{collection_id}/",
        },
        "permissions": {
            "view": True,
            "admin": rank >= RANKS.index("admin"),
            "viewInviteLinks": rank >= RANKS.index("admin"),
            "create": rank >= RANKS.index("create"),
        },
    }
    body.update(extra)
    return body


async def collection_ids(
    client: httpx.AsyncClient, org_id: str, who: Who, **params: Any
) -> list[str]:
    r = await client.get(f"/v1/orgs/{org_id}/collections", params=params, headers=who.headers)
    assert r.status_code == 200, r.text
    return [c["id"] for c in r.json()["items"]]


async def space_ids(client: httpx.AsyncClient, org_id: str, who: Who) -> list[str]:
    r = await client.get(f"/v1/orgs/{org_id}/spaces", headers=who.headers)
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["items"]]


async def spaces_in(client: httpx.AsyncClient, collection_id: str, who: Who) -> list[str]:
    r = await client.get(f"/v1/collections/{collection_id}/spaces", headers=who.headers)
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["items"]]


def by_parent(*groups: tuple[str, list[str]]) -> list[str]:
    """A nested listing's order: grouped by parent id ("" for the root, so first), each group in
    its own order."""
    return [item for _, items in sorted(groups) for item in items]


def at(kind: str, item_id: str) -> dict[str, str]:
    return {"type": kind, kind: item_id}


# -- create, list, get, update ---------------------------------------------------------------


async def new_space(client: httpx.AsyncClient, org_id: str, who: Who, **body: Any) -> str:
    return str((await factories.api_space(client, org_id, who, **body))["id"])


new_collection = factories.api_collection


async def test_collection_lifecycle(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    url = f"/v1/orgs/{org_id}/collections"
    r = await client.post(url, headers=admin.headers)
    assert r.status_code == 201
    untitled = r.json()
    assert r.headers["location"] == f"{BASE}/v1/collections/{untitled['id']}"
    assert untitled == collection_body(untitled["id"], org_id)

    r = await client.post(url, json={"title": "  Guides "}, headers=admin.headers)
    assert r.status_code == 201
    guides = r.json()
    assert guides == collection_body(guides["id"], org_id, title="Guides")
    r = await client.post(
        url, json={"title": "Nested", "parent": guides["id"]}, headers=admin.headers
    )
    assert r.status_code == 201
    nested = r.json()
    assert r.headers["location"] == nested["urls"]["location"]
    assert nested == collection_body(nested["id"], org_id, title="Nested", parent=guides["id"])

    # Root first, each level in its own order; nested=false keeps the root only.
    r = await client.get(url, headers=admin.headers)
    assert r.json() == listing(untitled, guides, nested)
    r = await client.get(url, params={"nested": "true"}, headers=admin.headers)
    assert r.json() == listing(untitled, guides, nested)
    r = await client.get(url, params={"nested": "false"}, headers=admin.headers)
    assert r.json() == listing(untitled, guides)
    r = await client.get(url, params={"limit": 2}, headers=admin.headers)
    page2 = await client.get(
        url, params={"limit": 2, "page": r.json()["next"]["page"]}, headers=admin.headers
    )
    assert page2.json() == listing(nested) | {"count": 3}
    r = await client.get(url, headers=editor.headers)
    editor_view = [c | {"permissions": collection_body(c["id"], org_id, role="edit")["permissions"]}
                   for c in (untitled, guides, nested)]  # fmt: skip
    assert r.json() == listing(*editor_view)

    r = await client.get(f"/v1/collections/{nested['id']}", headers=admin.headers)
    assert r.json() == nested
    r = await client.get(f"/v1/collections/{nested['id']}", headers=editor.headers)
    assert r.json() == editor_view[2]

    item = f"/v1/collections/{guides['id']}"
    r = await client.patch(
        item,
        json={"title": "T" * 50, "description": "D" * 100, "defaultLevel": "read"},
        headers=admin.headers,
    )
    assert r.status_code == 200
    assert r.json() == collection_body(
        guides["id"], org_id, title="T" * 50, default_level="read", description="D" * 100
    )
    r = await client.patch(item, json={"defaultLevel": None}, headers=admin.headers)
    assert r.json() == collection_body(
        guides["id"], org_id, title="T" * 50, default_level=None, description="D" * 100
    )
    r = await client.patch(
        item, json={"description": None, "defaultLevel": "inherit"}, headers=admin.headers
    )
    assert r.json() == collection_body(guides["id"], org_id, title="T" * 50)
    r = await client.patch(item, json={}, headers=admin.headers)
    assert r.json() == collection_body(guides["id"], org_id, title="T" * 50)
    # A value none of the levels: the message names every level allowed, not pydantic's parts.
    r = await client.patch(item, json={"defaultLevel": "boss"}, headers=admin.headers)
    assert r.json() == error(
        400,
        "Invalid body field 'defaultLevel': Input should be 'admin', 'create', 'review', 'edit',"
        " 'comment', 'read' or 'inherit'",
    )
    r = await client.get(item, headers=admin.headers)
    assert r.json() == collection_body(guides["id"], org_id, title="T" * 50)


async def test_default_level_caps_members(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    top = await new_collection(client, org_id, admin, title="Top")
    child = await new_collection(client, org_id, admin, title="Child", parent=top["id"])
    r = await client.patch(
        f"/v1/collections/{top['id']}", json={"defaultLevel": "read"}, headers=admin.headers
    )
    assert r.status_code == 200
    # The child inherits the cap.
    r = await client.get(f"/v1/collections/{child['id']}", headers=editor.headers)
    assert r.json() == collection_body(
        child["id"], org_id, title="Child", role="read", parent=top["id"]
    )
    r = await client.patch(
        f"/v1/collections/{top['id']}", json={"defaultLevel": None}, headers=admin.headers
    )
    for cid in (top["id"], child["id"]):
        r = await client.get(f"/v1/collections/{cid}", headers=editor.headers)
        assert (r.status_code, r.json()) == (404, COLLECTION_NOT_FOUND)
    assert await collection_ids(client, org_id, editor) == []


async def test_collection_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    other_org, (other_admin,) = await factories.org_with_members(db)
    foreign = await new_collection(client, other_org, other_admin)
    guides = await new_collection(client, org_id, admin, title="Guides")
    url = f"/v1/orgs/{org_id}/collections"
    item = f"/v1/collections/{guides['id']}"
    before = await snapshot(db)

    for parent in ("nope", foreign["id"]):
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
    r = await client.post(url, json={"parent": guides["id"]}, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "You cannot create content in this collection"),
    )
    bad_bodies = [
        {"title": "T" * 51},
        {"title": ""},
        {"description": "D" * 101},
        {"defaultLevel": "owner"},
        {"color": "red"},
    ]
    for body in bad_bodies:
        r = await client.patch(item, json=body, headers=admin.headers)
        assert r.status_code == 400, body
        assert r.json()["error"]["code"] == 400
    r = await client.patch(item, json={"title": None}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'title': must not be null"),
    )
    r = await client.patch(item, json={"title": "Mine"}, headers=editor.headers)
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    r = await client.delete(item, headers=editor.headers)
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    r = await client.get(item, headers=other_admin.headers)
    assert (r.status_code, r.json()) == (404, COLLECTION_NOT_FOUND)
    assert await snapshot(db) == before


# -- delete ----------------------------------------------------------------------------------


async def test_delete_collection(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    top = await new_collection(client, org_id, admin, title="Top")
    mid = await new_collection(client, org_id, admin, title="Mid", parent=top["id"])
    leaf = await new_collection(client, org_id, admin, title="Leaf", parent=mid["id"])
    keep = await new_collection(client, org_id, admin, title="Keep")
    root_space = await new_space(client, org_id, admin, title="Root", default_level=None)
    in_top = await new_space(client, org_id, admin, parent=top["id"])
    in_leaf = await new_space(client, org_id, admin, parent=leaf["id"])
    public_in_mid = await new_space(
        client, org_id, admin, parent=mid["id"], visibility="public", title="Public"
    )
    in_keep = await new_space(client, org_id, admin, parent=keep["id"])

    clock.advance(timedelta(hours=1))
    r = await client.delete(f"/v1/collections/{top['id']}", headers=admin.headers)
    assert (r.status_code, r.content) == (205, b"")
    deleted_at = now()

    for c in (top, mid, leaf):
        r = await client.get(f"/v1/collections/{c['id']}", headers=admin.headers)
        assert (r.status_code, r.json()) == (404, COLLECTION_NOT_FOUND)
        r = await client.get(f"/v1/collections/{c['id']}/spaces", headers=admin.headers)
        assert (r.status_code, r.json()) == (404, COLLECTION_NOT_FOUND)
    assert await collection_ids(client, org_id, admin) == [keep["id"]]
    assert await space_ids(client, org_id, admin) == [root_space, in_keep]
    assert await space_ids(client, org_id, editor) == [in_keep]
    for sid in (in_top, in_leaf, public_in_mid):
        r = await client.get(f"/v1/spaces/{sid}", headers=admin.headers)
        assert (r.status_code, r.json()["deletedAt"]) == (200, deleted_at)
        assert "parent" not in r.json()
        r = await client.get(f"/v1/spaces/{sid}", headers=editor.headers)
        assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)

    # Restored at the organization root: no parent, private unless it had its own visibility.
    clock.advance(timedelta(days=1))
    r = await client.post(f"/v1/spaces/{in_leaf}/restore", headers=admin.headers)
    assert r.status_code == 200
    restored = r.json()
    assert (restored["visibility"], restored["updatedAt"]) == ("private", now())
    assert "parent" not in restored
    assert "deletedAt" not in restored
    r = await client.post(f"/v1/spaces/{public_in_mid}/restore", headers=admin.headers)
    assert r.status_code == 200
    assert r.json()["visibility"] == "public"
    assert "parent" not in r.json()
    assert await space_ids(client, org_id, admin) == [root_space, in_leaf, public_in_mid, in_keep]
    r = await client.get(f"/v1/spaces/{public_in_mid}", headers=editor.headers)
    assert r.status_code == 200

    # Seven days after the deletion, what was not restored is purged.
    clock.advance(timedelta(days=6))
    r = await client.post(f"/v1/spaces/{in_top}/restore", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)
    await JobRunner(db, job_env).drain()
    async with db.connect() as conn:
        rows = await conn.execute(sa.select(spaces.c.id).where(spaces.c.organization_id == org_id))
        assert sorted(rows.scalars()) == sorted([root_space, in_leaf, public_in_mid, in_keep])
    r = await client.get(f"/v1/spaces/{in_top}", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)


async def test_delete_nested_collection(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    top = await new_collection(client, org_id, admin, title="Top")
    child = await new_collection(client, org_id, admin, title="Child", parent=top["id"])
    sibling = await new_collection(client, org_id, admin, title="Sibling", parent=top["id"])
    in_top = await new_space(client, org_id, admin, parent=top["id"])
    in_child = await new_space(client, org_id, admin, parent=child["id"])
    r = await client.delete(f"/v1/collections/{child['id']}", headers=admin.headers)
    assert r.status_code == 205
    assert await collection_ids(client, org_id, admin) == [top["id"], sibling["id"]]
    assert await space_ids(client, org_id, admin) == [in_top]
    r = await client.post(f"/v1/spaces/{in_child}/restore", headers=admin.headers)
    assert "parent" not in r.json()
    assert await space_ids(client, org_id, admin) == [in_child, in_top]


# -- move and order --------------------------------------------------------------------------


async def test_move_collection(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    a = await new_collection(client, org_id, admin, title="A")
    a1 = await new_collection(client, org_id, admin, title="A1", parent=a["id"])
    a11 = await new_collection(client, org_id, admin, title="A11", parent=a1["id"])
    b = await new_collection(client, org_id, admin, title="B")
    in_b = await new_space(client, org_id, admin, parent=b["id"])

    clock.advance(timedelta(seconds=1))
    r = await client.post(
        f"/v1/collections/{b['id']}/move", json={"parent": a["id"]}, headers=admin.headers
    )
    assert r.status_code == 200
    assert r.json() == b | {"parent": a["id"]}
    assert await collection_ids(client, org_id, admin, nested="false") == [a["id"]]
    assert await collection_ids(client, org_id, admin) == by_parent(
        ("", [a["id"]]), (a["id"], [a1["id"], b["id"]]), (a1["id"], [a11["id"]])
    )
    # Its spaces come along.
    assert await spaces_in(client, b["id"], admin) == [in_b]

    before = await snapshot(db)
    for target in (a["id"], a1["id"], a11["id"]):
        r = await client.post(
            f"/v1/collections/{a['id']}/move", json={"parent": target}, headers=admin.headers
        )
        assert (r.status_code, r.json()) == (
            400,
            error(400, "Invalid body field 'parent': a collection cannot move into itself or a "
                  "descendant"),
        )  # fmt: skip
    r = await client.post(
        f"/v1/collections/{a1['id']}/move", json={"parent": "nope"}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'parent': collection 'nope' not found"),
    )
    r = await client.post(f"/v1/collections/{a1['id']}/move", json={}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field: give 'parent' and/or 'position'"),
    )
    r = await client.post(
        f"/v1/collections/{a1['id']}/move",
        json={"position": {"before": at("collection", a["id"])}},
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Invalid body field 'position': collection '{a['id']}' is not in the target "
              "parent"),
    )  # fmt: skip
    r = await client.post(
        f"/v1/collections/{a1['id']}/move", json={"parent": None}, headers=editor.headers
    )
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    assert await snapshot(db) == before

    # Out to the root, before A; A11 comes along.
    r = await client.post(
        f"/v1/collections/{a1['id']}/move",
        json={"parent": None, "position": {"before": at("collection", a["id"])}},
        headers=admin.headers,
    )
    assert r.status_code == 200
    assert "parent" not in r.json()
    assert await collection_ids(client, org_id, admin, nested="false") == [a1["id"], a["id"]]
    r = await client.get(f"/v1/collections/{a11['id']}", headers=admin.headers)
    assert r.json()["parent"] == a1["id"]


async def test_collections_and_spaces_share_one_order(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    parent = (await new_collection(client, org_id, admin, title="Parent"))["id"]
    x = (await new_collection(client, org_id, admin, title="X", parent=parent))["id"]
    s1 = await new_space(client, org_id, admin, title="s1", parent=parent)
    y = (await new_collection(client, org_id, admin, title="Y", parent=parent))["id"]
    s2 = await new_space(client, org_id, admin, title="s2", parent=parent)
    # Order: X, s1, Y, s2.

    async def move(kind: str, item: str, position: dict[str, Any]) -> None:
        r = await client.post(
            f"/v1/{kind}s/{item}/move", json={"position": position}, headers=admin.headers
        )
        assert r.status_code == 200, r.text

    async def children() -> tuple[list[str], list[str]]:
        cols = await collection_ids(client, org_id, admin)
        return [c for c in cols if c not in (parent,)], await spaces_in(client, parent, admin)

    await move("space", s2, {"before": at("collection", x)})  # s2, X, s1, Y
    assert await children() == ([x, y], [s2, s1])
    await move("collection", y, {"before": at("space", s2)})  # Y, s2, X, s1
    assert await children() == ([y, x], [s2, s1])
    await move("space", s1, {"after": at("collection", y)})  # Y, s1, s2, X
    assert await children() == ([y, x], [s1, s2])
    await move("collection", x, {"after": at("space", s2)})  # Y, s1, s2, X (unchanged)
    await move("collection", y, {"after": at("collection", x)})  # s1, s2, X, Y
    assert await children() == ([x, y], [s1, s2])
    await move("space", s2, {"before": at("space", s1)})  # s2, s1, X, Y
    assert await children() == ([x, y], [s2, s1])
    # A new item goes last, after collections and spaces alike.
    z = (await new_collection(client, org_id, admin, title="Z", parent=parent))["id"]
    s3 = await new_space(client, org_id, admin, title="s3", parent=parent)
    await move("space", s3, {"before": at("collection", z)})  # s2, s1, X, Y, s3, Z
    await move("collection", x, {"after": at("space", s3)})  # s2, s1, Y, s3, X, Z
    await move("space", s2, {"after": at("collection", x)})  # s1, Y, s3, X, s2, Z
    assert await children() == ([y, x, z], [s1, s3, s2])


# -- transfer --------------------------------------------------------------------------------


async def test_transfer_collection(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_a, (admin, editor) = await factories.org_with_members(db, "edit")
    org_b, (admin_b,) = await factories.org_with_members(db)
    await factories.member(db, org=org_b, who=admin, role="admin")
    resident = await new_collection(client, org_b, admin_b, title="Resident")
    top = await new_collection(client, org_a, admin, title="Top")
    mid = await new_collection(client, org_a, admin, title="Mid", parent=top["id"])
    outer = await new_collection(client, org_a, admin, title="Outer")
    r = await client.post(
        f"/v1/collections/{top['id']}/move", json={"parent": outer["id"]}, headers=admin.headers
    )
    assert r.status_code == 200
    in_top = await new_space(client, org_a, admin, parent=top["id"])
    in_mid = await new_space(client, org_a, admin, parent=mid["id"])
    at_root = await new_space(client, org_a, admin)
    r = await client.get(f"/v1/spaces/{in_mid}", headers=editor.headers)
    assert r.status_code == 200
    space_before = r.json()

    clock.advance(timedelta(minutes=1))
    r = await client.post(
        f"/v1/collections/{top['id']}/transfer", json={"organization": org_b}, headers=admin.headers
    )
    assert r.status_code == 200
    # It lands at the target's root, after what is there.
    moved = collection_body(top["id"], org_b, title="Top")
    assert r.json() == moved
    r = await client.get(f"/v1/collections/{top['id']}", headers=admin_b.headers)
    assert r.json() == moved
    r = await client.get(f"/v1/collections/{mid['id']}", headers=admin_b.headers)
    assert r.json() == collection_body(mid["id"], org_b, title="Mid", parent=top["id"])
    r = await client.get(f"/v1/spaces/{in_mid}", headers=admin_b.headers)
    assert r.json() == space_before | {
        "organization": org_b,
        "updatedAt": now(),
        "permissions": r.json()["permissions"],
    }
    assert r.json()["permissions"]["admin"] is True

    assert await collection_ids(client, org_b, admin_b) == by_parent(
        ("", [resident["id"], top["id"]]), (top["id"], [mid["id"]])
    )
    assert await space_ids(client, org_b, admin_b) == by_parent(
        (top["id"], [in_top]), (mid["id"], [in_mid])
    )
    assert await spaces_in(client, mid["id"], admin_b) == [in_mid]
    assert await collection_ids(client, org_a, admin) == [outer["id"]]
    assert await space_ids(client, org_a, admin) == [at_root]
    # Members of the old organization only no longer see any of it.
    for path in (f"/v1/collections/{top['id']}", f"/v1/collections/{mid['id']}"):
        r = await client.get(path, headers=editor.headers)
        assert (r.status_code, r.json()) == (404, COLLECTION_NOT_FOUND)
    for sid in (in_top, in_mid):
        r = await client.get(f"/v1/spaces/{sid}", headers=editor.headers)
        assert (r.status_code, r.json()) == (404, SPACE_NOT_FOUND)


async def test_transfer_collection_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_a, (admin, editor) = await factories.org_with_members(db, "edit")
    org_b, _ = await factories.org_with_members(db)
    await factories.member(db, org=org_b, who=admin, role="create")
    org_c, _ = await factories.org_with_members(db)
    top = await new_collection(client, org_a, admin)
    url = f"/v1/collections/{top['id']}/transfer"
    before = await snapshot(db)

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
    r = await client.post(url, json={"organization": org_a}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'organization': the collection is already in this "
              "organization"),
    )  # fmt: skip
    r = await client.post(url, json={"organization": org_b}, headers=editor.headers)
    assert (r.status_code, r.json()) == (403, ADMIN_ONLY)
    assert await snapshot(db) == before


# -- the spaces listing ----------------------------------------------------------------------


async def test_collection_spaces_listing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    guides = (await new_collection(client, org_id, admin, title="Guides"))["id"]
    inner = (await new_collection(client, org_id, admin, parent=guides))["id"]
    await new_space(client, org_id, admin, parent=inner)
    await new_space(client, org_id, admin)
    first = await new_space(client, org_id, admin, title="First", parent=guides)
    hidden = await new_space(
        client, org_id, admin, parent=guides, visibility="private", default_level=None
    )
    last = await new_space(client, org_id, admin, title="Last", parent=guides)
    r = await client.post(
        f"/v1/spaces/{last}/move",
        json={"position": {"before": at("space", first)}},
        headers=admin.headers,
    )
    assert r.status_code == 200

    url = f"/v1/collections/{guides}/spaces"
    r = await client.get(url, headers=admin.headers)
    bodies = {s["id"]: s for s in r.json()["items"]}
    assert r.json() == listing(*(bodies[s] for s in (last, first, hidden)))
    for s in (last, first, hidden):
        r = await client.get(f"/v1/spaces/{s}", headers=admin.headers)
        assert r.json() == bodies[s]

    r = await client.get(url, params={"limit": 2}, headers=admin.headers)
    assert [s["id"] for s in r.json()["items"]] == [last, first]
    assert r.json()["count"] == 3
    r = await client.get(
        url, params={"limit": 2, "page": r.json()["next"]["page"]}, headers=admin.headers
    )
    assert r.json() == listing(bodies[hidden]) | {"count": 3}

    # A member sees what they may see: not the private one.
    assert await spaces_in(client, guides, editor) == [last, first]
    r = await client.get(url, headers=editor.headers)
    assert r.json()["count"] == 2
    r = await client.get("/v1/collections/nope/spaces", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, COLLECTION_NOT_FOUND)


async def test_concurrent_creations_get_distinct_positions(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    import asyncio

    org_id, (admin,) = await factories.org_with_members(db)
    results = await asyncio.gather(
        *(
            client.post(f"/v1/orgs/{org_id}/spaces", json={"title": f"S{i}"}, headers=admin.headers)
            for i in range(6)
        )
    )
    assert [r.status_code for r in results] == [201] * 6
    async with db.connect() as conn:
        positions = (await conn.execute(sa.select(spaces.c.position))).scalars().all()
    assert len(set(positions)) == 6
