"""Space content over HTTP: change request writes, reads of every revision, merge and update,
files and their download links, live edits, and the rules that refuse bad batches."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
from datetime import timedelta
from typing import Any

import httpx
import sqlalchemy as sa
from PIL import Image
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from docshelf.models import revisions
from docshelf.worker.registry import JobEnv
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, snapshot

LAYOUT = {
    "width": "default",
    "cover": True,
    "coverSize": "hero",
    "title": True,
    "description": True,
    "tableOfContents": True,
    "outline": True,
    "pagination": True,
    "metadata": True,
    "coverMask": "none",
    "tags": True,
    "actions": True,
    "anchors": True,
}


def page_body(
    sid: str, page_id: str, title: str, slug: str, path: str, **extra: Any
) -> dict[str, Any]:
    now = isoformat(clock.now())
    body: dict[str, Any] = {
        "id": page_id,
        "title": title,
        "createdAt": now,
        "updatedAt": now,
        "kind": "sheet",
        "type": "document",
        "slug": slug,
        "path": path,
        "pages": [],
        "hidden": False,
        "noIndex": False,
        "noRobotsIndex": False,
        "urls": {"app": f"{BASE}/s/{sid}/pages/{page_id}"},
        "layout": LAYOUT,
        "tags": [],
    }
    body.update(extra)
    return body


async def setup(client: httpx.AsyncClient, db: AsyncEngine, **space: Any) -> tuple[Any, ...]:
    org_id, (admin, editor, reviewer, reader) = await factories.org_with_members(
        db, "edit", "review", "read"
    )
    created = await factories.api_space(client, org_id, admin, visibility="unlisted", **space)
    return created, admin, editor, reviewer, reader


async def new_cr(client: httpx.AsyncClient, sid: str, who: Who) -> dict[str, Any]:
    r = await client.post(f"/v1/spaces/{sid}/change-requests", headers=who.headers)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def write(
    client: httpx.AsyncClient, sid: str, cr: str, who: Who, *changes: dict[str, Any], **q: Any
) -> httpx.Response:
    return await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr}/content",
        json={"changes": list(changes)},
        headers=who.headers,
        params=q,
    )


def insert(markdown: str = "", **fields: Any) -> dict[str, Any]:
    return {"operation": "insert_page", "document": {"markdown": markdown}, **fields}


async def created_ids(r: httpx.Response) -> dict[str, str]:
    assert r.status_code == 200, r.text
    return {c["ref"]: c["page"]["id"] for c in r.json()["changes"] if "ref" in c}


async def test_new_space_starts_empty(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, *_ = await setup(client, db)
    sid = space["id"]
    r = await client.get(f"/v1/spaces/{sid}/content", headers=admin.headers)
    assert r.status_code == 200
    assert r.json() == {
        "object": "revision",
        "id": space["revision"],
        "parents": [],
        "pages": [],
        "files": [],
        "reusableContents": [],
        "tags": [],
        "createdAt": isoformat(clock.now()),
        "type": "edits",
        "urls": {"app": f"{BASE}/s/{sid}/revisions/{space['revision']}"},
    }
    r = await client.get(f"/v1/spaces/{sid}/content/pages", headers=admin.headers)
    assert r.json() == {"pages": []}
    r = await client.get(f"/v1/spaces/{sid}/content/files", headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}


async def test_change_request_write_read_merge(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _admin, editor, reviewer, reader = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        insert("# Welcome\n", title="Getting started", ref="start"),
        insert("Install it.\n", title="Install", into="start", ref="install"),
        insert("See [install](getting-started/install.md).\n", title="Usage", ref="usage"),
        compat="false",
    )
    ids = await created_ids(r)
    body = r.json()
    assert body["changeRequest"]["revision"] != cr["revision"]
    assert [c["object"] for c in body["changes"]] == ["created_page"] * 3
    assert body["changes"][0]["page"] == {
        "object": "page",
        "id": ids["start"],
        "urls": {"location": f"{BASE}/v1/spaces/{sid}/content/page/{ids['start']}"},
    }

    # Main is untouched; the change request shows the tree.
    r = await client.get(f"/v1/spaces/{sid}/content/pages", headers=reader.headers)
    assert r.json() == {"pages": []}
    r = await client.get(
        f"/v1/spaces/{sid}/change-requests/{cr['number']}/content/pages", headers=reader.headers
    )
    install = page_body(sid, ids["install"], "Install", "install", "getting-started/install")
    start = page_body(sid, ids["start"], "Getting started", "getting-started", "getting-started")
    usage = page_body(sid, ids["usage"], "Usage", "usage", "usage")
    pages = r.json()["pages"]
    for p in (pages[0], pages[0]["pages"][0], pages[1]):
        assert len(p.pop("documentId")) == 32
    assert pages == [{**start, "pages": [install]}, usage]

    # One page, by id and by path; links come back relative to the reading page.
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    r = await client.get(f"{base}/page/{ids['usage']}?format=markdown", headers=reader.headers)
    got = r.json()
    assert got["markdown"] == "See [install](getting-started/install.md).\n"
    r = await client.get(
        f"{base}/page/{ids['usage']}",
        params={"format": "markdown", "format.markdown.refs": "stable"},
        headers=reader.headers,
    )
    assert r.json()["markdown"] == f"See [install](/pages/{ids['install']}).\n"
    r = await client.get(
        f"{base}/path/getting-started/install?format=markdown", headers=reader.headers
    )
    assert r.status_code == 200 and r.json()["id"] == ids["install"]
    assert r.json()["markdown"] == "Install it.\n"
    r = await client.get(
        f"{base}/path/getting-started/nope?format=markdown", headers=reader.headers
    )
    assert r.status_code == 404 and r.json() == error(404, "Page not found")

    # The changes of the change request.
    r = await client.get(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/changes", headers=reader.headers
    )
    kinds = sorted((c["type"], c["page"]["title"]) for c in r.json()["changes"])
    assert kinds == [
        ("page_created", "Getting started"),
        ("page_created", "Install"),
        ("page_created", "Usage"),
    ]

    # Editors cannot merge; reviewers can.
    merge_url = f"/v1/spaces/{sid}/change-requests/{cr['id']}/merge"
    r = await client.post(merge_url, headers=editor.headers)
    assert r.status_code == 403
    r = await client.post(merge_url, headers=reviewer.headers)
    assert r.status_code == 200, r.text
    merged = r.json()
    assert merged["result"] == "merge"
    r = await client.get(f"/v1/spaces/{sid}", headers=reader.headers)
    assert r.json()["revision"] == merged["revision"]
    r = await client.get(f"/v1/spaces/{sid}/change-requests/{cr['id']}", headers=reader.headers)
    cr_now = r.json()
    assert cr_now["status"] == "merged"
    assert cr_now["revisionMerged"] == merged["revision"]
    r = await client.get(f"/v1/spaces/{sid}/content", headers=reader.headers)
    revision = r.json()
    assert revision["id"] == merged["revision"]
    assert revision["type"] == "merge"
    assert revision["parents"] == [space["revision"], cr_now["revision"]]
    assert revision["mergedFrom"] == cr_now
    assert [p["title"] for p in revision["pages"]] == ["Getting started", "Usage"]
    r = await client.get(
        f"/v1/spaces/{sid}/revisions/{space['revision']}/pages", headers=reader.headers
    )
    assert r.json() == {"pages": []}
    r = await client.get(
        f"/v1/spaces/{sid}/content/path/usage?format=markdown", headers=reader.headers
    )
    assert r.json()["id"] == ids["usage"]

    # A merged change request refuses more edits and a second merge.
    r = await write(client, sid, cr["id"], editor, insert("x"))
    assert r.json() == error(409, "A merged change request cannot change")
    r = await client.post(merge_url, headers=reviewer.headers)
    assert r.status_code == 409


async def test_invalid_batch_changes_nothing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    ids = await created_ids(
        await write(client, sid, cr["id"], editor, insert("a", title="A", ref="a"), compat="false")
    )
    before = await snapshot(db)
    cases = [
        (
            [insert("b", title="B"), {"operation": "delete_page", "page": "missing"}],
            "changes[1]: page 'missing' does not exist",
        ),
        (
            [
                insert("b", title="B", ref="b", into=ids["a"]),
                {"operation": "update_page", "page": ids["a"], "into": "b"},
            ],
            "changes[1]: a page cannot move under one of its descendants",
        ),
        (
            [{"operation": "update_page", "page": ids["a"], "into": ids["a"]}],
            "changes[0]: a page cannot move under itself",
        ),
        (
            [insert("c", title="C", slug="a")],
            "changes[0]: a sibling page already uses the slug 'a'",
        ),
        ([insert("c", at=5)], "changes[0]: at 5 is past the end of its 1 siblings"),
        (
            [insert("c", ref="x"), insert("d", ref="x")],
            "changes[1]: ref 'x' is used twice in this batch",
        ),
        (
            [
                {
                    "operation": "insert_files",
                    "files": [{"name": "a.txt", "base64": "!!!", "contentType": "text/plain"}],
                }
            ],
            "changes[0].files[0]: base64 is not valid base64",
        ),
        (
            [{"operation": "insert_page", "document": {"document": {"nodes": []}}}],
            "changes[0].document: Invalid document: document.object: must be 'document'",
        ),
    ]
    for changes, message in cases:
        r = await write(client, sid, cr["id"], editor, *changes)
        assert r.json() == error(400, message), changes
        assert await snapshot(db) == before
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/content",
        json={"changes": []},
        headers=editor.headers,
    )
    assert r.status_code == 400
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/content",
        json={"changes": [insert(str(i)) for i in range(51)]},
        headers=editor.headers,
    )
    assert r.status_code == 400
    assert await snapshot(db) == before


async def test_moves_updates_deletes(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    ids = await created_ids(
        await write(
            client,
            sid,
            cr["id"],
            editor,
            insert("a", title="A", ref="a"),
            insert("b", title="B", ref="b"),
            insert("c", title="C", ref="c", into="a"),
            insert("d", title="D", ref="d", into="c"),
            compat="false",
        )
    )
    clock.advance(timedelta(minutes=1))
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "update_page", "page": ids["c"], "into": None, "at": 0, "title": "See"},
        {"operation": "update_page", "page": ids["b"], "slug": "bee", "emoji": "1f41d"},
        {"operation": "update_page", "page": ids["a"], "document": {"markdown": "new a"}},
        compat="false",
    )
    assert r.status_code == 200, r.text
    assert [c["object"] for c in r.json()["changes"]] == ["updated_page"] * 3
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    pages = (await client.get(f"{base}/pages", headers=editor.headers)).json()["pages"]

    def shape(items: list[dict[str, Any]]) -> list[Any]:
        return [(p["title"], p["path"], shape(p["pages"])) for p in items]

    assert shape(pages) == [("See", "c", [("D", "c/d", [])]), ("A", "a", []), ("B", "bee", [])]
    r = await client.get(f"{base}/page/{ids['b']}?format=markdown", headers=editor.headers)
    assert r.json()["emoji"] == "1f41d"
    assert r.json()["updatedAt"] == isoformat(clock.now())
    assert r.json()["createdAt"] == isoformat(clock.now() - timedelta(minutes=1))
    r = await client.get(f"{base}/page/{ids['a']}?format=markdown", headers=editor.headers)
    assert r.json()["markdown"] == "new a"

    # Deleting a page takes its subtree.
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "delete_page", "page": ids["c"]},
        compat="false",
    )
    assert r.json()["changes"] == [
        {"object": "deleted_page", "page": ids["c"]},
        {"object": "deleted_page", "page": ids["d"]},
    ]
    r = await client.get(f"{base}/page/{ids['d']}?format=markdown", headers=editor.headers)
    assert r.status_code == 404


async def test_three_way_merge(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, editor, reviewer, _reader = await setup(client, db)
    sid = space["id"]
    text = "one\ntwo\nthree\nfour\nfive\n"
    seed = await new_cr(client, sid, editor)
    ids = await created_ids(
        await write(
            client, sid, seed["id"], editor, insert(text, title="Doc", ref="doc"), compat="false"
        )
    )
    assert (
        await client.post(
            f"/v1/spaces/{sid}/change-requests/{seed['id']}/merge", headers=admin.headers
        )
    ).json()["result"] == "merge"
    doc = ids["doc"]

    first, second, third = [await new_cr(client, sid, editor) for _ in range(3)]
    edit = {"operation": "update_page", "page": doc}
    r = await write(
        client,
        sid,
        first["id"],
        editor,
        {**edit, "document": {"markdown": text.replace("one", "ONE")}},
    )
    assert r.status_code == 200
    r = await write(
        client,
        sid,
        second["id"],
        editor,
        {**edit, "document": {"markdown": text.replace("five", "FIVE")}},
        insert("new", title="Second's page"),
    )
    assert r.status_code == 200
    r = await write(
        client,
        sid,
        third["id"],
        editor,
        {**edit, "document": {"markdown": text.replace("one", "uno")}},
    )
    assert r.status_code == 200

    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{first['id']}/merge", headers=reviewer.headers
    )
    assert r.json()["result"] == "merge"
    r = await client.get(
        f"/v1/spaces/{sid}/change-requests/{second['id']}", headers=reviewer.headers
    )
    assert r.json()["outdated"] is True
    # Main moved: non-overlapping edits combine.
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{second['id']}/merge", headers=reviewer.headers
    )
    assert r.json()["result"] == "merge"
    r = await client.get(
        f"/v1/spaces/{sid}/content/page/{doc}?format=markdown", headers=reviewer.headers
    )
    assert r.json()["markdown"] == "ONE\ntwo\nthree\nfour\nFIVE\n"
    titles = [
        p["title"]
        for p in (
            await client.get(f"/v1/spaces/{sid}/content/pages", headers=editor.headers)
        ).json()["pages"]
    ]
    assert titles == ["Doc", "Second's page"]

    # Overlapping edits conflict: reported, nothing applied, both texts kept.
    head = (await client.get(f"/v1/spaces/{sid}", headers=editor.headers)).json()["revision"]
    before = (
        await client.get(f"/v1/spaces/{sid}/change-requests/{third['id']}", headers=editor.headers)
    ).json()
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{third['id']}/merge", headers=reviewer.headers
    )
    body = r.json()
    assert r.status_code == 200
    assert body["result"] == "conflicts"
    assert body["conflicts"] == [
        {
            "page": doc,
            "kind": "content",
            "title": "Doc",
            "field": "document",
            "detail": "both sides changed the same lines: kept ours' text",
        }
    ]
    assert (await client.get(f"/v1/spaces/{sid}", headers=editor.headers)).json()[
        "revision"
    ] == head
    after = (
        await client.get(f"/v1/spaces/{sid}/change-requests/{third['id']}", headers=editor.headers)
    ).json()
    assert after == before
    r = await client.get(
        f"/v1/spaces/{sid}/revisions/{body['revision']}/page/{doc}?format=markdown",
        headers=editor.headers,
    )
    assert r.json()["markdown"] == "ONE\ntwo\nthree\nfour\nFIVE\n"
    r = await client.get(
        f"/v1/spaces/{sid}/change-requests/{third['id']}/content/page/{doc}?format=markdown",
        headers=editor.headers,
    )
    assert r.json()["markdown"] == text.replace("one", "uno")

    # Update pulls main in the same way; resolving by taking main's line then merges.
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{third['id']}/update", headers=editor.headers
    )
    assert r.json()["result"] == "conflicts"
    r = await write(
        client,
        sid,
        third["id"],
        editor,
        {**edit, "document": {"markdown": "ONE\ntwo\nthree\nfour\nFIVE\n"}},
    )
    assert r.status_code == 200
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{third['id']}/update", headers=editor.headers
    )
    assert r.json()["result"] == "update"
    cr_now = (
        await client.get(f"/v1/spaces/{sid}/change-requests/{third['id']}", headers=editor.headers)
    ).json()
    assert cr_now["revisionMergedAncestor"] == head
    assert cr_now["revision"] == r.json()["revision"]
    assert cr_now["outdated"] is False
    r = await write(
        client,
        sid,
        third["id"],
        editor,
        {**edit, "document": {"markdown": "ONE\ntwo\nthree\nfour\nFIVE\nsix\n"}},
    )
    assert r.status_code == 200
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{third['id']}/merge", headers=reviewer.headers
    )
    assert r.json()["result"] == "merge"
    r = await client.get(
        f"/v1/spaces/{sid}/content/page/{doc}?format=markdown", headers=reviewer.headers
    )
    assert r.json()["markdown"] == "ONE\ntwo\nthree\nfour\nFIVE\nsix\n"


async def test_concurrent_merges_lose_nothing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    crs = [await new_cr(client, sid, editor) for _ in range(4)]
    for i, cr in enumerate(crs):
        r = await write(client, sid, cr["id"], editor, insert(f"page {i}", title=f"P{i}"))
        assert r.status_code == 200
    results = await asyncio.gather(
        *(
            client.post(f"/v1/spaces/{sid}/change-requests/{cr['id']}/merge", headers=admin.headers)
            for cr in crs
        )
    )
    assert [r.json()["result"] for r in results] == ["merge"] * 4
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=admin.headers)).json()
    assert sorted(p["title"] for p in pages["pages"]) == ["P0", "P1", "P2", "P3"]
    async with db.connect() as conn:
        count = (
            await conn.execute(
                sa.select(sa.func.count())
                .select_from(revisions)
                .where(revisions.c.space_id == sid, revisions.c.type == "merge")
            )
        ).scalar_one()
    assert count == 4


async def test_concurrent_writes_to_one_change_request(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, _admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    results = await asyncio.gather(
        *(write(client, sid, cr["id"], editor, insert(str(i), title=f"T{i}")) for i in range(5))
    )
    assert [r.status_code for r in results] == [200] * 5
    pages = (
        await client.get(
            f"/v1/spaces/{sid}/change-requests/{cr['id']}/content/pages", headers=editor.headers
        )
    ).json()["pages"]
    assert sorted(p["title"] for p in pages) == [f"T{i}" for i in range(5)]


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 10, 10)).save(out, format="PNG")
    return out.getvalue()


async def test_files_and_download_links(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    image = png(3, 2)
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {
            "operation": "insert_files",
            "files": [
                {
                    "name": "red.png",
                    "base64": base64.b64encode(image).decode(),
                    "contentType": "image/png",
                    "ref": "red",
                },
                {
                    "name": "notes.txt",
                    "base64": base64.b64encode(b"hello").decode(),
                    "contentType": "text/plain",
                },
            ],
        },
        insert("![red](./red)\n", title="Pic", ref="pic"),
        compat="false",
    )
    assert r.status_code == 200, r.text
    inserted = r.json()["insertedFiles"]
    red = next(f for f in inserted if f["name"] == "red.png")
    assert {k: v for k, v in red.items() if k != "downloadURL"} == {
        "id": red["id"],
        "name": "red.png",
        "contentType": "image/png",
        "size": len(image),
        "dimensions": {"width": 3, "height": 2},
    }
    assert red["downloadURL"].startswith(f"{BASE}/v1/downloads/")
    pic = (await created_ids(r))["pic"]
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    r = await client.get(f"{base}/page/{pic}?format=markdown", headers=reader.headers)
    assert r.json()["markdown"] == f"![red](/files/{red['id']})\n"
    r = await client.get(f"{base}/files/{red['id']}", headers=reader.headers)
    assert r.json() == red
    r = await client.get(f"{base}/files", params={"limit": 1}, headers=reader.headers)
    assert r.json()["count"] == 2 and len(r.json()["items"]) == 1 and "next" in r.json()

    # The link serves the bytes without a token, as long as the space holds the file.
    r = await client.get(red["downloadURL"].removeprefix(BASE))
    assert r.status_code == 200
    assert r.content == image
    assert r.headers["content-type"] == "image/png"
    assert r.headers["x-content-type-options"] == "nosniff"
    # HEAD: the same headers (the size, the type), no bytes.
    head = await client.head(red["downloadURL"].removeprefix(BASE))
    assert (head.status_code, head.content) == (200, b"")
    assert {k: v for k, v in head.headers.items() if k != "date"} == {
        k: v for k, v in r.headers.items() if k not in ("date", "x-request-id")
    } | {"x-request-id": head.headers["x-request-id"]}
    notes = next(f for f in inserted if f["name"] == "notes.txt")
    r = await client.get(notes["downloadURL"].removeprefix(BASE))
    assert r.content == b"hello"
    assert r.headers["content-disposition"] == "attachment; filename*=UTF-8''notes.txt"
    r = await client.get(red["downloadURL"].removeprefix(BASE)[:-3] + "abc")
    assert r.json() == error(404, "Download link not found")
    # It does not expire, and reading the file again gives the same link (GitBook's renderer
    # keeps a revision, and the links in it, indefinitely).
    clock.advance(timedelta(days=30))
    r = await client.get(red["downloadURL"].removeprefix(BASE))
    assert r.status_code == 200 and r.content == image
    r = await client.get(f"{base}/files/{red['id']}", headers=reader.headers)
    assert r.json()["downloadURL"] == red["downloadURL"]


async def test_live_edits_and_locked_spaces(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    url = f"/v1/spaces/{sid}/content"
    body = {"changes": [insert("live!", title="Live")]}
    r = await client.post(url, json=body, headers=editor.headers)
    assert r.json() == error(
        403, "Live editing is off for this space: set editMode to live, or use a change request"
    )
    await client.patch(f"/v1/spaces/{sid}", json={"editMode": "live"}, headers=admin.headers)
    r = await client.post(url, json=body, headers=reader.headers)
    assert r.json() == error(403, "You cannot edit this space")
    r = await client.post(url, json=body, headers=editor.headers)
    assert r.status_code == 200, r.text
    revision = r.json()["revision"]
    assert r.json()["changes"][0]["object"] == "created_page"
    got = (await client.get(f"/v1/spaces/{sid}", headers=reader.headers)).json()
    assert got["revision"] == revision
    pages = (await client.get(f"{url}/pages", headers=reader.headers)).json()["pages"]
    assert [p["title"] for p in pages] == ["Live"]

    cr = await new_cr(client, sid, editor)
    await client.patch(f"/v1/spaces/{sid}", json={"editMode": "locked"}, headers=admin.headers)
    before = await snapshot(db)
    locked = error(403, "The space is locked: its content cannot be changed")
    assert (await client.post(url, json=body, headers=admin.headers)).json() == locked
    assert (await write(client, sid, cr["id"], admin, insert("x"))).json() == locked
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/merge", headers=admin.headers
    )
    assert r.json() == locked
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/update", headers=admin.headers
    )
    assert r.json() == locked
    assert await snapshot(db) == before


async def test_revert_page(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    ids = await created_ids(
        await write(
            client, sid, cr["id"], editor, insert("v1", title="Doc", ref="d"), compat="false"
        )
    )
    first = (
        await client.get(f"/v1/spaces/{sid}/change-requests/{cr['id']}", headers=editor.headers)
    ).json()["revision"]
    edit = {
        "operation": "update_page",
        "page": ids["d"],
        "title": "Changed",
        "document": {"markdown": "v2"},
    }
    assert (await write(client, sid, cr["id"], editor, edit)).status_code == 200
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "revert_page", "page": ids["d"], "revision": first},
    )
    assert r.status_code == 200, r.text
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    page = (
        await client.get(f"{base}/page/{ids['d']}?format=markdown", headers=editor.headers)
    ).json()
    assert (page["title"], page["markdown"]) == ("Doc", "v1")
    # Reverting to the change request's base (the default) removes a page it created.
    r = await write(client, sid, cr["id"], editor, {"operation": "revert_page", "page": ids["d"]})
    assert r.status_code == 200, r.text
    assert (await client.get(f"{base}/pages", headers=editor.headers)).json() == {"pages": []}
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "revert_page", "page": ids["d"], "revision": "nope"},
    )
    assert r.json() == error(400, "changes[0]: revision 'nope' does not exist in this space")


async def test_duplicate_and_purge_carry_content(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Any, job_env: JobEnv
) -> None:
    from docshelf.worker.runner import JobRunner

    space, admin, *_ = await setup(client, db, editMode="live")
    sid = space["id"]
    data = b"bytes only this space holds"
    r = await client.post(
        f"/v1/spaces/{sid}/content",
        json={
            "changes": [
                insert("hello", title="Hello"),
                {
                    "operation": "insert_files",
                    "files": [
                        {
                            "name": "a.bin",
                            "base64": base64.b64encode(data).decode(),
                            "contentType": "application/octet-stream",
                        }
                    ],
                },
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    r = await client.post(f"/v1/spaces/{sid}/duplicate", headers=admin.headers)
    copy = r.json()
    assert copy["revision"] != space["revision"]
    pages = (
        await client.get(f"/v1/spaces/{copy['id']}/content/pages", headers=admin.headers)
    ).json()["pages"]
    assert [p["title"] for p in pages] == ["Hello"]
    blob = settings.data_dir / "blobs"
    held = list(blob.rglob(hashlib.sha256(data).hexdigest()))
    assert len(held) == 1

    runner = JobRunner(db, job_env)

    async def purge(space_id: str) -> None:
        assert (
            await client.delete(f"/v1/spaces/{space_id}", headers=admin.headers)
        ).status_code == 205
        clock.advance(timedelta(days=8))
        while await runner.run_once():
            pass

    await purge(sid)
    assert list(blob.rglob(held[0].name)) == held  # the copy still holds it
    files = (
        await client.get(f"/v1/spaces/{copy['id']}/content/files", headers=admin.headers)
    ).json()["items"]
    assert (await client.get(files[0]["downloadURL"].removeprefix(BASE))).content == data
    await purge(copy["id"])
    assert list(blob.rglob(held[0].name)) == []
    snap = await snapshot(db)
    assert snap["content_objects"] == [] and snap["revisions"] == [] and snap["space_blobs"] == []


async def test_revision_reads_and_changes(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    ids = await created_ids(
        await write(
            client,
            sid,
            cr["id"],
            editor,
            insert("# Title\n\nSome **bold** text.\n", title="Guide", ref="g"),
            *[insert(str(i), title=f"Child {i}", into="g") for i in range(12)],
            compat="false",
        )
    )
    merged = (
        await client.post(
            f"/v1/spaces/{sid}/change-requests/{cr['id']}/merge", headers=admin.headers
        )
    ).json()
    rev = f"/v1/spaces/{sid}/revisions/{merged['revision']}"
    r = await client.get(f"{rev}/changes", headers=reader.headers)
    body = r.json()
    assert body["mergedFrom"]["id"] == cr["id"]
    assert len(body["changes"]) == 10 and body["more"] == 3
    assert {c["type"] for c in body["changes"]} == {"page_created"}
    r = await client.get(f"{rev}/changes", params={"limit": 0}, headers=reader.headers)
    assert r.json()["changes"] == [] and r.json()["more"] == 13

    # Page by path and as a JSON document, from the revision.
    r = await client.get(f"{rev}/path/guide/child-3?format=markdown", headers=reader.headers)
    assert r.json()["title"] == "Child 3"
    r = await client.get(
        f"{rev}/page/{ids['g']}", params={"format": "document"}, headers=reader.headers
    )
    page = r.json()
    assert "markdown" not in page
    assert page["document"]["object"] == "document"
    assert [p["title"] for p in page["pages"]] == [f"Child {i}" for i in range(12)]
    r = await client.get(f"/v1/spaces/{sid}/revisions/nope", headers=reader.headers)
    assert r.json() == error(404, "Revision not found")

    # An edit shows as page_edited with before/after attributes.
    cr2 = await new_cr(client, sid, editor)
    r = await write(
        client,
        sid,
        cr2["id"],
        editor,
        {"operation": "update_page", "page": ids["g"], "title": "Handbook", "slug": "handbook"},
    )
    r = await client.get(
        f"/v1/spaces/{sid}/change-requests/{cr2['id']}/changes", headers=reader.headers
    )
    assert r.json() == {
        "changes": [
            {
                "type": "page_edited",
                "page": {
                    "id": ids["g"],
                    "type": "document",
                    "title": "Handbook",
                    "path": "handbook",
                },
                "attributes": {
                    "title": {"before": "Guide", "after": "Handbook"},
                    "slug": {"before": "guide", "after": "handbook"},
                },
            }
        ]
    }


async def test_transfer_keeps_content(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, *_ = await setup(client, db, editMode="live")
    sid = space["id"]
    r = await client.post(
        f"/v1/spaces/{sid}/content",
        json={"changes": [insert("moved along", title="Kept")]},
        headers=admin.headers,
    )
    assert r.status_code == 200
    other = await factories.organization(db, owner=admin, title="Elsewhere")
    r = await client.post(
        f"/v1/spaces/{sid}/transfer", json={"organization": other}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=admin.headers)).json()
    assert [p["title"] for p in pages["pages"]] == ["Kept"]


async def test_readers_read_and_outsiders_see_nothing(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, _admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    assert (await write(client, sid, cr["id"], reader, insert("x"))).json() == error(
        403, "You cannot edit this space"
    )
    outsider = await factories.user(db)
    r = await client.get(f"/v1/spaces/{sid}/content", headers=outsider.headers)
    assert r.json() == error(404, "Space not found")
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/update", headers=reader.headers
    )
    assert r.json() == error(403, "You cannot edit this space")
    # Nothing to pull: main has not moved.
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/update", headers=editor.headers
    )
    assert r.json() == {"revision": cr["revision"], "result": "update"}
    r = await client.patch(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}",
        json={"status": "archived"},
        headers=editor.headers,
    )
    assert (await write(client, sid, cr["id"], editor, insert("x"))).json() == error(
        409, "An archived change request cannot change; reopen it first"
    )
