"""Change requests without content yet: numbering, statuses, listing, counters, refusals."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, snapshot, user_body


def cr_body(
    space: dict[str, Any], cr_id: str, number: int, who: Who, **extra: Any
) -> dict[str, Any]:
    sid = space["id"]
    body = {
        "object": "change-request",
        "id": cr_id,
        "number": number,
        "status": "open",
        "subject": "",
        "createdBy": user_body(who),
        "space": sid,
        "createdAt": isoformat(clock.now()),
        "updatedAt": isoformat(clock.now()),
        "revision": space["revision"],
        "revisionInitial": space["revision"],
        "comments": 0,
        "outdated": False,
        "urls": {
            "location": f"{BASE}/v1/spaces/{sid}/change-requests/{cr_id}",
            "app": f"{BASE}/s/{sid}/~/changes/{number}/",
        },
    }
    body.update(extra)
    return body


async def test_lifecycle(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor, reader) = await factories.org_with_members(db, "edit", "read")
    space = await factories.api_space(client, org_id, admin, visibility="unlisted")
    url = f"/v1/spaces/{space['id']}/change-requests"

    r = await client.post(url, json={"subject": "  Fix typos "}, headers=editor.headers)
    assert r.status_code == 201
    first = r.json()
    assert first == cr_body(space, first["id"], 1, editor, subject="Fix typos")
    assert r.headers["location"] == first["urls"]["location"]
    clock.advance(timedelta(seconds=1))
    r = await client.post(url, headers=admin.headers)
    second = r.json()
    assert second == cr_body(space, second["id"], 2, admin)

    # By id or by number, for anyone who can read the space.
    assert (await client.get(f"{url}/1", headers=reader.headers)).json() == first
    assert (await client.get(f"{url}/{second['id']}", headers=reader.headers)).json() == second
    r = await client.get(f"{url}/3", headers=reader.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Change request not found"))

    # Listing: open by default, most recently updated first; contributor filter.
    r = await client.get(url, headers=reader.headers)
    assert r.json() == {"items": [second, first], "count": 2}
    r = await client.get(url, params={"contributor": editor.id}, headers=reader.headers)
    assert [c["number"] for c in r.json()["items"]] == [1]

    clock.advance(timedelta(seconds=1))
    r = await client.patch(
        f"{url}/1", json={"status": "draft", "subject": "WIP"}, headers=editor.headers
    )
    assert r.json() == cr_body(
        space, first["id"], 1, editor, status="draft", subject="WIP", createdAt=first["createdAt"]
    )
    r = await client.patch(
        f"{url}/2",
        json={"status": "archived"},
        headers=admin.headers,
    )
    assert r.json()["status"] == "archived"
    r = await client.get(url, params={"status": "draft"}, headers=reader.headers)
    assert [c["number"] for c in r.json()["items"]] == [1]
    assert (await client.get(url, headers=reader.headers)).json() == {"items": [], "count": 0}

    # The space counts them.
    r = await client.get(f"/v1/spaces/{space['id']}", headers=reader.headers)
    counts = {
        k: r.json()[k] for k in ("changeRequests", "changeRequestsOpen", "changeRequestsDraft")
    }
    assert counts == {"changeRequests": 2, "changeRequestsOpen": 0, "changeRequestsDraft": 1}

    # GitBook's Prefer: return=minimal.
    r = await client.patch(
        f"{url}/1", json={"status": "open"}, headers={**editor.headers, "Prefer": "return=minimal"}
    )
    assert (r.status_code, r.content, r.headers["preference-applied"]) == (
        204,
        b"",
        "return=minimal",
    )


async def test_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor, reader) = await factories.org_with_members(db, "edit", "read")
    space = await factories.api_space(client, org_id, admin, visibility="unlisted")
    hidden = await factories.api_space(client, org_id, admin, default_level=None)
    url = f"/v1/spaces/{space['id']}/change-requests"
    await client.post(url, headers=editor.headers)
    before = await snapshot(db)
    r = await client.post(url, headers=reader.headers)
    assert (r.status_code, r.json()) == (403, error(403, "You cannot edit this space"))
    r = await client.patch(f"{url}/1", json={"subject": "x"}, headers=reader.headers)
    assert (r.status_code, r.json()) == (403, error(403, "You cannot edit this change request"))
    r = await client.post(f"/v1/spaces/{hidden['id']}/change-requests", headers=editor.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Space not found"))
    r = await client.patch(f"{url}/1", json={"status": "merged"}, headers=editor.headers)
    assert r.status_code == 400
    r = await client.patch(f"{url}/1", json={"subject": "x" * 101}, headers=editor.headers)
    assert r.status_code == 400
    assert await snapshot(db) == before
    await client.patch(
        f"/v1/spaces/{space['id']}", json={"editMode": "locked"}, headers=admin.headers
    )
    before = await snapshot(db)
    r = await client.post(url, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "The space is locked: its content cannot be changed"),
    )
    assert await snapshot(db) == before


async def test_concurrent_creation_gets_unique_numbers(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    url = f"/v1/spaces/{space['id']}/change-requests"
    results = await asyncio.gather(*(client.post(url, headers=admin.headers) for _ in range(10)))
    assert [r.status_code for r in results] == [201] * 10
    assert sorted(r.json()["number"] for r in results) == list(range(1, 11))
    copy = (await client.post(f"/v1/spaces/{space['id']}/duplicate", headers=admin.headers)).json()
    r = await client.post(f"/v1/spaces/{copy['id']}/change-requests", headers=admin.headers)
    assert r.json()["number"] == 1  # numbers are per space


async def test_locked_space_refuses_updates_and_refs_are_canonical(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    space = await factories.api_space(client, org_id, admin, visibility="unlisted")
    url = f"/v1/spaces/{space['id']}/change-requests"
    assert (await client.post(url, headers=editor.headers)).status_code == 201
    for ref in ("01", "\u0661", "+1"):
        r = await client.get(f"{url}/{ref}", headers=editor.headers)
        assert (r.status_code, r.json()) == (404, error(404, "Change request not found")), ref
    for prefer in ("return=minimal", "Return=Minimal", "handling=lenient, return=minimal; x"):
        r = await client.patch(
            f"{url}/1", json={"subject": "s"}, headers={**editor.headers, "Prefer": prefer}
        )
        assert r.status_code == 204, prefer
    r = await client.patch(
        f"{url}/1", json={"subject": "s"}, headers={**editor.headers, "Prefer": "x" * 500}
    )
    assert r.status_code == 200
    await client.patch(
        f"/v1/spaces/{space['id']}", json={"editMode": "locked"}, headers=admin.headers
    )
    before = await snapshot(db)
    r = await client.patch(f"{url}/1", json={"status": "archived"}, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "The space is locked: its content cannot be changed"),
    )
    assert await snapshot(db) == before
