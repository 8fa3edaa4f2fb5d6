"""The merge of stored revisions (content/merge/revisions.py) against the merge of trees: random
edit batches on two sides of a random base, applied by the real editor over an in-memory object
store, must merge to exactly what the merge over every page gives, and a merge writes objects
in proportion to what changed."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Collection, Mapping
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from docshelf.content import edits
from docshelf.content.edits import ChangeError, Editor
from docshelf.content.merge import revisions as threeway
from docshelf.content.schemas import Change
from docshelf.content.tree.snapshot import Snapshot

CHANGE = TypeAdapter(Change)


class MemoryStore:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.writes = 0

    async def get_many(self, hashes: Collection[str]) -> Mapping[str, bytes]:
        return {h: self.objects[h] for h in hashes}

    async def get_json(self, hashes: Collection[str]) -> dict[str, Any]:
        return {h: orjson.loads(self.objects[h]) for h in hashes}

    async def put_many(self, objects: Mapping[str, bytes]) -> None:
        self.writes += sum(1 for h in objects if h not in self.objects)
        self.objects.update(objects)


async def _nothing(_: str) -> Any:
    raise AssertionError("not used")


async def apply(store: MemoryStore, snap: Snapshot, changes: list[dict[str, Any]]) -> Snapshot:
    """Applies each change on its own (invalid ones are skipped), like a series of requests."""
    current = snap
    for change in changes:
        attempt = Snapshot(store, current.pages_root, current.files_root)  # type: ignore[arg-type]
        editor = Editor(
            attempt,
            now="2026-01-01T00:00:00.000Z",
            fetch_file=_nothing,
            load_snapshot=_nothing,
            default_revert_to=None,
        )
        try:
            await editor.apply([CHANGE.validate_python(change)])
        except ChangeError:
            continue
        await attempt.commit()
        current = attempt
    return current


async def page_ids(snap: Snapshot) -> list[str]:
    return sorted(await snap.all_pages())


async def assert_whole(snap: Snapshot) -> None:
    """Every page is listed exactly once, by the parent it names; siblings' slugs differ."""
    pages = await snap.all_pages()
    listed: dict[str, str | None] = {}
    for node in [await snap.root(), *pages.values()]:
        slugs = [slug for _, slug in node["children"]]
        assert len(slugs) == len(set(slugs)), node
        for child, slug in node["children"]:
            assert child not in listed, child
            listed[child] = node["id"] or None
            assert pages[child]["slug"] == slug
    assert listed == {pid: rec["parent"] for pid, rec in pages.items()}


