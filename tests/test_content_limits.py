"""Content limits over HTTP (docshelf.document.limits): markdown size, nesting and links per page,
page tree depth on inserts, moves, merges and imports, and reads of trees stored deeper than the
limit before it existed. Every refusal is a 400 that changes nothing; an import leaves out what
exceeds a limit, names it, and imports the rest."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.content import edits
from docshelf.document import markdown as md
from docshelf.document.limits import (
    MAX_BLOCK_NESTING,
    MAX_BLOCKS,
    MAX_LINKS,
    MAX_MARKDOWN_BYTES,
    MAX_MARKUP,
    MAX_PAGE_DEPTH,
)
from tests.helpers import error, snapshot
from tests.test_content import created_ids, insert, new_cr, setup, write
from tests.test_import import Files, allow_loopback, site, zip_of

__all__ = ["allow_loopback", "site"]  # fixtures shared with the import tests


async def live_space(client: httpx.AsyncClient, db: AsyncEngine) -> tuple[str, Any, Any]:
    space, _admin, editor, _reviewer, reader = await setup(client, db, editMode="live")
    return space["id"], editor, reader


async def live(client: httpx.AsyncClient, sid: str, who: Any, *changes: Any) -> httpx.Response:
    return await client.post(
        f"/v1/spaces/{sid}/content", json={"changes": list(changes)}, headers=who.headers
    )


async def chain(
    client: httpx.AsyncClient, sid: str, who: Any, depth: int, *, under: str | None = None
) -> list[str]:
    """`depth` pages each inside the previous one, in batches of 50; their ids, top first."""
    ids: list[str] = []
    while len(ids) < depth:
        batch = []
        for i in range(len(ids), min(depth, len(ids) + 50)):
            parent = f"p{i - 1}" if i % 50 else (ids[-1] if ids else under)
            batch.append(insert(f"level {i + 1}", title=f"L{i + 1}", ref=f"p{i}", into=parent))
        got = await created_ids(await live(client, sid, who, *batch))
        ids += [got[f"p{i}"] for i in range(len(ids), len(ids) + len(batch))]
    return ids


def depth_of(pages: list[dict[str, Any]]) -> int:
    deepest, level = 0, pages
    while level:
        deepest += 1
        level = [child for page in level for child in page.get("pages", [])]
    return deepest


# -- markdown -------------------------------------------------------------------------------------


async def test_markdown_over_the_limits_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, editor, reader = await live_space(client, db)
    page = (await created_ids(await live(client, sid, editor, insert("ok", ref="a"))))["a"]
    before = await snapshot(db)
    big = "a" * (MAX_MARKDOWN_BYTES - 1) + "é"  # one character more than the limit in bytes
    r = await live(client, sid, editor, insert(big))
    assert r.json() == error(
        400,
        f"changes[0]: markdown is {MAX_MARKDOWN_BYTES + 1} bytes; "
        f"a page holds at most {MAX_MARKDOWN_BYTES}",
    )
    deep = "> " * (MAX_BLOCK_NESTING + 1) + "too deep\n"
    r = await live(
        client,
        sid,
        editor,
        insert("fine"),
        {"operation": "update_page", "page": page, "document": {"markdown": deep}},
    )
    assert r.json() == error(
        400,
        f"changes[1]: markdown nests block quotes or lists {MAX_BLOCK_NESTING + 1} deep; "
        f"at most {MAX_BLOCK_NESTING} levels are allowed",
    )
    lists = "".join("  " * i + "- x\n" for i in range(MAX_BLOCK_NESTING + 1))
    r = await live(client, sid, editor, insert(lists))
    assert r.status_code == 400 and "nests block quotes or lists 33 deep" in r.text
    r = await live(client, sid, editor, insert("[" * (MAX_MARKUP + 1)))
    assert r.json() == error(
        400,
        f"changes[0]: markdown holds more than {MAX_MARKUP} markup characters outside code "
        f"([ ] ! < * _ ` ~ & \\); a page holds at most {MAX_MARKUP}",
    )
    links = "[x](https://example.com)\n" * (MAX_LINKS + 1)
    r = await live(client, sid, editor, insert(links))
    assert r.json() == error(
        400, f"changes[0]: markdown holds {MAX_LINKS + 1} links; a page holds at most {MAX_LINKS}"
    )
    # Blocks, whose number a document's size follows (a letter a paragraph: 40 bytes of JSON a
    # byte of markdown).
    r = await live(client, sid, editor, insert("a\n\n" * (MAX_BLOCKS + 1)))
    assert r.json() == error(
        400,
        f"changes[0]: markdown holds {MAX_BLOCKS + 1} blocks (paragraphs, headings, list "
        f"items...); a page holds at most {MAX_BLOCKS}",
    )
    assert await snapshot(db) == before
    # At the limits exactly, all is well.
    at_limit = [
        "a" * MAX_MARKDOWN_BYTES,
        "> " * MAX_BLOCK_NESTING + "deep enough\n",
        "[x](https://example.com)\n" * MAX_LINKS,
    ]
    r = await live(client, sid, editor, *(insert(text) for text in at_limit))
    assert r.status_code == 200, r.text
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=reader.headers)).json()
    assert len(pages["pages"]) == 4


@pytest.mark.parametrize(
    "markdown",
    [
        "[" * 20_000,
        "![" * 10_000,
        "[a](" * 5_000,
        "*" * 20_000,
        "`" * 20_000,
        "<" * 20_000,
        "*a " * 5_000 + "b*" * 5_000,
        "[ *a* " * 5_000,
    ],
    ids=["brackets", "images", "open-links", "stars", "backticks", "angles", "emphasis", "mixed"],
)
async def test_pathological_markdown_round_trips(
    client: httpx.AsyncClient, db: AsyncEngine, markdown: str
) -> None:
    """Bodies that used to cost seconds per parse: written, read in both formats and searched
    like any page (their timings are in benchmarks/RESULTS.md)."""
    sid, editor, reader = await live_space(client, db)
    page = (await created_ids(await live(client, sid, editor, insert(markdown, ref="p"))))["p"]
    url = f"/v1/spaces/{sid}/content/page/{page}"
    r = await client.get(url, params={"format": "markdown"}, headers=reader.headers)
    assert r.status_code == 200 and r.json()["markdown"] == markdown
    r = await client.get(url, params={"format": "document"}, headers=reader.headers)
    assert r.status_code == 200 and r.json()["document"]["object"] == "document"


async def test_documents_stored_deeper_than_the_limit_are_flattened(
    client: httpx.AsyncClient, db: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, editor, reader = await live_space(client, db)
    # Written as before the limit existed: 90 nested quotes (the parser itself stops at 100).
    monkeypatch.setattr(md, "MAX_BLOCK_NESTING", 1000)
    deep = "> " * 90 + "bottom\n"
    page = (await created_ids(await live(client, sid, editor, insert(deep, ref="p"))))["p"]
    monkeypatch.undo()
    # Read by a process that has not parsed it yet (the writer's memo holds its document).
    monkeypatch.setattr(md, "_RENDERED", md._Memo(1 << 20, lambda r: len(r[0])))
    r = await client.get(
        f"/v1/spaces/{sid}/content/page/{page}",
        params={"format": "document"},
        headers=reader.headers,
    )
    assert r.status_code == 200
    nodes, quotes = r.json()["document"]["nodes"], 0
    while nodes and nodes[0]["type"] == "blockquote":
        quotes += 1
        nodes = nodes[0]["nodes"]
    assert quotes == 2 * MAX_BLOCK_NESTING
    # Every block is keyed, the innermost too (GitBook keys nested blocks).
    assert nodes == [
        {
            "object": "block",
            "type": "paragraph",
            "data": {},
            "nodes": [
                {"object": "text", "leaves": [{"object": "leaf", "text": "bottom", "marks": []}]}
            ],
            "key": nodes[0]["key"],
        }
    ]
    assert len(nodes[0]["key"]) == 16


# -- page trees -----------------------------------------------------------------------------------


async def test_inserts_and_moves_past_the_depth_are_refused(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, editor, reader = await live_space(client, db)
    ids = await chain(client, sid, editor, MAX_PAGE_DEPTH)
    pair = await created_ids(
        await live(client, sid, editor, insert(ref="top"), insert(ref="kid", into="top"))
    )
    before = await snapshot(db)
    too_deep = (
        f"this would place a page {MAX_PAGE_DEPTH + 1} levels deep; "
        f"page trees hold at most {MAX_PAGE_DEPTH} levels"
    )
    r = await live(client, sid, editor, insert("x", into=ids[-1]))
    assert r.json() == error(400, f"changes[0]: {too_deep}")
    # A page moves with its subtree: two levels do not fit under level 49.
    move = {"operation": "update_page", "page": pair["top"], "into": ids[-2]}
    r = await live(client, sid, editor, move)
    assert r.json() == error(400, f"changes[0]: {too_deep}")
    assert await snapshot(db) == before
    # One level does.
    r = await live(
        client, sid, editor, {"operation": "update_page", "page": pair["kid"], "into": ids[-2]}
    )
    assert r.status_code == 200, r.text
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=reader.headers)).json()
    assert depth_of(pages["pages"]) == MAX_PAGE_DEPTH


async def test_a_merge_that_would_nest_too_deep_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Each side is within the limit; together they are not. Chosen: 400, nothing merged (a
    conflict would have to move pages somewhere nobody asked for)."""
    space, admin, editor, _reviewer, reader = await setup(client, db, editMode="live")
    sid = space["id"]
    ids = await chain(client, sid, editor, 40)
    subtree = await chain(client, sid, editor, 10)
    q = (await created_ids(await live(client, sid, editor, insert(ref="q"))))["q"]
    first, second = await new_cr(client, sid, editor), await new_cr(client, sid, editor)
    r = await write(
        client, sid, first["id"], editor, {"operation": "update_page", "page": q, "into": ids[-1]}
    )
    assert r.status_code == 200, r.text
    r = await write(
        client,
        sid,
        second["id"],
        editor,
        {"operation": "update_page", "page": subtree[0], "into": q},
    )
    assert r.status_code == 200, r.text
    merge = f"/v1/spaces/{sid}/change-requests/{{}}/merge"
    assert (await client.post(merge.format(first["id"]), headers=admin.headers)).json()[
        "result"
    ] == "merge"
    before = await snapshot(db)
    r = await client.post(merge.format(second["id"]), headers=admin.headers)
    assert r.json() == error(
        400,
        f"page {subtree[0]!r}: merging this would place a page 51 levels deep; "
        f"page trees hold at most {MAX_PAGE_DEPTH} levels",
    )
    assert await snapshot(db) == before
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=reader.headers)).json()
    assert depth_of(pages["pages"]) == 41


