"""Page listings come from a per-process cache keyed by the revision's pages map: the bytes are
the ones a fresh build gives, a new revision is listed fresh, and the space in the key keeps two
spaces with the same content apart."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.test_content import LAYOUT, insert, new_cr, write


async def live_space(client: httpx.AsyncClient, db: AsyncEngine) -> tuple[str, Who]:
    org_id, (admin, *_) = await factories.org_with_members(db, "admin")
    space = await factories.api_space(client, org_id, admin, editMode="live")
    return space["id"], admin


async def listing(client: httpx.AsyncClient, url: str, who: Who) -> bytes:
    r = await client.get(url, headers=who.headers)
    assert r.status_code == 200, r.text
    return r.content


async def built_fresh(client: httpx.AsyncClient, url: str, who: Who) -> bytes:
    """The listing as the revision read builds it, tree and all, on every request."""
    r = await client.get(url, headers=who.headers)
    assert r.status_code == 200, r.text
    return orjson.dumps({"pages": r.json()["pages"]})


async def write_live(
    client: httpx.AsyncClient, sid: str, who: Who, *changes: dict[str, Any]
) -> dict[str, Any]:
    r = await client.post(
        f"/v1/spaces/{sid}/content", json={"changes": list(changes)}, headers=who.headers
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_listing_is_the_fresh_build_and_follows_new_revisions(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, admin = await live_space(client, db)
    out = await write_live(
        client,
        sid,
        admin,
        insert("# A", title="A", ref="a"),
        insert("b", title="B", ref="b", into="a"),
        insert("c", title="C", ref="c", into="b"),
        insert("d", title="D", ref="d"),
    )
    ids = {c["ref"]: c["page"]["id"] for c in out["changes"]}
    first_rev = out["revision"]
    url = f"/v1/spaces/{sid}/content/pages"

    first = await listing(client, url, admin)  # built, then kept
    again = await listing(client, url, admin)  # from the cache
    assert first == again == await built_fresh(client, f"/v1/spaces/{sid}/content", admin)
    expected = orjson.loads(first)
    assert [p["title"] for p in expected["pages"]] == ["A", "D"]
    assert expected["pages"][0]["pages"][0]["pages"][0]["path"] == "a/b/c"
    assert expected["pages"][0]["layout"] == LAYOUT
    assert expected["pages"][0]["urls"] == {"app": f"{BASE}/s/{sid}/pages/{ids['a']}"}

    # A new revision is listed fresh; the old one still lists as it was.
    second_rev = (
        await write_live(
            client,
            sid,
            admin,
            {"operation": "update_page", "page": ids["c"], "title": "See"},
            {"operation": "update_page", "page": ids["d"], "into": ids["a"], "at": 0},
        )
    )["revision"]
    moved = await listing(client, url, admin)
    assert moved != first
    assert moved == await built_fresh(client, f"/v1/spaces/{sid}/content", admin)
    tree = orjson.loads(moved)["pages"]
    assert [p["title"] for p in tree] == ["A"]
    assert [(p["title"], p["path"]) for p in tree[0]["pages"]] == [("D", "a/d"), ("B", "a/b")]
    assert tree[0]["pages"][1]["pages"][0]["title"] == "See"
    old = f"/v1/spaces/{sid}/revisions/{first_rev}"
    assert await listing(client, f"{old}/pages", admin) == first
    assert await built_fresh(client, old, admin) == first
    new = f"/v1/spaces/{sid}/revisions/{second_rev}"
    assert await listing(client, f"{new}/pages", admin) == moved

    # Deleting every page lists an empty space, as a new space does.
    await write_live(
        client,
        sid,
        admin,
        {"operation": "delete_page", "page": ids["a"]},
    )
    assert await listing(client, url, admin) == b'{"pages":[]}'


async def test_change_request_listing_and_two_spaces_with_one_content(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, admin = await live_space(client, db)
    await write_live(client, sid, admin, insert("x", title="X", ref="x"))
    main_before = await listing(client, f"/v1/spaces/{sid}/content/pages", admin)

    cr = await new_cr(client, sid, admin)
    cr_url = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    assert await listing(client, f"{cr_url}/pages", admin) == main_before  # same revision
    r = await write(client, sid, cr["id"], admin, insert("y", title="Y"))
    assert r.status_code == 200, r.text
    in_cr = await listing(client, f"{cr_url}/pages", admin)
    assert [p["title"] for p in orjson.loads(in_cr)["pages"]] == ["X", "Y"]
    assert in_cr == await built_fresh(client, cr_url, admin)
    assert await listing(client, f"/v1/spaces/{sid}/content/pages", admin) == main_before

    # A duplicate has the same pages map (same ids and records) but its own URLs.
    r = await client.post(f"/v1/spaces/{sid}/duplicate", headers=admin.headers)
    assert r.status_code == 201, r.text
    copy = r.json()["id"]
    copied = await listing(client, f"/v1/spaces/{copy}/content/pages", admin)
    assert copied == await built_fresh(client, f"/v1/spaces/{copy}/content", admin)
    assert copied == main_before.replace(f"/s/{sid}/".encode(), f"/s/{copy}/".encode())
    assert copied != main_before
