"""One revision's content as stored: page, file and reusable content records reached through
three content-addressed maps, read lazily and written through a buffer.

A page record holds its parent and its children (id and slug, in order), so that a page's path,
its siblings' slugs and its subtree are reached without loading the rest of the space; the
children of the root live in a record under the key ROOT. Markdown is a separate text object,
so an edit of a page's title does not copy its body. `commit()` turns the buffer into new
objects: O(changed records x map depth), everything else is shared with the parent revision.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from docshelf.content.tree import hamt
from docshelf.content.tree.objects import ObjectStore, encode_json, text_object

ROOT = ""
Record = dict[str, Any]

PAGE_DEFAULTS: Record = {
    "type": "document",
    "parent": None,
    "children": [],
    "emoji": None,
    "icon": None,
    "description": None,
    "hidden": False,
    "noIndex": False,
    "noRobotsIndex": False,
    "href": None,
    "condition": None,
    "markdown": None,
    "createdAt": None,
    "updatedAt": None,
}


def new_root() -> Record:
    return {"id": ROOT, "children": []}


class Snapshot:
    def __init__(
        self,
        store: ObjectStore,
        pages_root: str | None,
        files_root: str | None,
        reusable_root: str | None = None,
    ) -> None:
        self.store = store
        self.pages_root = pages_root
        self.files_root = files_root
        # Reusable contents ({id, title, markdown, createdAt, updatedAt}) by id: GitBook's
        # "reusable contents", a body shared by pages that include it.
        self.reusable_root = reusable_root
        self._reusables: dict[str, Record | None] = {}
        self._dirty_reusables: set[str] = set()
        # Records read so far (None: absent) and records changed since loading (None: deleted).
        self._pages: dict[str, Record | None] = {}
        self._files: dict[str, Record | None] = {}
        self._dirty_pages: set[str] = set()
        self._dirty_files: set[str] = set()
        self._texts: dict[str, bytes] = {}

    # Reading

    async def _load(
        self, root: str | None, cache: dict[str, Record | None], ids: Iterable[str]
    ) -> None:
        wanted = [i for i in set(ids) if i not in cache]
        if not wanted:
            return
        found = await hamt.lookup(self.store, root, wanted)
        records = await self.store.get_json(set(found.values()))
        for i in wanted:
            cache[i] = records[found[i]] if i in found else None

    async def pages(self, ids: Collection[str]) -> dict[str, Record]:
        await self._load(self.pages_root, self._pages, ids)
        return {i: r for i in ids if (r := self._pages.get(i)) is not None}

    async def page(self, page_id: str) -> Record | None:
        if page_id == ROOT:
            return None
        # Read or changed already (None: absent or deleted): presenting a search hit asks for
        # the same few records hundreds of times, and each walk through `pages` cost ~10 µs.
        if page_id in self._pages:
            return self._pages[page_id]
        return (await self.pages([page_id])).get(page_id)

    async def root(self) -> Record:
        return (await self.pages([ROOT])).get(ROOT) or new_root()

    async def node(self, page_id: str | None) -> Record | None:
        """The record children hang from: the root for None, else the page."""
        return await self.root() if page_id is None else await self.page(page_id)

    async def files(self, ids: Collection[str]) -> dict[str, Record]:
        await self._load(self.files_root, self._files, ids)
        return {i: r for i in ids if (r := self._files.get(i)) is not None}

    async def file(self, file_id: str) -> Record | None:
        return (await self.files([file_id])).get(file_id)

    async def reusables(self, ids: Collection[str]) -> dict[str, Record]:
        await self._load(self.reusable_root, self._reusables, ids)
        return {i: r for i in ids if (r := self._reusables.get(i)) is not None}

    async def reusable(self, reusable_id: str) -> Record | None:
        return (await self.reusables([reusable_id])).get(reusable_id)

    async def all_reusables(self) -> dict[str, Record]:
        return await self._all(self.reusable_root, self._reusables, self._dirty_reusables)

    async def ancestors(self, page_id: str) -> list[Record]:
        """Parent first, up to the top-level page."""
        out: list[Record] = []
        page = await self.page(page_id)
        while page is not None and page["parent"] is not None:
            page = await self.page(page["parent"])
            if page is not None:
                out.append(page)
        return out

    async def depth(self, page_id: str) -> int:
        """How deep a page sits: the root 0, a top-level page 1."""
        if not page_id:
            return 0
        return 1 + len(await self.ancestors(page_id))

    async def height(self, page_id: str) -> int:
        """Levels from the page down to its deepest descendant, itself included; one round trip
        per level."""
        height = 0
        level = [page_id]
        while level:
            height += 1
            records = await self.pages(level)
            level = [cid for pid in level if pid in records for cid, _ in records[pid]["children"]]
        return height

    async def path(self, page_id: str) -> str:
        page = await self.page(page_id)
        if page is None:
            return ""
        chain = [page, *await self.ancestors(page_id)]
        return "/".join(p["slug"] for p in reversed(chain))

    async def resolve_path(self, path: str) -> str | None:
        """The page at a slug path ("a/b/c"), walking down from the root."""
        node = await self.root()
        found: str | None = None
        for slug in [s for s in path.strip("/").split("/") if s]:
            found = next((cid for cid, cslug in node["children"] if cslug == slug), None)
            if found is None:
                return None
            child = await self.page(found)
            if child is None:
                return None
            node = child
        return found

    async def subtree(self, page_id: str) -> list[Record]:
        """The page's descendants, breadth first, loading one level per round trip."""
        out: list[Record] = []
        level = [page_id]
        while level:
            records = await self.pages(level)
            kids = [cid for pid in level if pid in records for cid, _ in records[pid]["children"]]
            kid_records = await self.pages(kids)
            out.extend(kid_records[k] for k in kids if k in kid_records)
            level = kids
        return out

    async def all_pages(self) -> dict[str, Record]:
        """Every page record (the root's excluded), for listings and merges."""
        out = await self._all(self.pages_root, self._pages, self._dirty_pages)
        out.pop(ROOT, None)
        return out

    async def all_files(self) -> dict[str, Record]:
        return await self._all(self.files_root, self._files, self._dirty_files)

    async def _all(
        self, root: str | None, loaded: dict[str, Record | None], dirty: set[str]
    ) -> dict[str, Record]:
        """Every record of one map as stored, with this buffer's changes over it."""
        entries = await hamt.items(self.store, root)
        records = await self.store.get_json(set(entries.values()))
        out = {rid: records[h] for rid, h in entries.items()}
        for rid in dirty:
            rec = loaded.get(rid)
            if rec is None:
                out.pop(rid, None)
            else:
                out[rid] = rec
        return out

    async def markdown(self, record: Record) -> str:
        key = record.get("markdown")
        if not key:
            return ""
        if key in self._texts:
            return self._texts[key].decode()
        return (await self.store.get_many([key]))[key].decode()

    async def markdowns(self, keys: Collection[str]) -> dict[str, str]:
        wanted = {k for k in keys if k and k not in self._texts}
        loaded = await self.store.get_many(wanted) if wanted else {}
        out = {k: v.decode() for k, v in loaded.items()}
        out.update({k: self._texts[k].decode() for k in keys if k in self._texts})
        return out

    # Writing

    def put_page(self, record: Record) -> None:
        self._pages[record["id"]] = record
        self._dirty_pages.add(record["id"])

    def put_root(self, record: Record) -> None:
        self.put_page(record)

    def drop_page(self, page_id: str) -> None:
        self._pages[page_id] = None
        self._dirty_pages.add(page_id)

    def put_file(self, record: Record) -> None:
        self._files[record["id"]] = record
        self._dirty_files.add(record["id"])

    def drop_file(self, file_id: str) -> None:
        self._files[file_id] = None
        self._dirty_files.add(file_id)

    def put_reusable(self, record: Record) -> None:
        self._reusables[record["id"]] = record
        self._dirty_reusables.add(record["id"])

    def drop_reusable(self, reusable_id: str) -> None:
        self._reusables[reusable_id] = None
        self._dirty_reusables.add(reusable_id)

    def put_text(self, text: str) -> str | None:
        """Stores a markdown text; its key, or None for an empty text."""
        if not text:
            return None
        key, data = text_object(text)
        self._texts[key] = data
        return key

    @property
    def changed(self) -> bool:
        return bool(self._dirty_pages or self._dirty_files or self._dirty_reusables)

    def _encode(
        self, loaded: dict[str, Record | None], dirty: set[str], objects: dict[str, bytes]
    ) -> dict[str, str | None]:
        """The map changes of one kind of record (None: removed), their objects (and the texts
        they name that this buffer holds) added to `objects`."""
        changes: dict[str, str | None] = {}
        for rid in dirty:
            rec = loaded.get(rid)
            if rec is None or (rid == ROOT and not rec["children"]):
                # An empty space has no root record: one canonical form.
                changes[rid] = None
                continue
            key, data = encode_json(rec)
            objects[key] = data
            changes[rid] = key
            if rec.get("markdown") in self._texts:
                objects[rec["markdown"]] = self._texts[rec["markdown"]]
        return changes

    async def commit(self) -> tuple[str | None, str | None]:
        """Writes the buffer's objects and returns the new (pages_root, files_root)."""
        objects: dict[str, bytes] = {}
        page_changes = self._encode(self._pages, self._dirty_pages, objects)
        file_changes = self._encode(self._files, self._dirty_files, objects)
        reusable_changes = self._encode(self._reusables, self._dirty_reusables, objects)
        pages_root, page_nodes = await hamt.update(self.store, self.pages_root, page_changes)
        files_root, file_nodes = await hamt.update(self.store, self.files_root, file_changes)
        reusable_root, reusable_nodes = await hamt.update(
            self.store, self.reusable_root, reusable_changes
        )
        objects.update(page_nodes)
        objects.update(file_nodes)
        objects.update(reusable_nodes)
        await self.store.put_many(objects)
        self.pages_root, self.files_root = pages_root, files_root
        self.reusable_root = reusable_root
        self._dirty_pages.clear()
        self._dirty_files.clear()
        self._dirty_reusables.clear()
        return pages_root, files_root