async def test_trees_stored_deeper_than_the_limit_still_read(
    client: httpx.AsyncClient, db: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree 150 levels deep, written as before the limit existed, used to make every read of
    the space's content a 500 (orjson's nesting limit). Listings now stop at the limit; every
    page stays readable by id and path, listing its own subtree up to the limit again."""
    sid, editor, reader = await live_space(client, db)
    monkeypatch.setattr(edits, "MAX_PAGE_DEPTH", 10_000)
    ids = await chain(client, sid, editor, 150)
    monkeypatch.undo()
    base = f"/v1/spaces/{sid}/content"
    pages = (await client.get(f"{base}/pages", headers=reader.headers)).json()["pages"]
    assert depth_of(pages) == MAX_PAGE_DEPTH
    revision = (await client.get(base, headers=reader.headers)).json()
    assert depth_of(revision["pages"]) == MAX_PAGE_DEPTH
    r = await client.get(f"{base}/page/{ids[99]}?format=markdown", headers=reader.headers)
    assert r.status_code == 200
    body = r.json()
    assert body["title"] == "L100" and body["markdown"] == "level 100"
    assert depth_of(body["pages"]) == MAX_PAGE_DEPTH
    path = "/".join(f"l{i}" for i in range(1, 151))
    r = await client.get(f"{base}/path/{path}?format=markdown", headers=reader.headers)
    assert r.status_code == 200 and r.json()["id"] == ids[-1] and r.json()["pages"] == []
    # Nothing more can be added below the limit, and nothing moved deeper; a move that makes
    # nothing deeper is fine, even there.
    r = await live(client, sid, editor, insert(into=ids[-1]))
    assert r.status_code == 400 and "151 levels deep" in r.text
    r = await live(
        client, sid, editor, {"operation": "update_page", "page": ids[-1], "into": ids[100]}
    )
    assert r.status_code == 200, r.text
    r = await live(
        client, sid, editor, {"operation": "update_page", "page": ids[-1], "into": ids[110]}
    )
    assert r.status_code == 400 and "112 levels deep" in r.text
    r = await live(
        client, sid, editor, {"operation": "update_page", "page": ids[120], "into": ids[10]}
    )
    assert r.status_code == 200, r.text


# -- imports --------------------------------------------------------------------------------------


async def test_imports_leave_out_what_is_past_the_depth(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    """Deeper than a page tree holds: those pages are left out and named, the rest imported;
    an import with nothing else is refused, naming the limit, and changes nothing."""
    base, files = site
    sid, editor, reader = await live_space(client, db)
    folders = "/".join(f"d{i}" for i in range(1200))
    deep = {f"{folders}/page.md": b"# Deep\n"}
    files["/deep.zip"] = ("application/zip", zip_of(deep))
    files["/folders.zip"] = ("application/zip", zip_of({**deep, "top.md": b"# Top\n"}))
    summary = "".join("  " * i + f"* [P{i}](p{i}.md)\n" for i in range(MAX_PAGE_DEPTH + 1))
    entries = {f"p{i}.md": f"# P{i}\n".encode() for i in range(MAX_PAGE_DEPTH + 1)}
    files["/summary.zip"] = (
        "application/zip",
        zip_of({"SUMMARY.md": summary.encode(), **entries}),
    )
    url = f"/v1/spaces/{sid}/content/import"
    limit = "over the page depth limit"
    before = await snapshot(db)
    r = await client.post(
        url, json={"url": base + "/deep.zip", "source": "zip"}, headers=editor.headers
    )
    # Alone in the archive, its first folder reads as the archive's wrapper.
    inside = folders.removeprefix("d0/")
    assert r.json() == error(
        400,
        "Cannot import this zip content: nothing to import: every page was left out "
        f"({inside}/page.md: {limit} (it would be 1200 levels deep; an import holds at most "
        f"{MAX_PAGE_DEPTH}): left out)",
    )
    assert await snapshot(db) == before
    r = await client.post(
        url, json={"url": base + "/folders.zip", "source": "zip"}, headers=editor.headers
    )
    assert r.status_code == 201, r.text
    assert r.json()["skipped"] == [
        {
            "path": f"{folders}/page.md",
            "reason": f"{limit} (it would be 1201 levels deep; an import holds at most "
            f"{MAX_PAGE_DEPTH}): left out",
            "kind": "skipped",
        }
    ]
    r = await client.post(
        url, json={"url": base + "/summary.zip", "source": "zip"}, headers=editor.headers
    )
    assert r.status_code == 201, r.text
    assert (r.json()["importedResources"], r.json()["totalResources"]) == (50, 51)
    assert r.json()["skipped"] == [
        {
            "path": f"p{MAX_PAGE_DEPTH}.md",
            "reason": f"{limit} (it would be {MAX_PAGE_DEPTH + 1} levels deep; an import holds "
            f"at most {MAX_PAGE_DEPTH}): left out",
            "kind": "skipped",
        }
    ]
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=reader.headers)).json()
    assert depth_of(pages["pages"]) == MAX_PAGE_DEPTH


async def test_a_single_page_import_over_a_limit_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    """Nothing else would land: refused, naming the limit, as a change batch is."""
    base, files = site
    sid, editor, _reader = await live_space(client, db)
    files["/big.md"] = ("text/markdown", b"# Big\n\n" + b"a" * MAX_MARKDOWN_BYTES)
    before = await snapshot(db)
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"url": base + "/big.md", "source": "markdown"},
        headers=editor.headers,
    )
    size = MAX_MARKDOWN_BYTES + len("# Big\n\n")
    assert r.json() == error(
        400,
        f"Cannot import this markdown content: big.md: markdown is {size} bytes; a page holds "
        f"at most {MAX_MARKDOWN_BYTES}",
    )
    assert await snapshot(db) == before


async def test_a_costly_body_is_never_parsed_on_the_event_loop(
    client: httpx.AsyncClient, db: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large body whose parse the worker could not finish (past its time, out of its memory)
    is a 503 to retry, never parsed inline instead, where it would stall every request."""
    from docshelf.document import markdown as md
    from docshelf.kit import offload

    sid, editor, _ = await live_space(client, db)
    body = "".join(
        f"## Part {i}\n\nSome *text* here, and [a link](https://example.com/{i}).\n\n"
        for i in range(3_000)
    )
    assert md.costly(body)

    async def gone(*args: Any, **kwargs: Any) -> Any:
        raise offload.OffloadTimeout("the work took too long")

    def inline(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a costly text was parsed on the event loop")

    monkeypatch.setattr(offload, "run", gone)
    monkeypatch.setattr(md, "_budgeted_analysis", inline)
    before = await snapshot(db)
    r = await live(client, sid, editor, insert(body))
    assert r.status_code == 503, r.text
    assert r.json() == error(503, "A page body could not be parsed in time; retry shortly")
    assert r.headers["retry-after"] == "5"
    assert await snapshot(db) == before
