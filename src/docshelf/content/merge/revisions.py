"""Three-way merge of stored revisions: the pure merge (merge/pages.py) applied to snapshots.

Markdown is not loaded for every page: a page's body travels through the merge as a token naming
its text object, and only the pages whose body changed on both sides get their real texts, which
merge3 then combines line by line. The result is written as a new snapshot on top of `ours`, so
only records that differ from ours become new objects.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from docshelf.content.merge.pages import MergeConflict, merge, merge_markdown
from docshelf.content.tree import hamt
from docshelf.content.tree.model import Page, Tree
from docshelf.content.tree.snapshot import ROOT, Record, Snapshot
from docshelf.document.limits import MAX_PAGE_DEPTH, too_deep
from docshelf.kit.errors import BadRequest

_TOKEN = "\x00text:"
# Record fields the pure model does not carry; merged field by field (one side changed: take it).
_EXTRA = ("noIndex", "noRobotsIndex", "condition", "createdAt")


@dataclass(frozen=True)
class Merged:
    pages_root: str | None
    files_root: str | None
    conflicts: tuple[MergeConflict, ...]
    reusable_root: str | None = None
    # Conflicts on reusable contents: `page_id` holds the reusable content's id.
    reusable_conflicts: tuple[MergeConflict, ...] = ()
    # Files both sides changed: `page_id` holds the file's id.
    file_conflicts: tuple[MergeConflict, ...] = ()


def _tree(records: dict[str, Record], root: Record, texts: dict[str, str]) -> Tree:
    """The pure model of `records`. Positions count only the children present, so a scoped
    subset (see _scope) of an unchanged parent's children is still numbered 0..n-1."""
    position: dict[str, int] = {}
    for parent in [root, *records.values()]:
        present = [child for child, _ in parent["children"] if child in records]
        for index, child in enumerate(present):
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


Side = tuple[dict[str, Record], Record]


async def _scope(snaps: tuple[Snapshot, ...], changed: set[str]) -> list[Side]:
    """Per side, the records a merge of `changed` needs: the changed pages, every ancestor (so
    each tree is closed upward) and all children of changed pages and of a changed root (so
    sibling orders merge over whole lists). Pages outside are the same on all three sides."""
    roots = [await s.root() for s in snaps]
    records: list[dict[str, Record]] = [{} for _ in snaps]
    pending = set(changed) - {ROOT}
    if ROOT in changed:
        pending |= {child for root in roots for child, _ in root["children"]}
    loaded: set[str] = set()
    while pending:
        loaded |= pending
        found = [await s.pages(pending) for s in snaps]
        more: set[str] = set()
        for side, got in zip(records, found, strict=True):
            side.update(got)
            for pid, rec in got.items():
                if rec["parent"] is not None:
                    more.add(rec["parent"])
                if pid in changed:
                    more.update(child for child, _ in rec["children"])
        pending = more - loaded
    return list(zip(records, roots, strict=True))


async def merge_snapshots(base: Snapshot, ours: Snapshot, theirs: Snapshot, *, now: str) -> Merged:
    """`ours` wins what cannot be combined; every such point is reported as a conflict.

    Only what either side changed is loaded: a merge of a one-page change costs the same in a
    space of 100 or 10,000 pages. Should the merge's structural repairs reach a page outside
    that scope (an orphan moved up to an unchanged ancestor), it is redone over every page."""
    files_root, f_conflicts = await _merge_files(base, ours, theirs)
    rc_root, rc_conflicts = await _merge_reusables(base, ours, theirs, now=now)
    if theirs.pages_root == base.pages_root or theirs.pages_root == ours.pages_root:
        return Merged(ours.pages_root, files_root, (), rc_root, rc_conflicts, f_conflicts)
    if ours.pages_root == base.pages_root:
        return Merged(theirs.pages_root, files_root, (), rc_root, rc_conflicts, f_conflicts)
    changed = set(await hamt.diff(base.store, base.pages_root, ours.pages_root))
    changed |= set(await hamt.diff(base.store, base.pages_root, theirs.pages_root))
    sides = await _scope((base, ours, theirs), changed)
    merged = await _merge_pages(ours, *sides, changed=changed, now=now)
    if merged is None:
        everything = [(await s.all_pages(), await s.root()) for s in (base, ours, theirs)]
        merged = await _merge_pages(ours, *everything, changed=None, now=now)
        assert merged is not None
    pages_root, conflicts = merged
    await _check_depth(ours, Snapshot(ours.store, pages_root, files_root))
    return Merged(pages_root, files_root, conflicts, rc_root, rc_conflicts, f_conflicts)


