"""Three-way merge of revision page trees, by page identity.

`merge(base, ours, theirs)` combines two revisions that both grew from `base`. It never fails on
well-formed input and never loses a side's work silently: whatever it cannot combine it settles
one way (ours, by default) and reports as a `MergeConflict` carrying what the other side had, so the
caller can keep that in revision history or ask a person.

The rules, in the order they apply:

- Pages are matched by id. A page added on one side is kept. A page removed on one side and left
  alone on the other is removed; removed on one side and edited (any field but `position`) on the
  other, it is kept as edited and reported ("delete-edit").
- Each field of a page both sides kept is merged on its own: unchanged on one side, take the
  other; changed alike, take it; changed differently, keep ours and report ("metadata" for a
  field, "move" for the parent). Markdown changed on both sides is merged line by line with
  merge3; overlapping changes keep ours' whole text and report both texts ("content"). A
  half-merged text would be one nobody wrote, so it is never put in the tree.
- Where a type change on one side meets an edit to the body (href, markdown) on the other, the
  page keeps ours' type, href and markdown together, because a mix can be meaningless (markdown
  on a link); every field where theirs differs is reported.
- Then the structure is repaired, so the result is always a valid tree: a group page sent below
  the root goes back to it ("move"); a page whose parent is gone moves to the parent's nearest
  surviving ancestor, or the root ("orphan"); a cycle made of both sides' moves is broken by
  putting one of its pages back where ours has it ("cycle").
- Sibling order starts from base order. A side's reorderings are the pages outside the longest
  common subsequence of its order and base's; those pages, and pages new under that parent, are
  placed after their nearest preceding sibling on that side, ours before theirs where both place
  pages at the same spot. A page both sides moved among the same siblings goes where ours put it
  ("move", field "position") when the two places differ. Positions are then renumbered 0..n-1.
- Siblings left sharing a slug: the later one gets "-2", "-3"... ("slug").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Literal, TypeVar

from merge3 import Merge3

from docshelf.content.tree.model import InvalidTree, Page, Tree, find_cycles, free_slug

FieldValue = str | int | bool | None
ConflictKind = Literal["content", "metadata", "delete-edit", "move", "cycle", "orphan", "slug"]

_METADATA_FIELDS = ("type", "title", "slug", "emoji", "icon", "description", "hidden", "href")
# Fields that only make sense together: which of href and markdown a page may hold is its type's.
_BODY_FIELDS = ("type", "href", "markdown")
_ABSENT = object()  # the base value of a page both sides added: equal to nothing either side has

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MergeConflict:
    """Something the merge settled on its own that a person may want to revisit.

    `field` names the Page field at issue ("parent" and "position" for placement; None for a
    whole-page "delete-edit"). `base`, `ours` and `theirs` hold that field's value on each side
    and `merged` what the result tree holds. For "content" conflicts they are the complete
    markdown texts; for "delete-edit" they are the markdown of each side's version, None on the
    side that deleted the page. None also stands for "at the root" in placement fields and for a
    page absent from `base` in "metadata" and "move" conflicts of a page both sides added.
    """

    page_id: str
    kind: ConflictKind
    field: str | None = None
    base: FieldValue = None
    ours: FieldValue = None
    theirs: FieldValue = None
    merged: FieldValue = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class MergeResult:
    tree: Tree
    conflicts: tuple[MergeConflict, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.conflicts

    def conflicts_for(self, page_id: str) -> tuple[MergeConflict, ...]:
        return tuple(c for c in self.conflicts if c.page_id == page_id)


def merge_markdown(base: str, ours: str, theirs: str) -> str | None:
    """Both sides' changes to one text, or None when they touch the same lines.

    Lines keep their endings, so joining them gives back exactly the bytes each side wrote
    (including a missing final newline or CRLF endings).
    """
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    lines = Merge3(
        base.splitlines(keepends=True),
        ours.splitlines(keepends=True),
        theirs.splitlines(keepends=True),
    )
    out: list[str] = []
    for group in lines.merge_groups():
        if group[0] == "conflict":
            return None
        out.extend(group[1])
    return "".join(out)


def merge(base: Tree, ours: Tree, theirs: Tree) -> MergeResult:
    """Merge `ours` and `theirs`, two descendants of `base`; see the module docstring.

    Raises InvalidTree when an input is malformed: the rules assume each side is a tree the
    engine could have stored, and a merge of broken input would only hide where it broke.
    """
    for name, tree in (("base", base), ("ours", ours), ("theirs", theirs)):
        problems = tree.problems()
        if problems:
            raise InvalidTree([f"{name}: {problem}" for problem in problems])
    return _Merge(base, ours, theirs).run()


def _three_way(base: object, ours: T, theirs: T) -> tuple[T, bool]:
    """The merged value and whether the sides clashed (the value is then ours)."""
    if ours == theirs or base == theirs:
        return ours, False
    if base == ours:
        return theirs, False
    return ours, True


def _edited(base: Page, side: Page) -> bool:
    # Position alone does not count: it shifts whenever a sibling comes or goes.
    return dataclasses.replace(base, position=0) != dataclasses.replace(side, position=0)


def _ids(pages: Sequence[Page]) -> list[str]:
    return [page.id for page in pages]


def _reordered(base_seq: list[str], seq: list[str]) -> set[str]:
    """The pages a side moved among siblings it shares with base: those outside the longest
    common run of the two orders. Pages that came or went are not moves, so they are left out
    before comparing."""
    in_seq, in_base = set(seq), set(base_seq)
    common_base = [i for i in base_seq if i in in_seq]
    common_side = [i for i in seq if i in in_base]
    matcher = SequenceMatcher(None, common_base, common_side, autojunk=False)
    kept: set[str] = set()
    for start, _, size in matcher.get_matching_blocks():
        kept.update(common_base[start : start + size])
    return set(common_base) - kept


def _predecessor(seq: list[str], item: str, members: set[str]) -> str | None:
    for prev in reversed(seq[: seq.index(item)]):
        if prev in members:
            return prev
    return None


def _insert(order: list[str], seq: list[str], item: str, skip: set[str]) -> None:
    """Put `item` right after its nearest predecessor in `seq` that `order` already holds (first
    if none), passing over the pages in `skip`, which another side placed at that spot first."""
    at = 0
    where = {page_id: n for n, page_id in enumerate(order)}
    for prev in reversed(seq[: seq.index(item)]):
        if prev in where:
            at = where[prev] + 1
            break
    while at < len(order) and order[at] in skip:
        at += 1
    order.insert(at, item)


def _place(parent: str | None) -> str:
    return "the root" if parent is None else repr(parent)


class _Merge:
    """One merge's working state. It lives only inside `merge`, which stays a pure function."""

    def __init__(self, base: Tree, ours: Tree, theirs: Tree) -> None:
        self.base, self.ours, self.theirs = base, ours, theirs
        self.pages: dict[str, Page] = {}
        self.parent: dict[str, str | None] = {}
        self.conflicts: list[MergeConflict] = []
        self.repositioned: list[str] = []

    def run(self) -> MergeResult:
        for page_id in sorted(set(self.base) | set(self.ours) | set(self.theirs)):
            self._merge_page(page_id)
        self.parent = {page_id: page.parent for page_id, page in self.pages.items()}
        self._groups_to_root()
        self._reattach_orphans()
        self._break_cycles()
        tree = Tree.of(self._lay_out())
        tree.validate()  # a bug here must not reach storage as a corrupt revision
        conflicts = sorted(self.conflicts, key=lambda c: c.page_id)  # stable: keeps rule order
        return MergeResult(tree, tuple(conflicts))

    def _version(self, page_id: str) -> Page | None:
        for tree in (self.ours, self.theirs, self.base):
            page = tree.get(page_id)
            if page is not None:
                return page
        return None

    def _sides(self, page_id: str, name: str) -> tuple[FieldValue, FieldValue, FieldValue]:
        """A field's value in base, ours and theirs; None where the page is absent."""
        values: list[FieldValue] = []
        for tree in (self.base, self.ours, self.theirs):
            page = tree.get(page_id)
            values.append(None if page is None else getattr(page, name))
        return values[0], values[1], values[2]

    # -- pages and fields -------------------------------------------------------------------

    def _merge_page(self, page_id: str) -> None:
        base = self.base.get(page_id)
        ours = self.ours.get(page_id)
        theirs = self.theirs.get(page_id)
        if ours is not None and theirs is not None:
            self.pages[page_id] = self._merge_fields(base, ours, theirs)
            return
        if ours is not None:
            kept, keeper, deleter = ours, "ours", "theirs"
        elif theirs is not None:
            kept, keeper, deleter = theirs, "theirs", "ours"
        else:
            return  # deleted on both sides
        if base is None:
            self.pages[page_id] = kept
        elif _edited(base, kept):
            self.pages[page_id] = kept
            self.conflicts.append(
                MergeConflict(
                    page_id,
                    "delete-edit",
                    None,
                    base=base.markdown,
                    ours=None if ours is None else ours.markdown,
                    theirs=None if theirs is None else theirs.markdown,
                    merged=kept.markdown,
                    detail=f"deleted in {deleter}, edited in {keeper}: kept the edited version",
                )
            )

    def _merge_fields(self, base: Page | None, ours: Page, theirs: Page) -> Page:
        page_id = ours.id
        values: dict[str, Any] = {}
        found: list[MergeConflict] = []
        for name in (*_METADATA_FIELDS, "parent"):
            base_value = None if base is None else getattr(base, name)
            ours_value, theirs_value = getattr(ours, name), getattr(theirs, name)
            value, clash = _three_way(
                _ABSENT if base is None else base_value, ours_value, theirs_value
            )
            values[name] = value
            if clash:
                kind: ConflictKind = "move" if name == "parent" else "metadata"
                found.append(
                    MergeConflict(
                        page_id,
                        kind,
                        name,
                        base=base_value,
                        ours=ours_value,
                        theirs=theirs_value,
                        merged=value,
                        detail=f"both sides changed {name}: kept ours",
                    )
                )
        if base is None:
            text = ours.markdown if ours.markdown == theirs.markdown else None
        else:
            text = merge_markdown(base.markdown, ours.markdown, theirs.markdown)
        if text is None:
            text = ours.markdown
            found.append(
                MergeConflict(
                    page_id,
                    "content",
                    "markdown",
                    base=None if base is None else base.markdown,
                    ours=ours.markdown,
                    theirs=theirs.markdown,
                    merged=ours.markdown,
                    detail="both sides changed the same lines: kept ours' text",
                )
            )
        values["markdown"] = text
        if (values["type"] != "document" and values["markdown"]) or (
            values["type"] != "link" and values["href"] is not None
        ):
            found = [c for c in found if c.field not in _BODY_FIELDS]
            for name in _BODY_FIELDS:
                ours_value, theirs_value = getattr(ours, name), getattr(theirs, name)
                values[name] = ours_value
                if ours_value != theirs_value:
                    found.append(
                        MergeConflict(
                            page_id,
                            "content" if name == "markdown" else "metadata",
                            name,
                            base=None if base is None else getattr(base, name),
                            ours=ours_value,
                            theirs=theirs_value,
                            merged=ours_value,
                            detail="one side changed the page type, the other its body: "
                            "kept ours' type, href and markdown",
                        )
                    )
        self.conflicts.extend(found)
        return dataclasses.replace(ours, **values)

    # -- structure --------------------------------------------------------------------------

    def _groups_to_root(self) -> None:
        # Only reachable when one side made a page a group and the other moved it.
        for page_id in sorted(self.parent):
            if self.pages[page_id].type == "group" and self.parent[page_id] is not None:
                self._move(page_id, "move", None, "a group page must stay at the root")

    def _surviving_ancestor(self, page_id: str | None) -> str | None:
        """`page_id` if it is in the merge, else its nearest ancestor that is (None: the root).

        Ancestry is read from ours, then theirs, then base, whichever still has the page. A
        chain that starts in one tree stays in it until a page is missing there, and no
        side-tree loops, so the walk ends; the `seen` guard only protects against a bug.
        """
        seen: set[str] = set()
        while page_id is not None and page_id not in self.pages:
            version = self._version(page_id)
            if version is None or page_id in seen:
                return None
            seen.add(page_id)
            page_id = version.parent
        return page_id

    def _reattach_orphans(self) -> None:
        for page_id in sorted(self.parent):
            gone = self.parent[page_id]
            if gone is not None and gone not in self.pages:
                target = self._surviving_ancestor(gone)
                self._move(
                    page_id,
                    "orphan",
                    target,
                    f"parent {gone!r} was deleted: re-attached under {_place(target)}",
                )

    def _break_cycles(self) -> None:
        """Each side is acyclic, so a cycle mixes both sides' moves. Putting a page of it back
        under ours' parent undoes theirs' part; a page is put back at most once, and when no page
        can be (the cycle runs through re-attached pages), one goes to the root, so this ends."""
        restored: set[str] = set()
        while cycles := find_cycles(self.parent):
            cycle = cycles[0]
            candidates: list[tuple[str, str | None]] = []
            for page_id in cycle:
                if page_id in restored or page_id not in self.ours:
                    continue
                target = self._surviving_ancestor(self.ours[page_id].parent)
                if target != self.parent[page_id]:
                    candidates.append((page_id, target))
            if candidates:
                page_id, target = min(candidates, key=lambda c: c[0])
                restored.add(page_id)
                detail = "the merged moves made a cycle: kept ours' parent for this page"
            else:
                page_id, target = min(cycle), None
                detail = "the merged moves made a cycle: moved this page to the root"
            self._move(page_id, "cycle", target, detail)

    def _move(self, page_id: str, kind: ConflictKind, target: str | None, detail: str) -> None:
        base, ours, theirs = self._sides(page_id, "parent")
        self.conflicts.append(
            MergeConflict(page_id, kind, "parent", base, ours, theirs, merged=target, detail=detail)
        )
        self.parent[page_id] = target

    # -- order, positions, slugs ------------------------------------------------------------

    def _lay_out(self) -> list[Page]:
        members: dict[str | None, set[str]] = {}
        for page_id, parent in self.parent.items():
            members.setdefault(parent, set()).add(page_id)
        out: list[Page] = []
        for parent in sorted(members, key=lambda p: (p is not None, p or "")):
            order = self._order(parent, members[parent])
            taken = {self.pages[page_id].slug for page_id in order}
            used: set[str] = set()
            for position, page_id in enumerate(order):
                page = self.pages[page_id]
                slug = self._renamed_slug(page, taken, used)
                used.add(slug)
                out.append(dataclasses.replace(page, parent=parent, position=position, slug=slug))
        positions = {page.id: page.position for page in out}
        for page_id in self.repositioned:
            base, ours, theirs = self._sides(page_id, "position")
            self.conflicts.append(
                MergeConflict(
                    page_id,
                    "move",
                    "position",
                    base,
                    ours,
                    theirs,
                    merged=positions[page_id],
                    detail="both sides moved the page among its siblings: kept ours' place",
                )
            )
        return out

    def _renamed_slug(self, page: Page, taken: set[str], used: set[str]) -> str:
        if page.slug not in used:
            return page.slug
        slug = free_slug(page.slug, taken | used)
        base, ours, theirs = self._sides(page.id, "slug")
        self.conflicts.append(
            MergeConflict(
                page.id,
                "slug",
                "slug",
                base,
                ours,
                theirs,
                merged=slug,
                detail=f"a sibling already has slug {page.slug!r}: renamed to {slug!r}",
            )
        )
        return slug

    def _order(self, parent: str | None, members: set[str]) -> list[str]:
        base_seq = _ids(self.base.children(parent))
        ours_seq = _ids(self.ours.children(parent))
        theirs_seq = _ids(self.theirs.children(parent))
        in_base = set(base_seq)
        moved_ours = _reordered(base_seq, ours_seq)
        moved_theirs = _reordered(base_seq, theirs_seq)
        order = [
            i for i in base_seq if i in members and i not in moved_ours and i not in moved_theirs
        ]
        placed: set[str] = set()
        for page_id in ours_seq:
            if page_id in members and (page_id in moved_ours or page_id not in in_base):
                _insert(order, ours_seq, page_id, skip=set())
                placed.add(page_id)
        for page_id in theirs_seq:
            if page_id not in members or (page_id not in moved_theirs and page_id in in_base):
                continue
            if page_id in placed:
                if _predecessor(ours_seq, page_id, members) != _predecessor(
                    theirs_seq, page_id, members
                ):
                    self.repositioned.append(page_id)
                continue
            _insert(order, theirs_seq, page_id, skip=placed)
        # Pages neither side has under this parent (re-attached, restored): after the rest, in
        # the order they had where they came from.
        rest = members - set(order)
        order.extend(sorted(rest, key=lambda i: (self.pages[i].position, i)))
        return order
