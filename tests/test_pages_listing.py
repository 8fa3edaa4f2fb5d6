"""Page listings come from a per-process cache keyed by the revision's pages map: the bytes are
the ones a fresh build gives, a new revision is listed fresh (from the pieces of the pages it did
not change), and the space in the key keeps two spaces with the same content apart."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import httpx
import msgpack
import orjson
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.content import repository as content_repository
from docshelf.content import service as content_service
from docshelf.content.listing import pieces
from docshelf.content.listing import stored as stored_listing
from docshelf.content.presenter import nest_pages
from docshelf.content.tree.snapshot import PAGE_DEFAULTS, ROOT
from docshelf.document.limits import MAX_PAGE_DEPTH
from docshelf.kit.clock import clock, utcnow
from docshelf.kit.db import unit_of_work
from docshelf.models import jobs, listing_snapshots
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
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
    """The listing as the revision read gives it, built from the revision's pages alone: no
    kept listing, pieces or stored pieces to start from. (That the pieces encode what the
    presenter nests: test_pieces_encode_what_the_presenter_nests, and through HTTP, a
    visitor's listing, built for them, in tests/test_site_tokens.py.)"""
    content_service._listings.clear()
    content_service._pieces.clear()
    keeps = stored_listing.keeps_stored_pieces

    async def none_stored(_snap: Any) -> bool:
        return False

    stored_listing.keeps_stored_pieces = none_stored  # type: ignore[assignment]
    try:
        r = await client.get(url, headers=who.headers)
    finally:
        stored_listing.keeps_stored_pieces = keeps  # type: ignore[assignment]
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


async def test_a_new_revision_reuses_the_pages_it_did_not_change_and_lists_as_fresh(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Each step changes something a page's listed form depends on besides its own record (its
    ancestors' slugs, its depth, its siblings' order, its parent's children); the listing of
    each new revision is built from the previous one's pieces and must equal the fresh build."""
    sid, admin = await live_space(client, db)
    out = await write_live(
        client,
        sid,
        admin,
        insert("# A", title="A", ref="a", emoji="1f600", description="About A", hidden=True),
        insert("b", title="B", ref="b", into="a", icon="book", noIndex=True),
        insert("c", title="C", ref="c", into="b", noRobotsIndex=True),
        insert("", title="D", ref="d", condition="visitor.claims.plan == 'pro'"),
        insert("e", title="E", ref="e", into="a"),
    )
    ids = {c["ref"]: c["page"]["id"] for c in out["changes"]}
    pages_url, fresh_url = f"/v1/spaces/{sid}/content/pages", f"/v1/spaces/{sid}/content"

    async def same_as_fresh() -> bytes:
        listed = await listing(client, pages_url, admin)
        assert listed == await built_fresh(client, fresh_url, admin)
        return listed

    await same_as_fresh()
    steps: list[list[dict[str, Any]]] = [
        [{"operation": "update_page", "page": ids["a"], "title": "A2"}],
        [{"operation": "update_page", "page": ids["a"], "slug": "a-renamed"}],
        [{"operation": "update_page", "page": ids["c"], "into": None, "at": 0}],
        [{"operation": "update_page", "page": ids["e"], "at": 0}],
        [{"operation": "update_page", "page": ids["b"], "document": {"markdown": "new"}}],
        [{"operation": "update_page", "page": ids["d"], "into": ids["c"], "hidden": True}],
        [insert("f", title="F", into=ids["b"], at=0), insert("g", title="G", into=ids["d"])],
        [{"operation": "delete_page", "page": ids["a"]}],
    ]
    seen = {await same_as_fresh()}
    for changes in steps:
        await write_live(client, sid, admin, *changes)
        seen.add(await same_as_fresh())
    assert len(seen) == len(steps) + 1  # every step changed the listing
    kept = content_service._pieces.get(sid)  # what the next revision is listed from
    assert kept is not None and len(kept.pages) == 3  # C, D and G are left

    # A change request's head is listed from main's pieces, and main again from the request's.
    cr = await new_cr(client, sid, admin)
    cr_url = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    r = await write(
        client, sid, cr["id"], admin, {"operation": "update_page", "page": ids["c"], "slug": "x"}
    )
    assert r.status_code == 200, r.text
    in_cr = await listing(client, f"{cr_url}/pages", admin)
    assert in_cr == await built_fresh(client, cr_url, admin)
    assert b'"path":"x/d/g"' in in_cr
    main = await same_as_fresh()
    assert b'"path":"c/d/g"' in main


def _page(pid: str, slug: str, kind: str = "document", **fields: Any) -> dict[str, Any]:
    return {
        **PAGE_DEFAULTS,
        "id": pid,
        "title": f"Title of {pid}",
        "slug": slug,
        "type": kind,
        "children": [],
        **fields,
    }


def _records() -> dict[str, dict[str, Any]]:
    """Every optional field and page type, and records only stored data could hold: slugs and
    ids that need escaping, flags stored as numbers, a parent listing a slug other than the
    child's, a child that does not exist, the root listed as a child, a link with children."""
    return {
        ROOT: {
            "id": ROOT,
            "children": [["g", "guide"], ["l", "ext"], ["d", 'say "hi"/\\'], ["gone", "x"]],
        },
        "g": _page("g", "guide", "group", children=[["d1", "one"], ["d2", "two"]], emoji="1f4d8"),
        "l": _page("l", "ext", "link", href='https://example.com/a?b="c"', children=[["d3", "z"]]),
        "d": _page(
            "d",
            "other-slug",
            icon="book",
            description="Dé\u2028scr\n",
            condition="visitor.x",
            hidden=1,
            noIndex=True,
            noRobotsIndex=0,
            createdAt="2026-01-01T00:00:00.000Z",
            updatedAt="2026-01-02T00:00:00.000Z",
            markdown="abc123",
            children=[["d\u00e9/\u0007", "t\u00e9\tst"], ["", "root"]],
        ),
        "d1": _page("d1", "one", children=[["d4", "four"]]),
        "d2": _page("d2", "two", "unknown-type", markdown="m2"),
        "d3": _page("d3", "z"),
        "d4": _page("d4", "four", children=[["d5", "five"]]),
        "d5": _page("d5", "five"),
        "d\u00e9/\u0007": _page("d\u00e9/\u0007", "t\u00e9\tst", emoji=""),
    }


def _nested(records: dict[str, dict[str, Any]], prefix: str, max_depth: int) -> bytes:
    pages = {pid: rec for pid, rec in records.items() if pid != ROOT}
    root = records.get(ROOT) or {"id": ROOT, "children": []}
    return orjson.dumps(nest_pages(pages, root, "", lambda pid: prefix + pid, max_depth))


def test_pieces_encode_what_the_presenter_nests() -> None:
    prefix = 'http://h/s/sp"ace/pages/'
    old = _records()
    kept = pieces.build("r1", old)
    for depth in (1, 2, 3, MAX_PAGE_DEPTH):
        assert pieces.encode(kept, prefix, depth) == _nested(old, prefix, depth)

    new = _records()
    new[ROOT]["children"].insert(0, ["n", "new"])
    new["n"] = _page("n", "new", children=[["d4", "moved"]])
    new["d1"]["children"] = []
    new["d"] = {**new["d"], "slug": "renamed", "hidden": False, "markdown": None}
    new["g"]["children"].reverse()
    del new["d5"]
    changed = {pid for pid in old.keys() | new.keys() if old.get(pid) != new.get(pid)}
    moved = pieces.update(kept, "r2", changed, {pid: new[pid] for pid in changed if pid in new})
    for depth in (2, MAX_PAGE_DEPTH):
        assert pieces.encode(moved, prefix, depth) == _nested(new, prefix, depth)
    assert pieces.encode(kept, prefix) == _nested(old, prefix, MAX_PAGE_DEPTH)  # left as it was

    empty = pieces.update(moved, None, [*new], {})
    assert pieces.encode(empty, prefix) == b"[]" == _nested({}, prefix, MAX_PAGE_DEPTH)


def test_pieces_are_kept_per_space_within_their_budget() -> None:
    one = pieces.build("r1", _records())
    cache = pieces.PiecesCache(2 * one.size)
    cache.put("s1", one)
    cache.put("s2", one)
    assert cache.get("s1") is one  # now the most recent
    cache.put("s3", one)  # over budget: the least recent (s2) goes
    assert (cache.get("s1"), cache.get("s2"), cache.get("s3")) == (one, None, one)
    assert cache.size == 2 * one.size
    emptier = pieces.update(one, "r2", ["d5"], {})
    cache.put("s1", emptier)  # a space keeps one revision's pieces
    assert cache.get("s1") is emptier
    assert cache.size == one.size + emptier.size < 2 * one.size
    small = pieces.PiecesCache(one.size - 1)  # a space larger than the budget is not kept
    small.put("s1", one)
    assert small.get("s1") is None and small.size == 0


def test_stored_pieces_read_back_as_built_and_refuse_other_bytes() -> None:
    prefix = "http://h/s/space/pages/"
    built = pieces.build("r1", _records())
    back = pieces.loads(pieces.dumps(built), "r1")
    assert back == built
    assert back is not None and pieces.encode(back, prefix) == pieces.encode(built, prefix)
    stored = pieces.dumps(built)
    envelopes = [
        ("r2", 1, (b"", (), b"", b"", None, b""), []),  # another map's
        ("r1", "1", (b"", (), b"", b"", None, b""), []),  # a size that is not one
        ("r1", 1, (b"",), []),  # a root piece of another shape
    ]
    refused = [b"", b"\x00", b"garbage", stored[:-5], orjson.dumps([1])]
    refused += [msgpack.packb(e) for e in envelopes]
    for data in refused:
        assert pieces.loads(data, "r1") is None
    assert pieces.loads(stored, "r2") is None
    assert pieces.build(None, {}) == pieces.loads(pieces.dumps(pieces.build(None, {})), None)  # type: ignore[arg-type]


def test_the_stored_format_follows_what_pieces_are_made_of() -> None:
    assert pieces._format() == pieces.FORMAT  # a function of the code alone
    assert len(pieces.FORMAT) == 16

    def with_a_field_more(pid: str, rec: dict[str, Any]) -> pieces.Piece:
        head, *rest = pieces.piece(pid, rec)
        return (head + b',"new":1', *rest)  # type: ignore[return-value]

    # A page shape that changes, or a change of how pieces are laid out, is another format.
    assert pieces._format(make=with_a_field_more) != pieces.FORMAT
    assert pieces._format(read_as=pieces._READ_AS + 1) != pieces.FORMAT


async def _stored(db: AsyncEngine, sid: str) -> tuple[str, bytes] | None:
    async with unit_of_work(db, write=False) as conn:
        row = await content_repository.listing_snapshot(conn, sid, pieces.FORMAT)
    return None if row is None else (row["pages_root"], row["data"])


async def _store(db: AsyncEngine, sid: str, root: str, data: bytes, format: str) -> None:
    async with unit_of_work(db) as conn:
        await content_repository.put_listing_snapshot(conn, sid, root, format, data, utcnow())


def _builds() -> dict[str, float]:
    return {
        start: REGISTRY.get_sample_value("docshelf_listing_builds_total", {"start": start}) or 0.0
        for start in ("memory", "stored", "pages")
    }


def _new_process() -> None:
    """What a process that has just started keeps: nothing."""
    content_service._listings.clear()
    content_service._pieces.clear()


async def first_listing(
    client: httpx.AsyncClient, content_url: str, who: Who, start: str = "stored"
) -> bytes:
    """The listing a process that has just started gives, checked equal to the fresh build
    and started from `start` (docshelf_listing_builds_total)."""
    _new_process()
    before = _builds()
    listed = await listing(client, f"{content_url}/pages", who)
    assert _builds() == {**before, start: before[start] + 1}
    assert listed == await built_fresh(client, content_url, who)
    return listed


@pytest.fixture
def stored_from(settings: Settings) -> Iterator[Callable[[int], None]]:
    """Spaces of at least so many pages keep stored pieces, for the test."""

    def use(pages: int) -> None:
        stored_listing.use_settings(settings.model_copy(update={"listing_snapshot_pages": pages}))

    yield use
    stored_listing.use_settings(settings)


async def test_a_large_space_is_listed_from_its_stored_pieces_by_a_new_process(
    client: httpx.AsyncClient, db: AsyncEngine, stored_from: Callable[[int], None], job_env: JobEnv
) -> None:
    stored_from(3)
    sid, admin = await live_space(client, db)
    small, other = await live_space(client, db)
    url = f"/v1/spaces/{sid}/content/pages"
    await write_live(client, small, other, insert("x", title="X"), insert("y", title="Y"))
    out = await write_live(
        client,
        sid,
        admin,
        *(insert(f"# {t}", title=t, ref=t) for t in ("A", "B", "C", "D")),
    )
    ids = {c["ref"]: c["page"]["id"] for c in out["changes"]}
    assert await _stored(db, sid) is None  # written after commit, by the job
    await JobRunner(db, job_env).drain()
    stored = await _stored(db, sid)
    assert stored is not None
    assert await _stored(db, small) is None  # below the size that is worth storing
    await write_live(client, small, other, insert("z", title="Z"))
    await JobRunner(db, job_env).drain()
    assert await _stored(db, small) is not None  # now at that size

    # A process with nothing kept lists from the stored pieces, exactly as a fresh build.
    await first_listing(client, f"/v1/spaces/{sid}/content", admin)

    # A small change: the job leaves the stored pieces a few records behind main, and a new
    # process lists main from them and the records the maps' diff names.
    await write_live(
        client,
        sid,
        admin,
        {"operation": "update_page", "page": ids["B"], "title": "Bee"},
        {"operation": "update_page", "page": ids["D"], "into": ids["A"], "at": 0},
    )
    await JobRunner(db, job_env).drain()
    assert await _stored(db, sid) == stored
    moved = await first_listing(client, f"/v1/spaces/{sid}/content", admin)
    assert [(p["title"], p["path"]) for p in orjson.loads(moved)["pages"][0]["pages"]] == [
        ("D", "a/d")
    ]

    # So is a change request's head.
    cr = await new_cr(client, sid, admin)
    r = await write(client, sid, cr["id"], admin, insert("e", title="E"))
    assert r.status_code == 200, r.text
    cr_url = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    in_cr = await first_listing(client, cr_url, admin)
    assert [p["title"] for p in orjson.loads(in_cr)["pages"]][-1] == "E"

    # Pieces stored in another format are not read, nor are bytes that are not pieces; pieces
    # of another shape are answered by a whole build, not an error.
    _new_process()
    await listing(client, url, admin)
    current = content_service._pieces.get(sid)
    assert current is not None and current.pages_root is not None
    one = next(iter(current.pages))
    misshapen = dataclasses.replace(current, pages={**current.pages, one: (b"x",)})  # type: ignore[dict-item]
    damaged = [
        (pieces.dumps(current), "0000000000000000"),
        (b"\x00", pieces.FORMAT),
        (pieces.dumps(current)[:-3], pieces.FORMAT),
        (pieces.dumps(misshapen), pieces.FORMAT),
    ]
    for data, format in damaged:
        await _store(db, sid, current.pages_root, data, format)
        assert await first_listing(client, f"/v1/spaces/{sid}/content", admin, "pages") == moved

    # Purging the space takes its stored pieces with it.
    r = await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)
    assert r.status_code == 205, r.text
    clock.advance(timedelta(days=8))
    await JobRunner(db, job_env).drain()
    async with unit_of_work(db, write=False) as conn:
        left = await conn.execute(sa.select(listing_snapshots.c.space_id))
        assert left.scalars().all() == [small]


async def test_the_job_rewrites_stored_pieces_that_lag_main_and_drops_those_of_a_small_space(
    client: httpx.AsyncClient, db: AsyncEngine, stored_from: Callable[[int], None], job_env: JobEnv
) -> None:
    stored_from(1)
    sid, admin = await live_space(client, db)
    out = await write_live(client, sid, admin, insert("a", title="A", ref="a"))
    await JobRunner(db, job_env).drain()
    first = await _stored(db, sid)
    assert first is not None
    for batch in range(2):  # more records than the stored pieces may lag by
        pages = (insert(f"p{i}", title=f"P{i}") for i in range(batch * 35, batch * 35 + 35))
        await write_live(client, sid, admin, *pages)
    await JobRunner(db, job_env).drain()
    second = await _stored(db, sid)
    assert second is not None and second[0] != first[0]
    async with unit_of_work(db, write=False) as conn:
        assert second[0] == await content_repository.main_pages_root(conn, sid)
    rebuilt = pieces.loads(second[1], second[0])
    assert rebuilt is not None and len(rebuilt.pages) == 71
    _new_process()
    url = f"/v1/spaces/{sid}/content/pages"
    assert await listing(client, url, admin) == await built_fresh(
        client, f"/v1/spaces/{sid}/content", admin
    )

    # Stored in another format: rewritten at the next move, however small.
    await _store(db, sid, second[0], second[1], "0000000000000000")
    await write_live(client, sid, admin, insert("b", title="B"))
    await JobRunner(db, job_env).drain()
    third = await _stored(db, sid)
    assert third is not None and third[0] != second[0]

    # A move while the job runs (its queued key then taken) is looked at by another pass.
    plan = await stored_listing._prepare_snapshot(db, {"space_id": sid}, env=job_env)
    await write_live(
        client, sid, admin, {"operation": "delete_page", "page": out["changes"][0]["page"]["id"]}
    )
    async with unit_of_work(db) as conn:
        await conn.execute(sa.delete(jobs))  # the move's own job: as if its key had been taken
        await stored_listing.snapshot_listing(conn, {"space_id": sid}, plan, env=job_env)
        queued = (await conn.execute(sa.select(jobs.c.kind))).scalars().all()
    assert queued == [stored_listing.SNAPSHOT_LISTING]

    # A space that shrinks below the size drops its stored pieces.
    stored_from(200)
    await write_live(client, sid, admin, insert("c", title="C"))
    await JobRunner(db, job_env).drain()
    async with unit_of_work(db, write=False) as conn:
        assert (await conn.execute(sa.select(listing_snapshots))).all() == []


async def test_the_sweep_queues_stored_pieces_for_large_spaces_that_have_none(
    client: httpx.AsyncClient, db: AsyncEngine, stored_from: Callable[[int], None], job_env: JobEnv
) -> None:
    stored_from(100)
    sid, admin = await live_space(client, db)
    small, other = await live_space(client, db)
    await write_live(client, sid, admin, *(insert(t, title=t) for t in ("A", "B", "C")))
    await write_live(client, small, other, insert("x", title="X"))
    await JobRunner(db, job_env).drain()
    assert await _stored(db, sid) is None  # too small then

    async def sweep() -> None:
        found = await stored_listing._large_spaces_unstored(db, {}, env=job_env)
        async with unit_of_work(db) as conn:
            await stored_listing.sweep_listing_snapshots(conn, {}, found, env=job_env)
        await JobRunner(db, job_env).drain()

    stored_from(3)  # large enough now (an upgrade, a lower setting), not edited since
    await sweep()
    stored = await _stored(db, sid)
    assert stored is not None and await _stored(db, small) is None
    await first_listing(client, f"/v1/spaces/{sid}/content", admin)

    # Stored in a format this code does not read (an upgrade changed it): stored again.
    await _store(db, sid, stored[0], stored[1], "0000000000000000")
    await sweep()
    assert await _stored(db, sid) == stored
    async with unit_of_work(db, write=False) as conn:
        formats = (await conn.execute(sa.select(listing_snapshots.c.format))).scalars().all()
    assert formats == [pieces.FORMAT]
