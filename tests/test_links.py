"""Links and backlinks of main content: extracted when main moves, judged when read."""

from __future__ import annotations

import base64
from typing import Any

import httpx
from hypothesis import assume, given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error


async def live(client: httpx.AsyncClient, sid: str, who: Who, *changes: Any) -> dict[str, Any]:
    r = await client.post(
        f"/v1/spaces/{sid}/content", json={"changes": list(changes)}, headers=who.headers
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def refs(body: dict[str, Any]) -> dict[str, str]:
    return {c["ref"]: c["page"]["id"] for c in body["changes"] if "ref" in c}


def summary(listing: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    out = []
    for item in listing["items"]:
        t = item.get("targetReference", {})
        name = (
            t.get("url")
            or (t.get("page") or {}).get("title")
            or (t.get("file") or {}).get("name", "?")
        )
        out.append(
            (item["status"], name, [loc["page"]["title"] for loc in item["locationReferences"]])
        )
    return sorted(out)


async def test_link_statuses_follow_main(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, editMode="live", visibility="unlisted")
    sid = space["id"]
    body = await live(
        client,
        sid,
        admin,
        {"operation": "insert_page", "title": "Target", "ref": "t", "document": {"markdown": "T"}},
        {
            "operation": "insert_files",
            "files": [
                {
                    "name": "a.txt",
                    "base64": base64.b64encode(b"a").decode(),
                    "contentType": "text/plain",
                    "ref": "f",
                }
            ],
        },
        {
            "operation": "insert_page",
            "title": "Source",
            "ref": "s",
            "document": {
                "markdown": (
                    "[t](target.md) [file](./f) [ext](https://example.com/x) "
                    f"[app]({BASE}/s/{sid}) [gone](missing.md) [here](#part)\n"
                )
            },
        },
    )
    ids = refs(body)
    url = f"/v1/spaces/{sid}/links"
    r = await client.get(url, headers=reader.headers)
    assert r.status_code == 200, r.text
    listing = r.json()
    assert listing["count"] == 6
    assert listing["stats"] == {"total": 6, "broken": {"total": 1, "changeRequest": 0}}
    assert summary(listing) == [
        ("broken", "missing.md", ["Source"]),
        ("in-app", f"{BASE}/s/{sid}", ["Source"]),
        ("ok", "Source", ["Source"]),
        ("ok", "Target", ["Source"]),
        ("ok", "a.txt", ["Source"]),
        ("ok", "https://example.com/x", ["Source"]),
    ]
    page_item = next(
        i
        for i in listing["items"]
        if i.get("targetReference", {}).get("kind") == "page"
        and i["targetReference"]["page"]["id"] == ids["t"]
    )
    assert page_item["relation"] == "reference"
    assert page_item["targetReference"]["space"]["id"] == sid
    assert page_item["targetReference"]["organization"]["id"] == org_id
    assert page_item["targetReference"]["versionContext"]["type"] == "revision"

    # Deleting the target breaks the link at once; the status filter and the page's listing.
    await live(client, sid, admin, {"operation": "delete_page", "page": ids["t"]})
    r = await client.get(url, params={"status": "broken"}, headers=reader.headers)
    broken = r.json()
    assert broken["count"] == 2
    assert broken["stats"] == {"total": 6, "broken": {"total": 2, "changeRequest": 0}}
    assert [i["status"] for i in broken["items"]] == ["broken", "broken"]
    r = await client.get(f"/v1/spaces/{sid}/content/page/{ids['s']}/links", headers=reader.headers)
    assert r.json()["stats"]["broken"]["total"] == 2
    r = await client.get(f"/v1/spaces/{sid}/content/page/{ids['t']}/links", headers=reader.headers)
    assert r.json() == error(404, "Page not found")

    # Backlinks of the file: the page that links to it.
    file_id = body["insertedFiles"][0]["id"]
    r = await client.get(
        f"/v1/spaces/{sid}/content/files/{file_id}/backlinks", headers=reader.headers
    )
    back = r.json()
    assert back["count"] == 1
    assert back["items"][0]["kind"] == "page"
    assert back["items"][0]["page"]["title"] == "Source"
    assert (
        back["items"][0]["versionContext"]["revision"]["id"]
        == (await client.get(f"/v1/spaces/{sid}", headers=reader.headers)).json()["revision"]
    )

    # Editing the source removes its links; renaming a linked page keeps them.
    await live(
        client,
        sid,
        admin,
        {"operation": "update_page", "page": ids["s"], "document": {"markdown": "no links"}},
    )
    r = await client.get(url, headers=reader.headers)
    assert r.json()["items"] == [] and r.json()["stats"]["total"] == 0
    r = await client.get(
        f"/v1/spaces/{sid}/content/files/{file_id}/backlinks", headers=reader.headers
    )
    assert r.json() == {"items": [], "count": 0}


async def test_links_from_merges_and_renames(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    sid = space["id"]
    r = await client.post(f"/v1/spaces/{sid}/change-requests", headers=admin.headers)
    cr = r.json()["id"]
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr}/content?compat=false",
        json={
            "changes": [
                {
                    "operation": "insert_page",
                    "title": "A",
                    "ref": "a",
                    "document": {"markdown": "A"},
                },
                {
                    "operation": "insert_page",
                    "title": "B",
                    "ref": "b",
                    "document": {"markdown": "[to a](a.md)"},
                },
            ]
        },
        headers=admin.headers,
    )
    ids = refs(r.json())
    # Not on main yet: nothing listed.
    assert (await client.get(f"/v1/spaces/{sid}/links", headers=admin.headers)).json()["count"] == 0
    await client.post(f"/v1/spaces/{sid}/change-requests/{cr}/merge", headers=admin.headers)
    listing = (await client.get(f"/v1/spaces/{sid}/links", headers=admin.headers)).json()
    assert summary(listing) == [("ok", "A", ["B"])]
    # Renaming the target keeps the link (stored by id) and its relative form follows.
    r = await client.post(f"/v1/spaces/{sid}/change-requests", headers=admin.headers)
    cr2 = r.json()["id"]
    await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr2}/content",
        json={
            "changes": [
                {"operation": "update_page", "page": ids["a"], "title": "Alpha", "slug": "alpha"}
            ]
        },
        headers=admin.headers,
    )
    await client.post(f"/v1/spaces/{sid}/change-requests/{cr2}/merge", headers=admin.headers)
    listing = (await client.get(f"/v1/spaces/{sid}/links", headers=admin.headers)).json()
    assert summary(listing) == [("ok", "Alpha", ["B"])]
    page = (
        await client.get(
            f"/v1/spaces/{sid}/content/page/{ids['b']}?format=markdown", headers=admin.headers
        )
    ).json()
    assert page["markdown"] == "[to a](alpha.md)"


