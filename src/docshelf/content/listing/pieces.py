"""A revision's page tree as the encoded JSON of GET .../content/pages, built from per-page pieces
kept across revisions.

A page's encoded form is a function of its record alone, but for its path (its ancestors'
slugs, as each parent lists its children), its child pages (their records, their depth) and its
URL (the base URL and the space before its id). So each page is encoded once into the pieces
around those holes (`Piece`; the layout, the same for every page, is not kept per page), and a
listing is those pieces joined along the tree, paths, children and URLs filled in on the way
down. A new revision that changes k records is listed by decoding and encoding those k (the
maps' diff names them, skipping every subtree both roots share); the rest of the walk is byte
concatenation.

The answer is the bytes `orjson.dumps(presenter.nest_pages(...))` gives: the tests compare the
two after renames, moves, reorders, deletes, depth cuts, link and group pages and odd stored
values. JSON string escaping is per character, so the escaped path of a page is its parent's
escaped path, "/" and its escaped slug, and a URL the escaped prefix and the escaped id.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgpack
import orjson

from docshelf.content.presenter import DEFAULT_LAYOUT, present_page
from docshelf.content.tree import hamt
from docshelf.content.tree.objects import ObjectStore
from docshelf.content.tree.snapshot import ROOT, Record
from docshelf.document.limits import MAX_PAGE_DEPTH
from docshelf.kit.lru import SizedLRU

_PAGES_OPEN = b'","pages":['
# After a document's URL: the rest of `urls` and the layout every listed page shows.
_URL_END = b'"},"layout":' + orjson.dumps(DEFAULT_LAYOUT)

# Between the escaped slugs of a page's children: a byte JSON never leaves unescaped.
_SEP = b"\x00"
_NO_KIDS: tuple[str, ...] = ()
_NO_IDS: Mapping[str, str] = {}


# One page, encoded, as a plain tuple (a dataclass's constructor was a fifth of a build):
# (head, kids, slugs, tail, url_id, end). A link page is `head` alone (`kids` None). Otherwise
# the page is `head`, its path, `","pages":[`, its children, then `tail`; a document's tail goes
# on with the URL prefix, its id (`url_id`, or the id itself when it needs no escaping),
# `_URL_END` and `end`. `kids` are the children's ids as listed, `slugs` their slugs as listed
# (escaped, joined by `_SEP`): a child's path takes the slug its parent lists.
Piece = tuple[bytes, tuple[str, ...] | None, bytes, bytes, bytes | None, bytes]


def _inner(value: str) -> bytes:
    return orjson.dumps(value)[1:-1]


def _tail(document: bool, hidden: Any, no_index: Any, no_robots: Any) -> bytes:
    key = (document, hidden, no_index, no_robots)
    try:
        return _TAILS[key]
    except (KeyError, TypeError):
        pass
    flags = {"hidden": bool(hidden), "noIndex": bool(no_index), "noRobotsIndex": bool(no_robots)}
    tail = b"]," + orjson.dumps(flags)[1:-1] + (b',"urls":{"app":' if document else b"}")
    if len(_TAILS) < 64:  # flags are booleans: a handful of keys
        with contextlib.suppress(TypeError):  # a flag stored as a list or an object
            _TAILS[key] = tail
    return tail


# By flags as stored (equal values, True and 1 alike, encode alike): a handful of entries.
_TAILS: dict[tuple[Any, ...], bytes] = {}

_NO_DOCUMENT_ID = b',"tags":[]}'


def _kids(
    children: list[list[str]], ids: Mapping[str, str] = _NO_IDS
) -> tuple[tuple[str, ...], bytes]:
    """`ids`: page ids to share rather than keep equal copies of (a build's dict keys)."""
    if not children:
        return _NO_KIDS, b""
    kids = tuple(ids.get(cid, cid) for cid, _ in children)
    return kids, _SEP.join(_inner(f"{slug}") for _, slug in children)


def piece(page_id: str, rec: Record, ids: Mapping[str, str] = _NO_IDS) -> Piece:
    """The page `presenter.present_page` gives for `rec` in a listing, encoded around its
    holes. A mirror of that function, field for field (`tests/test_pages_listing.py` holds the
    two equal for every optional field and page type): going through it and cutting its
    encoding cost twice as much, and the first listing of a space builds 10,000 of these."""
    kind = rec["type"]
    if kind == "link":
        return (
            orjson.dumps(present_page(rec, path="", pages=[], app_url="")),
            None,
            b"",
            b"",
            None,
            b"",
        )
    out: dict[str, Any] = {"id": rec["id"], "title": rec["title"]}
    for name in ("emoji", "icon", "description", "condition"):
        if (value := rec.get(name)) is not None:
            out[name] = value
    for name in ("createdAt", "updatedAt"):
        if value := rec.get(name):
            out[name] = value
    out["kind"] = "group" if kind == "group" else "sheet"
    out["type"] = kind
    out["slug"] = rec["slug"]
    out["path"] = ""
    head = orjson.dumps(out)[:-2]  # up to the path's opening quote
    children = rec["children"]
    kids, slugs = _kids(children, ids) if children else (_NO_KIDS, b"")
    document = kind == "document"
    tail = _tail(document, rec.get("hidden"), rec.get("noIndex"), rec.get("noRobotsIndex"))
    if not document:
        return (head, kids, slugs, tail, None, b"")
    url_id = _inner(page_id)
    doc = rec.get("markdown")
    return (
        head,
        kids,
        slugs,
        tail,
        None if url_id == page_id.encode() else url_id,
        b',"tags":[],"documentId":%s}' % orjson.dumps(doc) if doc else _NO_DOCUMENT_ID,
    )


# What a kept page costs beyond its head: its other bytes, the piece, its id and dict slot.
_PAGE_OVERHEAD = 300


@dataclass
class Pieces:
    """The pieces of one revision's pages (by page id) and its root's children."""

    pages_root: str | None
    pages: dict[str, Piece]
    top: Piece
    size: int


def _top(rec: Record | None, ids: Mapping[str, str] = _NO_IDS) -> Piece:
    kids, slugs = _kids(rec["children"], ids) if rec is not None else (_NO_KIDS, b"")
    return (b"", kids, slugs, b"", None, b"")


def _cost(p: Piece) -> int:
    return len(p[0]) + len(p[2]) + _PAGE_OVERHEAD


def build(pages_root: str | None, records: Mapping[str, Record]) -> Pieces:
    """Pieces of every page (`records`: the pages map's records by id, the root's included)."""
    ids = {pid: pid for pid in records}
    pages: dict[str, Piece] = {}
    size = 0
    for pid, rec in records.items():
        if pid != ROOT:
            p = pages[pid] = piece(pid, rec, ids)
            size += len(p[0]) + len(p[2])
    top = _top(records.get(ROOT), ids)
    return Pieces(pages_root, pages, top, size + _PAGE_OVERHEAD * len(pages))


def update(
    old: Pieces, pages_root: str | None, changed: Iterable[str], records: Mapping[str, Record]
) -> Pieces:
    """`old` moved to another root: `changed` are the ids whose records differ (`records` holds
    the new ones; an id missing from it was removed). `old` itself is left as it was."""
    pages = dict(old.pages)
    top = old.top
    size = old.size
    for pid in changed:
        rec = records.get(pid)
        if pid == ROOT:
            top = _top(rec)
            continue
        gone = pages.pop(pid, None)
        if gone is not None:
            size -= _cost(gone)
        if rec is not None:
            new = pages[pid] = piece(pid, rec)
            size += _cost(new)
    return Pieces(pages_root, pages, top, size)


def encode(pieces: Pieces, url_prefix: str, max_depth: int = MAX_PAGE_DEPTH) -> bytes:
    """The listing's bytes: what orjson gives for `presenter.nest_pages` of the same records
    from the root, with `url_prefix` + id as each page's app URL."""
    pages = pieces.pages
    url_open = orjson.dumps(url_prefix)[:-1]
    out: list[bytes] = [b"["]
    append, extend = out.append, out.extend
    # A childless document's bytes between its path and its id, by its tail (a few kinds).
    leaf_mid: dict[bytes, bytes] = {}

    def walk(node: Piece, prefix: bytes, depth: int) -> None:
        sep = b""
        for cid, slug in zip(node[1] or (), node[2].split(_SEP), strict=False):
            p = pages.get(cid)
            if p is None:
                continue
            head, kids, _, tail, url_id, end = p
            if kids is None:
                extend((sep, head))
            elif not kids or depth >= max_depth:
                if end:
                    mid = leaf_mid.get(tail)
                    if mid is None:
                        mid = leaf_mid[tail] = _PAGES_OPEN + tail + url_open
                    extend((sep, head, prefix, slug, mid, url_id or cid.encode(), _URL_END, end))
                else:
                    extend((sep, head, prefix, slug, _PAGES_OPEN, tail))
            else:
                path = prefix + slug
                extend((sep, head, path, _PAGES_OPEN))
                walk(p, path + b"/", depth + 1)
                append(tail)
                if end:
                    extend((url_open, url_id or cid.encode(), _URL_END, end))
            sep = b","

    walk(pieces.top, b"", 1)
    append(b"]")
    return b"".join(out)


# How pieces are stored and read: bumped by hand when `dumps` lays them out or `encode` reads
# them differently (what `piece` writes is fingerprinted by itself, below).
_READ_AS = 1


def _format(read_as: int = _READ_AS, make: Callable[[str, Record], Piece] = piece) -> str:
    """The stored form's version: a digest of the pieces `piece` makes of records with every
    optional field and page type, and of how `encode` reads them. Stored pieces of another
    version are never read, so a change of the presenter's page shape, which `piece` mirrors,
    takes stored pieces out of use without anyone having to remember them (their unchanged
    pages would otherwise keep the old shape, as each new revision's pieces start from them)."""
    records: dict[str, Record] = {
        "d": {
            "id": "d",
            "type": "document",
            "title": "Doc",
            "slug": "doc",
            "children": [["g", "grp"], ["l", "lnk"]],
            "emoji": "1f600",
            "icon": "book",
            "description": "About",
            "condition": "visitor.x",
            "createdAt": "2026-01-01T00:00:00.000Z",
            "updatedAt": "2026-01-02T00:00:00.000Z",
            "hidden": True,
            "noIndex": False,
            "noRobotsIndex": True,
            "markdown": "abc",
        },
        "g": {"id": "g", "type": "group", "title": "Grp", "slug": "grp", "children": []},
        "l": {
            "id": "l",
            "type": "link",
            "title": "Lnk",
            "slug": "lnk",
            "href": "https://example.com",
            "children": [],
        },
    }
    probe = [make(pid, rec) for pid, rec in records.items()]
    made = orjson.dumps([read_as, [[v.hex() if type(v) is bytes else v for v in p] for p in probe]])
    return hashlib.sha256(made).hexdigest()[:16]


FORMAT = _format()


def dumps(pieces: Pieces) -> bytes:
    """`pieces` as stored between processes (listing_snapshots, with FORMAT in a column of its
    own): msgpack, which keeps the byte strings and tuples as they are, so `loads` is one C
    call and no re-encoding."""
    # The pages as a map: unpacked as the dict `encode` reads.
    return bytes(msgpack.packb((pieces.pages_root, pieces.size, pieces.top, pieces.pages)))


def loads(data: bytes, pages_root: str) -> Pieces | None:
    """What `dumps` stored for the map at `pages_root`, or None for bytes that are not that.
    Only the envelope is checked here (10,000 pages checked one by one cost what unpacking
    does): `encode` raises ValueError or TypeError on a piece of another shape, which the
    caller reading stored pieces answers with a whole build."""
    try:
        root, size, top, pages = msgpack.unpackb(data, use_list=False, strict_map_key=True)
        if (
            root != pages_root
            or type(size) is not int
            or not (type(top) is tuple and len(top) == 6)
            or type(pages) is not dict
        ):
            return None
        return Pieces(root, pages, top, size)
    except (ValueError, TypeError, IndexError, msgpack.UnpackException):
        return None


class PiecesCache(SizedLRU[str, "Pieces"]):
    """The latest pieces per space, LRU, bounded by their estimated size: a
    new revision of the space is then built from its predecessor's pieces."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, lambda pieces: pieces.size)


async def pieces_of(store: ObjectStore, pages_root: str | None, base: Pieces | None) -> Pieces:
    """The pieces of the map at `pages_root`: from `base` (another revision's) when given, by
    decoding only the records the maps' diff names; else from every record."""
    if base is not None and base.pages_root == pages_root:
        return base
    if base is not None:
        try:
            diff = await hamt.diff(store, base.pages_root, pages_root)
        except KeyError:
            pass  # the base's objects are gone (a purged space): build from scratch
        else:
            wanted = {new for _, new in diff.values() if new is not None}
            loaded = await store.get_json(wanted)
            records = {pid: loaded[new] for pid, (_, new) in diff.items() if new is not None}
            return update(base, pages_root, diff, records)
    entries = await hamt.items(store, pages_root)
    loaded = await store.get_json(set(entries.values()))
    return build(pages_root, {pid: loaded[h] for pid, h in entries.items()})
