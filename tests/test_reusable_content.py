"""Reusable contents over HTTP: created, edited and deleted through change-request content
(Docshelf's extension operations), read through GitBook's four routes and the revision, named
from pages in markdown (`{% include %}`) and document (`reusable-content` block) form, merged by
identity; and `revert_page` with `block`."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.content.tree.objects import text_object
from docshelf.document import blocks
from docshelf.document import markdown as md
from docshelf.document.limits import MAX_MARKDOWN_BYTES
from tests import factories
from tests.factories import Who
from tests.helpers import error, snapshot
from tests.test_import import Files, allow_loopback, site, zip_of
from tests.test_import import setup as import_setup
from tests.test_import_projects import body, flat, import_url, pages_of

__all__ = ["allow_loopback", "site"]  # fixtures, used by name
from tests.test_content import created_ids, insert, new_cr, setup, write


def rc_insert(title: str, markdown: str, **extra: Any) -> dict[str, Any]:
    return {
        "operation": "insert_reusable_content",
        "title": title,
        "document": {"markdown": markdown},
        **extra,
    }


def rc_body(rid: str, title: str, markdown: str) -> dict[str, Any]:
    return {"id": rid, "title": title, "document": text_object(markdown)[0]}


async def get(client: httpx.AsyncClient, who: Who, url: str, **q: Any) -> Any:
    r = await client.get(url, headers=who.headers, params=q)
    assert r.status_code == 200, r.text
    return r.json()


async def merge(client: httpx.AsyncClient, sid: str, cr: str, who: Who) -> dict[str, Any]:
    r = await client.post(f"/v1/spaces/{sid}/change-requests/{cr}/merge", headers=who.headers)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_create_read_reference_merge_delete(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    reference = {
        "object": "block",
        "type": "reusable-content",
        "isVoid": True,
        "data": {"ref": {"kind": "reusable-content", "reusableContent": "intro"}},
    }
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        rc_insert("Intro", "Shared *words*.\n", ref="intro"),
        insert('Before\n\n{% include "intro" %}\n', title="Md", ref="m"),
        {
            "operation": "insert_page",
            "title": "Doc",
            "ref": "d",
            "document": {"document": {"object": "document", "nodes": [reference]}},
        },
        compat="false",
    )
    ids = await created_ids(r)
    (created,) = r.json()["insertedReusableContents"]
    rid = created["id"]
    assert created == {"id": rid, "ref": "intro"}
    expected = rc_body(rid, "Intro", "Shared *words*.\n")
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    assert await get(client, editor, f"{base}/reusable-contents/{rid}") == expected
    assert (await get(client, editor, base))["reusableContents"] == [expected]
    # Pages name it by id: as the include tag in markdown, as the block in documents.
    page = await get(client, editor, f"{base}/page/{ids['m']}", format="markdown")
    assert page["markdown"] == f'Before\n\n{{% include "{rid}" %}}\n'
    doc = (await get(client, editor, f"{base}/page/{ids['d']}"))["document"]
    block = {**reference, "data": {"ref": {"kind": "reusable-content", "reusableContent": rid}}}
    assert doc["nodes"] == [{**block, "key": blocks.keys([block])[0]}]
    # Inlined on request.
    inlined = await get(
        client,
        editor,
        f"{base}/page/{ids['m']}",
        format="markdown",
        dereferenced="reusable-contents",
    )
    assert inlined["markdown"] == "Before\n\nShared *words*.\n"
    changes = await get(client, editor, f"/v1/spaces/{sid}/change-requests/{cr['id']}/changes")
    assert {"type": "reusable_content_created", "reusableContent": expected} in changes["changes"]

    assert (await merge(client, sid, cr["id"], admin))["result"] == "merge"
    main = await get(client, editor, f"/v1/spaces/{sid}/content")
    assert main["reusableContents"] == [expected]
    rev = main["id"]
    url = f"/v1/spaces/{sid}/content/reusable-contents/{rid}"
    assert await get(client, editor, url) == expected
    url = f"/v1/spaces/{sid}/revisions/{rev}/reusable-contents/{rid}"
    assert await get(client, editor, url) == expected
    document = md.to_document("Shared *words*.\n")
    assert await get(client, editor, url + "/document") == blocks.keyed(document)

    # Renamed and rewritten, then deleted, in a second change request; main keeps it.
    cr2 = await new_cr(client, sid, editor)
    update = {
        "operation": "update_reusable_content",
        "reusableContent": rid,
        "title": "Opening",
        "document": {"markdown": "Other words.\n"},
    }
    assert (await write(client, sid, cr2["id"], editor, update)).status_code == 200
    base2 = f"/v1/spaces/{sid}/change-requests/{cr2['id']}/content"
    edited = rc_body(rid, "Opening", "Other words.\n")
    assert await get(client, editor, f"{base2}/reusable-contents/{rid}") == edited
    changes = await get(client, editor, f"/v1/spaces/{sid}/change-requests/{cr2['id']}/changes")
    assert changes["changes"] == [
        {
            "type": "reusable_content_edited",
            "reusableContent": edited,
            "attributes": {
                "title": {"before": "Intro", "after": "Opening"},
                "document": {"before": expected["document"], "after": edited["document"]},
            },
        }
    ]
    gone = {"operation": "delete_reusable_content", "reusableContent": rid}
    assert (await write(client, sid, cr2["id"], editor, gone)).status_code == 200
    r = await client.get(f"{base2}/reusable-contents/{rid}", headers=editor.headers)
    assert r.status_code == 404 and r.json() == error(404, "Reusable content not found")
    assert (await get(client, editor, base2))["reusableContents"] == []
    assert (await get(client, editor, f"/v1/spaces/{sid}/content"))["reusableContents"] == [
        expected
    ]
    # A page whose include names nothing any more keeps the tag and shows nothing there.
    inlined = await get(
        client, editor, f"{base2}/page/{ids['m']}", format="markdown", dereferenced="true"
    )
    assert inlined["markdown"] == "Before\n\n"
    # That page stays editable: the include it held is kept as written; a new one is refused.
    page = await get(client, editor, f"{base2}/page/{ids['m']}", format="markdown")
    edited_text = page["markdown"].replace("Before", "After")
    change = {"operation": "update_page", "page": ids["m"], "document": {"markdown": edited_text}}
    r = await write(client, sid, cr2["id"], editor, change)
    assert r.status_code == 200, r.text
    page = await get(client, editor, f"{base2}/page/{ids['m']}", format="markdown")
    assert page["markdown"] == edited_text
    before = await snapshot(db)
    fresh = insert(f'{{% include "{rid}" %}}\n', title="New")
    r = await write(client, sid, cr2["id"], editor, fresh)
    assert r.status_code == 400 and "names reusable content" in r.json()["error"]["message"]
    assert await snapshot(db) == before


async def test_git_sync_paths_and_bad_inputs(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    r = await write(client, sid, cr["id"], editor, rc_insert("Getting Started", "Hi.\n"))
    assert r.status_code == 200
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    (rc,) = (await get(client, editor, base))["reusableContents"]
    # Git Sync's path form resolves by the title's slug and is stored as the id.
    page = insert('{% include "../.gitbook/includes/getting-started.md" %}\n', title="P", ref="p")
    ids = await created_ids(await write(client, sid, cr["id"], editor, page, compat="false"))
    got = await get(client, editor, f"{base}/page/{ids['p']}", format="markdown")
    assert got["markdown"] == f'{{% include "{rc["id"]}" %}}\n'

    before = await snapshot(db)
    refused = [
        (
            insert('{% include "nothing" %}\n', title="Q"),
            "changes[0]: {% include %} names reusable content 'nothing', which does "
            "not exist in this revision",
        ),
        (
            {
                "operation": "insert_page",
                "title": "R",
                "document": {
                    "document": {
                        "object": "document",
                        "nodes": [
                            {
                                "object": "block",
                                "type": "reusable-content",
                                "isVoid": True,
                                "data": {
                                    "ref": {"kind": "reusable-content", "reusableContent": "gone"}
                                },
                            }
                        ],
                    }
                },
            },
            "changes[0]: {% include %} names reusable content 'gone', which does not exist in "
            "this revision",
        ),
        (
            rc_insert("Nested", f'{{% include "{rc["id"]}" %}}\n'),
            "changes[0]: a reusable content cannot include reusable content",
        ),
        (
            {"operation": "update_reusable_content", "reusableContent": "nope", "title": "T"},
            "changes[0]: reusable content 'nope' does not exist",
        ),
        (
            {"operation": "delete_reusable_content", "reusableContent": "nope"},
            "changes[0]: reusable content 'nope' does not exist",
        ),
        (
            rc_insert("Big", "x" * (MAX_MARKDOWN_BYTES + 1)),
            f"changes[0]: markdown is {MAX_MARKDOWN_BYTES + 1} bytes; a page holds at most "
            f"{MAX_MARKDOWN_BYTES}",
        ),
    ]
    for change, message in refused:
        r = await write(client, sid, cr["id"], editor, change)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["message"] == message
    r = await write(client, sid, cr["id"], editor, {**rc_insert("T", ""), "title": ""})
    assert r.status_code == 400
    assert await snapshot(db) == before
    head = (await get(client, editor, f"/v1/spaces/{sid}/content"))["id"]
    for url in (
        f"{base}/reusable-contents/nope",
        f"/v1/spaces/{sid}/content/reusable-contents/{rc['id']}",  # not on main
        f"/v1/spaces/{sid}/revisions/{head}/reusable-contents/nope/document",
        f"/v1/spaces/{sid}/revisions/{head}/reusable-contents/{rc['id']}",
    ):
        r = await client.get(url, headers=editor.headers)
        assert r.status_code == 404, url


async def _edit_rc(
    client: httpx.AsyncClient, sid: str, who: Who, rid: str, **fields: Any
) -> dict[str, Any]:
    cr = await new_cr(client, sid, who)
    change: dict[str, Any] = {"operation": "update_reusable_content", "reusableContent": rid}
    if "markdown" in fields:
        change["document"] = {"markdown": fields.pop("markdown")}
    change.update(fields)
    r = await write(client, sid, cr["id"], who, change)
    assert r.status_code == 200, r.text
    return cr


async def test_merge_by_identity(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    text = "one\n\ntwo\n\nthree\n"
    assert (await write(client, sid, cr["id"], editor, rc_insert("T", text))).status_code == 200
    await merge(client, sid, cr["id"], admin)
    ((rid, *_),) = [
        (c["id"],)
        for c in (await get(client, admin, f"/v1/spaces/{sid}/content"))["reusableContents"]
    ]
    # Two change requests edit different lines and the title: both merge, line by line.
    first = await _edit_rc(client, sid, editor, rid, markdown="ONE\n\ntwo\n\nthree\n")
    second = await _edit_rc(
        client, sid, editor, rid, markdown="one\n\ntwo\n\nTHREE\n", title="Renamed"
    )
    await merge(client, sid, first["id"], admin)
    await merge(client, sid, second["id"], admin)
    url = f"/v1/spaces/{sid}/content/reusable-contents/{rid}"
    assert await get(client, admin, url) == rc_body(rid, "Renamed", "ONE\n\ntwo\n\nTHREE\n")

    # Both edit the same line: a conflict, reported like a page's; main does not move.
    third = await _edit_rc(client, sid, editor, rid, markdown="ONE\n\n2\n\nTHREE\n")
    fourth = await _edit_rc(client, sid, editor, rid, markdown="ONE\n\nzwei\n\nTHREE\n")
    await merge(client, sid, third["id"], admin)
    head = (await get(client, admin, f"/v1/spaces/{sid}"))["revision"]
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{fourth['id']}/merge", headers=admin.headers
    )
    body = r.json()
    assert body == {
        "revision": body["revision"],
        "result": "conflicts",
        "conflicts": [
            {"reusableContent": rid, "kind": "content", "title": "Renamed", "field": "document"}
        ],
    }
    assert (await get(client, admin, f"/v1/spaces/{sid}"))["revision"] == head
    assert await get(client, admin, url) == rc_body(rid, "Renamed", "ONE\n\n2\n\nTHREE\n")


async def test_revert_page_blocks(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, admin, editor, *_ = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    ids = await created_ids(
        await write(
            client, sid, cr["id"], editor, insert("A\n\nB\n\nC\n\nD\n", ref="p"), compat="false"
        )
    )
    await merge(client, sid, cr["id"], admin)
    cr = await new_cr(client, sid, editor)
    pid = ids["p"]
    # N added, B modified into B2, C deleted; the title changed too.
    edit = {
        "operation": "update_page",
        "page": pid,
        "title": "Retitled",
        "document": {"markdown": "N\n\nA\n\nB2\n\nD\n"},
    }
    assert (await write(client, sid, cr["id"], editor, edit)).status_code == 200
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content/page/{pid}"
    current = (await get(client, editor, base))["document"]["nodes"]
    old_keys = blocks.keys(md.to_document("A\n\nB\n\nC\n\nD\n")["nodes"])
    new_nodes = md.to_document("N\n\nA\n\nB2\n\nD\n")["nodes"]
    assert [n["key"] for n in current] == blocks.keys(new_nodes)

    async def revert(*keys: str) -> httpx.Response:
        change = {"operation": "revert_page", "page": pid, "block": list(keys)}
        return await write(client, sid, cr["id"], editor, change)

    async def text() -> str:
        page = await get(client, editor, base, format="markdown")
        assert page["title"] == "Retitled"  # the page's properties stay
        return str(page["markdown"])

    # Modified (named by its new key): reset; the other changes stay.
    assert (await revert(current[2]["key"])).status_code == 200
    assert await text() == "N\n\nA\n\nB\n\nD\n"
    # Added: removed. Deleted (named by the key it had): restored.
    assert (await revert(current[0]["key"], old_keys[2])).status_code == 200
    assert await text() == "A\n\nB\n\nC\n\nD\n"
    # Unknown keys change nothing.
    before = await snapshot(db)
    r = await revert("0123456789abcdef")
    assert r.json() == error(
        400,
        "changes[0]: block '0123456789abcdef' is in neither the page's document nor the revision's",
    )
    assert await snapshot(db) == before
    # Moved: back where it was.
    move = {"operation": "update_page", "page": pid, "document": {"markdown": "C\n\nA\n\nB\n\nD\n"}}
    assert (await write(client, sid, cr["id"], editor, move)).status_code == 200
    assert (await revert(old_keys[2])).status_code == 200
    assert await text() == "A\n\nB\n\nC\n\nD\n"
    # What the document form cannot hold (a hidden HTML comment, a table's alignment) would
    # be rewritten with the other blocks: refused, nothing changed; the whole page can revert.
    lossy = "A\n\n<!-- hidden -->\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\nB2\n"
    edit = {"operation": "update_page", "page": pid, "document": {"markdown": lossy}}
    assert (await write(client, sid, cr["id"], editor, edit)).status_code == 200
    last = (await get(client, editor, base))["document"]["nodes"][-1]["key"]
    before = await snapshot(db)
    r = await revert(last)
    assert r.status_code == 400, r.text
    assert "document form does not keep" in r.json()["error"]["message"]
    assert await snapshot(db) == before
    assert await text() == lossy


async def test_published_reader_shows_the_included_content(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(
        client, org, admin, title="Guide", visibility="public", editMode="live"
    )
    changes = [
        rc_insert("Notice", "Shared **notice**.\n", ref="n"),
        insert('# Top\n\n{% include "n" %}\n\n> {% include "n" %}\n', title="Home"),
    ]
    r = await client.post(
        f"/v1/spaces/{space['id']}/content", json={"changes": changes}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": "Docs", "visibility": "public", "spaces": [space["id"]]},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    site_id = r.json()["id"]
    r = await client.post(f"/v1/orgs/{org}/sites/{site_id}/publish", headers=admin.headers)
    assert r.status_code == 200, r.text
    html = (await client.get(f"/{org}/{site_id}/")).text
    assert "<p>Shared <strong>notice</strong>.</p>" in html
    assert "<blockquote>\n<p>Shared <strong>notice</strong>.</p>\n</blockquote>" in html
    assert "include" not in html


async def test_gitbook_repository_includes_import_as_reusable_contents(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    base, files = site
    sid, _admin, editor, reader = await import_setup(client, db)
    files["/book.zip"] = (
        "application/zip",
        zip_of(
            {
                "SUMMARY.md": "# Contents\n\n* [Home](README.md)\n  * [Deep](sub/deep.md)\n",
                "README.md": '# Home\n\n{% include ".gitbook/includes/notice.md" %}\n',
                "sub/deep.md": '# Deep\n\n{% include "../.gitbook/includes/notice.md" %}\n',
                ".gitbook/includes/notice.md": "---\ntitle: Beta notice\n---\n\nIn *beta*.\n",
                ".gitbook/includes/loop.md": '{% include "notice.md" %}\n',
            }
        ),
    )
    book = await import_url(client, sid, editor, base + "/book.zip", "zip")
    assert (book["detected"], book["totalResources"], book["importedResources"]) == (
        "gitbook",
        4,
        3,
    )
    assert book["skipped"] == [
        {
            "path": ".gitbook/includes/loop.md",
            "reason": "a reusable content that includes another",
            "kind": "skipped",
        }
    ]
    (rc,) = (await get(client, reader, f"/v1/spaces/{sid}/content"))["reusableContents"]
    assert rc == rc_body(rc["id"], "Beta notice", "In *beta*.\n")
    ids = flat(await pages_of(client, sid, reader))
    for title in ("Home", "Deep"):
        page = await body(client, sid, ids[title], reader)
        assert page["markdown"] == f'{{% include "{rc["id"]}" %}}\n'