async def _check_depth(ours: Snapshot, result: Snapshot) -> None:
    """Refuse a result deeper than MAX_PAGE_DEPTH (both sides may be within it: theirs moves a
    deep subtree under a page ours moved down). A page too deep in the result has an ancestor,
    or is itself, placed differently than in ours, so only those pages' depths are measured."""
    ids = [pid for pid in await hamt.diff(ours.store, ours.pages_root, result.pages_root) if pid]
    before = await ours.pages(ids)
    after = await result.pages(ids)
    for pid in sorted(after):
        old = before.get(pid)
        if old is not None and old["parent"] == after[pid]["parent"]:
            continue
        here = await result.depth(pid)
        # Not deeper than in ours: whatever sits below it deeper than in ours was placed
        # differently too, and is measured on its own.
        if old is not None and here <= await ours.depth(pid):
            continue
        depth = here + await result.height(pid) - 1
        if depth > MAX_PAGE_DEPTH:
            raise BadRequest(f"page {pid!r}: merging {too_deep(depth)}")


async def _merge_pages(
    ours: Snapshot,
    base_side: Side,
    ours_side: Side,
    theirs_side: Side,
    *,
    changed: set[str] | None,
    now: str,
) -> tuple[str | None, tuple[MergeConflict, ...]] | None:
    """Merges the pages given (all of them when `changed` is None) and writes the result on top
    of ours. None when the result would alter a page outside `changed`: the caller retries
    with every page."""
    (b, b_root), (o, o_root), (t, t_root) = base_side, ours_side, theirs_side
    both = [
        pid
        for pid in o.keys() & t.keys() & b.keys()
        if len({o[pid].get("markdown"), t[pid].get("markdown"), b[pid].get("markdown")}) == 3
    ]
    keys = {rec.get("markdown") for pid in both for rec in (o[pid], t[pid], b[pid])}
    texts = await ours.markdowns({k for k in keys if k})
    ours_tree = _tree(o, o_root, texts)
    result = merge(_tree(b, b_root, texts), ours_tree, _tree(t, t_root, texts))
    merged_tree = result.tree

    def context(pid: str | None) -> bool:
        return changed is not None and (pid or ROOT) not in changed

    def same_children(pid: str | None) -> bool:
        return [c.id for c in merged_tree.children(pid)] == [c.id for c in ours_tree.children(pid)]

    out = Snapshot(ours.store, ours.pages_root, ours.files_root)
    extra: list[MergeConflict] = []
    for page in merged_tree.pages:
        if context(page.id):
            mine = ours_tree.get(page.id)
            if (
                mine is None
                or dataclasses.replace(mine, position=0) != dataclasses.replace(page, position=0)
                or not same_children(page.id)
            ):
                return None
            continue
        if page.markdown.startswith(_TOKEN):
            key: str | None = page.markdown[len(_TOKEN) :]
        else:
            key = out.put_text(page.markdown)
        sides = (o.get(page.id), t.get(page.id), b.get(page.id))
        record = _record(page, merged_tree, *sides, markdown=key, now=now, conflicts=extra)
        if record != o.get(page.id):
            out.put_page(record)
    for pid in o.keys() - set(merged_tree.keys()):
        if context(pid):
            return None
        out.drop_page(pid)
    if context(None):
        if not same_children(None):
            return None
    else:
        root_children = [[p.id, p.slug] for p in merged_tree.children(None)]
        if root_children != o_root["children"]:
            out.put_root({"id": ROOT, "children": root_children})
    pages_root, _ = await out.commit()
    # Siblings that came to share a slug were renamed "-2", "-3": settled, not a conflict that
    # should stop two change requests that each added a page from both merging.
    blocking = tuple(c for c in (*result.conflicts, *extra) if c.kind != "slug")
    return pages_root, blocking