async def test_links_pages_and_statuses_kept_with_main(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Paging through the listing gives what one big page gives, with the same count on every
    page; statuses and stats follow pages leaving and coming back to main."""
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    sid = space["id"]
    first = await live(
        client,
        sid,
        admin,
        {"operation": "insert_page", "title": "Hub", "ref": "h", "document": {"markdown": "H"}},
        *[
            {
                "operation": "insert_page",
                "title": f"P{i}",
                "ref": f"p{i}",
                "document": {
                    "markdown": f"[hub](hub.md) [x](https://e.com/{i}) [y](#s{i}) [z](nope{i}.md)"
                },
            }
            for i in range(4)
        ],
    )
    ids = refs(first)
    url = f"/v1/spaces/{sid}/links"
    whole = (await client.get(url, params={"limit": 1000}, headers=admin.headers)).json()
    assert whole["count"] == 13  # hub, 4 urls, 4 anchors, 4 unresolved
    assert whole["stats"] == {"total": 13, "broken": {"total": 4, "changeRequest": 0}}
    hub = next(
        i
        for i in whole["items"]
        if i.get("targetReference", {}).get("kind") == "page"
        and i["targetReference"]["page"]["id"] == ids["h"]
    )
    assert [loc["page"]["title"] for loc in hub["locationReferences"]] == sorted(
        [f"P{i}" for i in range(4)], key=lambda t: ids[t.lower()]
    )
    for status in (None, "ok", "broken", "in-app"):
        params: dict[str, Any] = {"limit": 3}
        if status:
            params["status"] = status
        seen: list[Any] = []
        counts = set()
        while True:
            body = (await client.get(url, params=params, headers=admin.headers)).json()
            seen += body["items"]
            counts.add(body["count"])
            assert body["stats"] == whole["stats"]
            if "next" not in body:
                break
            params["page"] = body["next"]["page"]
        expected = [i for i in whole["items"] if status is None or i["status"] == status]
        assert seen == expected and counts == {len(expected)}

    # The hub leaves main: the four links to it are one broken group; it comes back: ok again.
    await live(client, sid, admin, {"operation": "delete_page", "page": ids["h"]})
    body = (await client.get(url, params={"status": "broken"}, headers=admin.headers)).json()
    assert body["count"] == 5 and body["stats"]["broken"]["total"] == 5
    await live(
        client,
        sid,
        admin,
        {"operation": "revert_page", "page": ids["h"], "revision": first["revision"]},
    )
    again = (await client.get(url, params={"limit": 1000}, headers=admin.headers)).json()
    assert again["stats"] == whole["stats"] and again["count"] == 13
    assert [i["status"] for i in again["items"]] == [i["status"] for i in whole["items"]]

    # A page's own listing pages alike.
    page_url = f"/v1/spaces/{sid}/content/page/{ids['p0']}/links"
    one = (await client.get(page_url, params={"limit": 2}, headers=admin.headers)).json()
    assert one["count"] == 4 and len(one["items"]) == 2
    assert one["stats"] == {"total": 4, "broken": {"total": 1, "changeRequest": 0}}
    two = (
        await client.get(
            page_url, params={"limit": 2, "page": one["next"]["page"]}, headers=admin.headers
        )
    ).json()
    assert two["count"] == 4 and "next" not in two
    r = await client.get(url, params={"page": one["next"]["page"] + "x"}, headers=admin.headers)
    assert r.status_code == 400


@given(base=st.text(min_size=1, max_size=8), target=st.text(max_size=12))
def test_the_in_app_range_holds_exactly_the_prefixed_targets(base: str, target: str) -> None:
    # What links.repository.in_app(binary=True) relies on: under a byte-by-byte (code point)
    # order, the range [base, base with its last character incremented) is the prefix test.
    assume(ord(base[-1]) < 0x10FFFF)
    upper = base[:-1] + chr(ord(base[-1]) + 1)
    assert (base <= target < upper) == target.startswith(base)
    assert (base <= base + target < upper) is True