def _ops(ids: list[str], n: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    pick = st.sampled_from(ids) if ids else st.nothing()
    parent = st.one_of(st.none(), pick) if ids else st.none()
    text = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n"]), max_size=4).map("".join)
    insert = st.builds(
        lambda into, md, title: {
            "operation": "insert_page",
            "into": into,
            "title": title,
            "document": {"markdown": md},
        },
        parent,
        text,
        st.sampled_from(["One", "Two", "Three"]),
    )
    options = [insert]
    if ids:
        options += [
            st.builds(
                lambda page, md: {
                    "operation": "update_page",
                    "page": page,
                    "document": {"markdown": md},
                },
                pick,
                text,
            ),
            st.builds(
                lambda page, into: {"operation": "update_page", "page": page, "into": into},
                pick,
                parent,
            ),
            st.builds(
                lambda page, title: {"operation": "update_page", "page": page, "title": title},
                pick,
                st.sampled_from(["Alpha", "Beta"]),
            ),
            st.builds(lambda page: {"operation": "delete_page", "page": page}, pick),
        ]
    return st.lists(st.one_of(options), max_size=n)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_scoped_merge_equals_the_whole_tree_merge(data: st.DataObject) -> None:
    # Deterministic page ids, so each example draws the same data when Hypothesis replays it.
    counter = itertools.count()
    original = edits.new_id
    edits.new_id = lambda: f"page{next(counter):04d}"
    try:
        asyncio.run(_scoped_vs_full(data))
    finally:
        edits.new_id = original


async def _scoped_vs_full(data: st.DataObject) -> None:
    store = MemoryStore()
    empty = Snapshot(store, None, None)  # type: ignore[arg-type]
    seed = data.draw(_ops([], 8), label="seed")
    base = await apply(store, empty, seed)
    for _ in range(2):  # a second level so moves and nesting have room
        base = await apply(store, base, data.draw(_ops(await page_ids(base), 4)))
    ids = await page_ids(base)
    ours = await apply(store, base, data.draw(_ops(ids, 4), label="ours"))
    theirs = await apply(store, base, data.draw(_ops(ids, 4), label="theirs"))
    scoped = await threeway.merge_snapshots(base, ours, theirs, now="2026-01-02T00:00:00.000Z")
    sides = [(await s.all_pages(), await s.root()) for s in (base, ours, theirs)]
    full = await threeway._merge_pages(ours, *sides, changed=None, now="2026-01-02T00:00:00.000Z")
    assert full is not None
    await assert_whole(Snapshot(store, scoped.pages_root, None))  # type: ignore[arg-type]
    assert scoped.pages_root == full[0]
    assert sorted(map(repr, scoped.conflicts)) == sorted(map(repr, full[1]))


def test_a_one_page_merge_writes_a_handful_of_objects() -> None:
    async def run() -> None:
        store = MemoryStore()
        base = Snapshot(store, None, None)  # type: ignore[arg-type]
        for section in range(4):
            base = await apply(
                store,
                base,
                [{"operation": "insert_page", "title": f"S{section}", "document": {}}],
            )
        sections = await page_ids(base)
        for section in sections:
            base = await apply(
                store,
                base,
                [
                    {
                        "operation": "insert_page",
                        "into": section,
                        "title": f"P{i}",
                        "document": {"markdown": f"text {i}\n"},
                    }
                    for i in range(50)
                ],
            )
        pages = await page_ids(base)
        ours = await apply(
            store, base, [{"operation": "update_page", "page": pages[0], "title": "Ours"}]
        )
        theirs = await apply(
            store,
            base,
            [{"operation": "update_page", "page": pages[-1], "document": {"markdown": "x\n"}}],
        )
        store.writes = 0
        merged = await threeway.merge_snapshots(base, ours, theirs, now="2026-01-02T00:00:00.000Z")
        assert merged.conflicts == ()
        # theirs' page record and its map path; nothing proportional to the 204 pages.
        assert store.writes <= 6

    asyncio.run(run())


def _file(fid: str, blob: str) -> dict[str, Any]:
    return {
        "id": fid,
        "name": f"{fid}.png",
        "contentType": "image/png",
        "size": 1,
        "blob": blob,
        "createdAt": "2026-01-01T00:00:00.000Z",
    }


# (ours, theirs) over a base file whose bytes are "b"; a blob, or None for deleted, or "" for
# untouched; then the merged blob (None: gone) and whether a conflict is reported.
FILE_CASES = [
    ("", "t", "t", False),  # theirs changed
    ("o", "", "o", False),  # ours changed
    ("o", None, "o", False),  # a change beats a deletion
    (None, "t", "t", False),
    ("x", "x", "x", False),  # the same change on both sides
    ("o", "t", "o", True),  # both changed: ours kept, reported
    (None, None, None, False),
    ("", None, None, False),
]


def test_files_merge_by_identity() -> None:
    async def merge(
        ours_blob: str | None, theirs_blob: str | None
    ) -> tuple[threeway.Merged, dict[str, str]]:
        store = MemoryStore()
        base = Snapshot(store, None, None)  # type: ignore[arg-type]
        base.put_file(_file("F", "b"))
        await base.commit()
        sides = []
        for blob, added in ((ours_blob, "O"), (theirs_blob, "T")):
            side = Snapshot(store, base.pages_root, base.files_root)  # type: ignore[arg-type]
            if blob is None:
                side.drop_file("F")
            elif blob:
                side.put_file(_file("F", blob))
            side.put_file(_file(added, added))  # each side adds a file of its own
            await side.commit()
            sides.append(side)
        merged = await threeway.merge_snapshots(base, *sides, now="2026-01-02T00:00:00.000Z")
        out = Snapshot(store, merged.pages_root, merged.files_root)  # type: ignore[arg-type]
        return merged, {fid: rec["blob"] for fid, rec in (await out.all_files()).items()}

    for ours_blob, theirs_blob, expected, conflict in FILE_CASES:
        case = (ours_blob, theirs_blob)
        merged, blobs = asyncio.run(merge(ours_blob, theirs_blob))
        assert blobs == {"O": "O", "T": "T", **({"F": expected} if expected else {})}, case
        assert [c.kind for c in merged.file_conflicts] == (["content"] if conflict else []), case
        assert merged.conflicts == () and merged.reusable_conflicts == (), case