def _record(
    page: Page,
    tree: Tree,
    ours: Record | None,
    theirs: Record | None,
    base: Record | None,
    *,
    markdown: str | None,
    now: str,
    conflicts: list[MergeConflict],
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
        if ours is not None and theirs is not None and base is not None and b != o != t != b:
            conflicts.append(
                MergeConflict(page.id, "metadata", name, base=b, ours=o, theirs=t, merged=o)
            )
        value = t if (ours is None or (o == b and t != b)) and theirs is not None else o
        if value is not None or name in source:
            record[name] = value
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


Diff = dict[str, tuple[str | None, str | None]]


def _by_identity(mine: Diff, other: Diff) -> tuple[dict[str, str | None], list[str]]:
    """Of the records theirs changed: those ours left alone (theirs taken as they are), and
    those both sides changed differently (for the caller to settle)."""
    direct: dict[str, str | None] = {}
    both: list[str] = []
    for key, (before, after) in other.items():
        ours_hash = mine[key][1] if key in mine else before
        if ours_hash == before:
            direct[key] = after
        elif ours_hash != after:
            both.append(key)
    return direct, both


async def _merge_files(
    base: Snapshot, ours: Snapshot, theirs: Snapshot
) -> tuple[str | None, tuple[MergeConflict, ...]]:
    """Files merge by identity: one side's addition, change (Git Sync replaces a file's bytes
    in place, keeping its id) or deletion is taken; a change beats a deletion, as for pages;
    a file both sides changed differently keeps ours and is reported (`content`)."""
    if theirs.files_root in (base.files_root, ours.files_root):
        return ours.files_root, ()
    if ours.files_root == base.files_root:
        return theirs.files_root, ()
    mine = await hamt.diff(base.store, base.files_root, ours.files_root)
    other = await hamt.diff(base.store, base.files_root, theirs.files_root)
    direct, both = _by_identity(mine, other)
    conflicts: list[MergeConflict] = []
    for fid in both:
        before, after = other[fid]
        ours_hash = mine[fid][1]
        if ours_hash is None:
            direct[fid] = after
        elif after is not None:
            conflicts.append(
                MergeConflict(fid, "content", None, before, ours_hash, after, ours_hash)
            )
    root, objects = await hamt.update(ours.store, ours.files_root, direct)
    await ours.store.put_many(objects)
    return root, tuple(conflicts)


async def _merge_reusables(
    base: Snapshot, ours: Snapshot, theirs: Snapshot, *, now: str
) -> tuple[str | None, tuple[MergeConflict, ...]]:
    """Reusable contents merge by identity, as pages do: one side's change is taken; both
    sides' edits of one combine field by field, the bodies line by line with merge3; what
    cannot combine keeps ours and is reported (`content`, `metadata`, `delete-edit`)."""
    if theirs.reusable_root in (base.reusable_root, ours.reusable_root):
        return ours.reusable_root, ()
    if ours.reusable_root == base.reusable_root:
        return theirs.reusable_root, ()
    mine = await hamt.diff(base.store, base.reusable_root, ours.reusable_root)
    other = await hamt.diff(base.store, base.reusable_root, theirs.reusable_root)
    direct, both = _by_identity(mine, other)
    root, nodes = await hamt.update(ours.store, ours.reusable_root, direct)
    await ours.store.put_many(nodes)
    if not both:
        return root, ()
    b, o, t = [await side.reusables(both) for side in (base, ours, theirs)]
    conflicts: list[MergeConflict] = []
    out = Snapshot(ours.store, None, None, root)
    for rid in sorted(both):
        mine_rec, their_rec, base_rec = o.get(rid), t.get(rid), b.get(rid)
        if mine_rec is None or their_rec is None or base_rec is None:
            # Deleted on one side, edited on the other: the edit is kept (as for pages).
            kept = mine_rec or their_rec
            assert kept is not None
            texts = await ours.markdowns(
                {r["markdown"] for r in (mine_rec, their_rec) if r and r.get("markdown")}
            )
            conflicts.append(
                MergeConflict(
                    rid,
                    "delete-edit",
                    ours=texts.get(mine_rec.get("markdown") or "", "") if mine_rec else None,
                    theirs=texts.get(their_rec.get("markdown") or "", "") if their_rec else None,
                )
            )
            if mine_rec is None:
                out.put_reusable(kept)
            continue
        record = dict(mine_rec)
        bt, ot, tt = base_rec["title"], mine_rec["title"], their_rec["title"]
        if ot == bt:
            record["title"] = tt
        elif tt not in (bt, ot):
            conflicts.append(MergeConflict(rid, "metadata", "title", bt, ot, tt, ot))
        keys = [r.get("markdown") for r in (base_rec, mine_rec, their_rec)]
        if len(set(keys)) == 3:
            texts = await ours.markdowns({k for k in keys if k})
            bx, ox, tx = (texts.get(k or "", "") for k in keys)
            merged = merge_markdown(bx, ox, tx)
            if merged is None:
                conflicts.append(MergeConflict(rid, "content", "markdown", bx, ox, tx, ox))
            else:
                record["markdown"] = out.put_text(merged)
        elif keys[1] == keys[0]:
            record["markdown"] = keys[2]
        record["updatedAt"] = now
        out.put_reusable(record)
    await out.commit()
    return out.reusable_root, tuple(conflicts)
