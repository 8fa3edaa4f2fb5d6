"""Listings cost one page: counts carried by the cursor, visibility without per-item parameters,
collection trees of any size, moves that write few rows."""

from __future__ import annotations

import base64

import httpx
import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from tests import factories
from tests.helpers import error, snapshot


async def test_count_is_taken_on_the_first_page_and_carried(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, *_) = await factories.org_with_members(db, "read", "read", "read")
    url = f"/v1/orgs/{org_id}/members"
    first = (await client.get(url, params={"limit": 2}, headers=admin.headers)).json()
    assert first["count"] == 4 and len(first["items"]) == 2
    # Someone joins between pages: the paging goes on with the count it began with.
    late = await factories.user(db)
    await factories.member(db, org=org_id, who=late, role="read")
    second = (
        await client.get(
            url, params={"limit": 2, "page": first["next"]["page"]}, headers=admin.headers
        )
    ).json()
    assert second["count"] == 4
    fresh = (await client.get(url, params={"limit": 2}, headers=admin.headers)).json()
    assert fresh["count"] == 5

    # A cursor whose carried count was tampered with is refused and changes nothing.
    raw = orjson.loads(base64.urlsafe_b64decode(first["next"]["page"] + "=="))
    before = await snapshot(db)
    for bad in ("x", -1, True, None):
        raw["v"][-1] = bad
        cursor = base64.urlsafe_b64encode(orjson.dumps(raw)).rstrip(b"=").decode()
        r = await client.get(url, params={"limit": 2, "page": cursor}, headers=admin.headers)
        assert r.json() == error(
            400, "Invalid query parameter 'page': not a cursor returned by this listing"
        )
    assert await snapshot(db) == before
