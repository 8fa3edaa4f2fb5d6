"""Three-way merge of stored revisions: the pure merge (content/merge.py) applied to snapshots.

Markdown is not loaded for every page: a page's body travels through the merge as a token naming
its text object, and only the pages whose body changed on both sides get their real texts, which
merge3 then combines line by line. The result is written as a new snapshot on top of `ours`, so
only records that differ from ours become new objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from docshelf.content import hamt
from docshelf.content.merge import Conflict, merge
from docshelf.content.model import Page, Tree
from docshelf.content.snapshot import ROOT, Record, Snapshot

_TOKEN = "\x00text:"
# Record fields the pure model does not carry; merged field by field (one side changed: take it).
_EXTRA = ("noIndex", "noRobotsIndex", "condition", "createdAt")


@dataclass(frozen=True)
class Merged:
    pages_root: str | None
    files_root: str | None
    conflicts: tuple[Conflict, ...]


def _tree(records: dict[str, Record], root: Record, texts: dict[str, str]) -> Tree:
    position: dict[str, int] = {}
    for parent in [root, *records.values()]:
        for index, (child, _) in enumerate(parent["children"]):
            position[child] = index
    pages = []
    for rec in records.values():
        key = rec.get("markdown")
        body = "" if not key else texts.get(key, _TOKEN + key)
        pages.append(
            Page(
                id=rec["id"],
                parent=rec["parent"],
                position=position.get(rec["id"], 0),
                type=rec["type"],
                title=rec["title"],
                slug=rec["slug"],
                emoji=rec.get("emoji"),
                icon=rec.get("icon"),
                description=rec.get("description"),
                hidden=bool(rec.get("hidden")),
                href=rec.get("href"),
                markdown=body if rec["type"] == "document" else "",
            )
        )
    return Tree.of(pages)


async def _load(snap: Snapshot) -> tuple[dict[str, Record], Record]:
    return await snap.all_pages(), await snap.root()


async def merge_snapshots(base: Snapshot, ours: Snapshot, theirs: Snapshot, *, now: str) -> Merged:
    """`ours` wins what cannot be combined; every such point is reported as a conflict."""
    files_root = await _merge_files(base, ours, theirs)
    if theirs.pages_root == base.pages_root or theirs.pages_root == ours.pages_root:
        return Merged(ours.pages_root, files_root, ())
    if ours.pages_root == base.pages_root:
        return Merged(theirs.pages_root, files_root, ())
    (b, b_root), (o, o_root), (t, t_root) = [await _load(s) for s in (base, ours, theirs)]
    both = [
        pid
        for pid in o.keys() & t.keys() & b.keys()
        if len({o[pid].get("markdown"), t[pid].get("markdown"), b[pid].get("markdown")}) == 3
    ]
    keys = {rec.get("markdown") for pid in both for rec in (o[pid], t[pid], b[pid])}
    texts = await ours.markdowns({k for k in keys if k})
    result = merge(_tree(b, b_root, texts), _tree(o, o_root, texts), _tree(t, t_root, texts))
    out = Snapshot(ours.store, ours.pages_root, ours.files_root)
    merged_tree = result.tree
    for page in merged_tree.pages:
        if page.markdown.startswith(_TOKEN):
            key: str | None = page.markdown[len(_TOKEN) :]
        else:
            key = out.put_text(page.markdown)
        sides = (o.get(page.id), t.get(page.id), b.get(page.id))
        record = _record(page, merged_tree, *sides, markdown=key, now=now)
        if record != o.get(page.id):
            out.put_page(record)
    for pid in o.keys() - set(merged_tree.keys()):
        out.drop_page(pid)
    root_children = [[p.id, p.slug] for p in merged_tree.children(None)]
    if root_children != o_root["children"]:
        out.put_root({"id": ROOT, "children": root_children})
    pages_root, _ = await out.commit()
    return Merged(pages_root, files_root, result.conflicts)


def _record(
    page: Page,
    tree: Tree,
    ours: Record | None,
    theirs: Record | None,
    base: Record | None,
    *,
    markdown: str | None,
    now: str,
) -> Record:
    source: dict[str, Any] = dict(ours or theirs or {})
    record = {
        **source,
        "id": page.id,
        "type": page.type,
        "title": page.title,
        "slug": page.slug,
        "parent": page.parent,
        "children": [[c.id, c.slug] for c in tree.children(page.id)],
        "emoji": page.emoji,
        "icon": page.icon,
        "description": page.description,
        "hidden": page.hidden,
        "href": page.href,
        "markdown": markdown,
    }
    for name in _EXTRA:
        b = (base or {}).get(name)
        o = (ours or {}).get(name)
        t = (theirs or {}).get(name)
        record[name] = t if (ours is None or (o == b and t != b)) and theirs is not None else o
    stamps = [r["updatedAt"] for r in (ours, theirs) if r and r.get("updatedAt")]
    record["updatedAt"] = max(stamps) if stamps else now
    if (
        ours is not None
        and theirs is not None
        and _differs(record, ours)
        and _differs(record, theirs)
    ):
        record["updatedAt"] = now  # a page neither side wrote as it is now
    return record


def _differs(a: Record, b: Record) -> bool:
    skip = ("updatedAt", "children")
    return any(a.get(k) != b.get(k) for k in a.keys() | b.keys() if k not in skip)


async def _merge_files(base: Snapshot, ours: Snapshot, theirs: Snapshot) -> str | None:
    """Files are never edited in place: keep ours, add what theirs added, drop what theirs
    deleted."""
    if theirs.files_root in (base.files_root, ours.files_root):
        return ours.files_root
    if ours.files_root == base.files_root:
        return theirs.files_root
    changes = await hamt.diff(base.store, base.files_root, theirs.files_root)
    root, objects = await hamt.update(
        ours.store, ours.files_root, {fid: after for fid, (_, after) in changes.items()}
    )
    await ours.store.put_many(objects)
    return root
