"""The content merge: the page-tree model's helpers and rules, one table case per merge rule, and
properties over generated trees and edits (identity, disjoint edits, text conflicts, validity)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.content.merge import MergeResult, merge, merge_markdown
from docshelf.content.tree import InvalidTree, Page, PageType, Tree
from docshelf.content.tree.model import find_cycles

# -- building trees ------------------------------------------------------------------------------


def page(page_id: str, parent: str | None = None, **fields: Any) -> Page:
    """A page with its slug and title taken from its id unless given; position comes from
    `tree`, which numbers siblings in the order they are listed."""
    fields.setdefault("title", page_id.capitalize())
    fields.setdefault("slug", page_id)
    fields.setdefault("type", "document")
    return Page(id=page_id, parent=parent, position=0, **fields)


def tree(*pages: Page) -> Tree:
    seen: dict[str | None, int] = {}
    numbered = []
    for p in pages:
        numbered.append(replace(p, position=seen.get(p.parent, 0)))
        seen[p.parent] = seen.get(p.parent, 0) + 1
    return Tree.of(numbered)


@dataclass(frozen=True)
class Add:
    page: Page
    index: int | None = None  # None: after the last sibling


@dataclass(frozen=True)
class Delete:
    page_id: str  # with everything under it


@dataclass(frozen=True)
class Move:
    page_id: str
    parent: str | None
    index: int | None = None


@dataclass(frozen=True)
class Edit:
    page_id: str
    field: str
    value: Any


Op = Add | Delete | Move | Edit


@dataclass
class Draft:
    """A mutable copy of a tree for writing edits; `tree()` renumbers positions."""

    pages: dict[str, Page]
    kids: dict[str | None, list[str]]

    @classmethod
    def of(cls, t: Tree) -> Draft:
        kids: dict[str | None, list[str]] = {None: []}
        for p in t.pages:
            kids.setdefault(p.parent, [])
            kids[p.id] = [c.id for c in t.children(p.id)]
        kids[None] = [c.id for c in t.children(None)]
        return cls({p.id: p for p in t.pages}, kids)

    def tree(self) -> Tree:
        return Tree.of(
            replace(self.pages[pid], parent=parent, position=n)
            for parent, ids in self.kids.items()
            for n, pid in enumerate(ids)
        )

    def subtree(self, page_id: str) -> list[str]:
        out, stack = [], [page_id]
        while stack:
            pid = stack.pop()
            out.append(pid)
            stack.extend(self.kids.get(pid, []))
        return out

    def siblings(self, parent: str | None, without: str | None = None) -> list[str]:
        return [pid for pid in self.kids.get(parent, []) if pid != without]

    def apply(self, op: Op) -> None:
        match op:
            case Add(page=p, index=index):
                self.pages[p.id] = replace(p, position=0)
                self.kids[p.id] = []
                row = self.kids.setdefault(p.parent, [])
                row.insert(len(row) if index is None else index, p.id)
            case Delete(page_id=pid):
                self.kids[self.pages[pid].parent].remove(pid)
                for gone in self.subtree(pid):
                    del self.pages[gone]
                    del self.kids[gone]
            case Move(page_id=pid, parent=parent, index=index):
                self.kids[self.pages[pid].parent].remove(pid)
                row = self.kids.setdefault(parent, [])
                row.insert(len(row) if index is None else index, pid)
                self.pages[pid] = replace(self.pages[pid], parent=parent)
            case Edit(page_id=pid, field=name, value=value):
                self.pages[pid] = replace(self.pages[pid], **{name: value})


def apply(t: Tree, *ops: Op) -> Tree:
    draft = Draft.of(t)
    for op in ops:
        draft.apply(op)
    return draft.tree()


TEXT = "one\ntwo\nthree\nfour\nfive\n"

BASE = tree(
    page("intro", markdown=TEXT),
    page("guides", type="group"),
    page("install", "guides", markdown="Run it.\n"),
    page("usage", "guides"),  # an empty document
    page("deep", "usage", markdown="Deeper.\n"),
    page("site", type="link", href="https://example.com"),
)


# -- the model -----------------------------------------------------------------------------------


def test_tree_helpers() -> None:
    assert [p.id for p in BASE.children()] == ["intro", "guides", "site"]
    assert [p.id for p in BASE.children("guides")] == ["install", "usage"]
    assert BASE.children("nothing") == ()
    assert BASE.path("deep") == "guides/usage/deep"
    assert BASE.path("intro") == "intro"
    assert [p.id for p in BASE.descendants("guides")] == ["install", "usage", "deep"]
    assert [p.id for p in BASE.ancestors("deep")] == ["usage", "guides"]
    assert BASE["usage"].parent == "guides" and "deep" in BASE and len(BASE) == 6
    BASE.validate()


def test_tree_is_a_value() -> None:
    shuffled = Tree.of(reversed(BASE.pages))
    assert shuffled == BASE and hash(shuffled) == hash(BASE)
    assert {BASE: 1}[shuffled] == 1
    assert list(BASE) == sorted(BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        BASE.pages = ()  # type: ignore[misc]
    with pytest.raises(ValueError, match="duplicate page ids: a"):
        Tree.of([page("a"), page("a")])


def _broken(*pages: Page) -> Tree:
    return Tree.of(pages)  # positions as given: no renumbering


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (_broken(page("a", "nope")), "page 'a': parent 'nope' does not exist"),
        (
            _broken(page("a", "b"), page("b", "a")),
            "pages 'a', 'b' form a cycle",
        ),
        (_broken(page("a", "a")), "pages 'a' form a cycle"),
        (
            _broken(page("a"), page("b", "a", type="group")),
            "page 'b': group pages belong at the root",
        ),
        (
            _broken(page("a"), replace(page("b", slug="a"), position=1)),
            "children of the root: slug 'a' used by a, b",
        ),
        (
            _broken(page("a"), replace(page("b"), position=2)),
            "children of the root: positions are not 0..1",
        ),
        (_broken(page("a"), page("b")), "children of the root: positions are not 0..1"),
        (_broken(page("a", slug="x/y")), "page 'a': slug 'x/y' is empty or holds '/'"),
        (_broken(page("a", slug="")), "page 'a': slug '' is empty or holds '/'"),
        (_broken(page("a", type="group", markdown="x")), "page 'a': a group page holds markdown"),
        (_broken(page("a", href="https://x")), "page 'a': a document page has an href"),
        (_broken(page("a", type="folder")), "page 'a': unknown type 'folder'"),
    ],
)
def test_validation(broken: Tree, problem: str) -> None:
    assert problem in broken.problems()
    with pytest.raises(InvalidTree) as caught:
        broken.validate()
    assert problem in caught.value.problems


def test_helpers_refuse_to_loop_on_a_cycle() -> None:
    loop = _broken(page("a", "b"), page("b", "a"))
    with pytest.raises(InvalidTree, match="cycle"):
        loop.path("a")
    assert [p.id for p in loop.descendants("a")] == ["b"]


def test_merge_refuses_malformed_input() -> None:
    with pytest.raises(InvalidTree, match="theirs: page 'a': parent 'nope' does not exist"):
        merge(BASE, BASE, _broken(page("a", "nope")))


# -- text ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"),
    [
        ("a\nb\nc\nd\n", "A\nb\nc\nd\n", "a\nb\nc\nD\n", "A\nb\nc\nD\n"),
        ("a\nb\n", "a\nb\n", "x\n", "x\n"),
        ("a\nb\n", "a\nB\n", "a\nB\n", "a\nB\n"),
        ("a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n", None),
        ("a\nb\nc\n", "a\nb\nc\nend", "top\na\nb\nc\n", "top\na\nb\nc\nend"),  # no final newline
        ("a\r\nb\r\nc\r\n", "A\r\nb\r\nc\r\n", "a\r\nb\r\nC\r\n", "A\r\nb\r\nC\r\n"),
        ("", "x\n", "y\n", None),
        ("a\n", "", "", ""),
    ],
)
def test_merge_markdown(base: str, ours: str, theirs: str, merged: str | None) -> None:
    assert merge_markdown(base, ours, theirs) == merged


# -- one case per rule ---------------------------------------------------------------------------

Seen = set[tuple[str, str, str | None]]  # (page id, kind, field) of each conflict


def _case(
    name: str,
    ours: Tree,
    theirs: Tree,
    expected: Tree,
    conflicts: Seen | None = None,
    base: Tree = BASE,
) -> Any:
    return pytest.param(base, ours, theirs, expected, conflicts or set(), id=name)


ROW = tree(*(page(pid) for pid in "abcde"))
XY = apply(BASE, Add(page("x")), Add(page("y")))


NEW = page("new", markdown="New.\n")
CASES = [
    _case("added-ours", apply(BASE, Add(NEW)), BASE, apply(BASE, Add(NEW))),
    _case("added-theirs", BASE, apply(BASE, Add(NEW, 0)), apply(BASE, Add(NEW, 0))),
    _case(
        "added-both-sides-different-pages",
        apply(BASE, Add(NEW)),
        apply(BASE, Add(page("other"))),
        apply(BASE, Add(NEW), Add(page("other"))),
    ),
    _case("removed-one-side", apply(BASE, Delete("intro")), BASE, apply(BASE, Delete("intro"))),
    _case(
        "removed-subtree",
        BASE,
        apply(BASE, Delete("usage")),
        apply(BASE, Delete("usage")),
    ),
    _case(
        "removed-both",
        apply(BASE, Delete("site")),
        apply(BASE, Delete("site")),
        apply(BASE, Delete("site")),
    ),
    _case(
        "delete-edit-title",
        apply(BASE, Delete("intro")),
        apply(BASE, Edit("intro", "title", "Welcome")),
        apply(BASE, Edit("intro", "title", "Welcome")),
        {("intro", "delete-edit", None)},
    ),
    _case(
        "delete-edit-markdown",
        apply(BASE, Edit("install", "markdown", "Run it twice.\n")),
        apply(BASE, Delete("install")),
        apply(BASE, Edit("install", "markdown", "Run it twice.\n")),
        {("install", "delete-edit", None)},
    ),
    _case(
        "delete-move",
        apply(BASE, Move("install", None)),
        apply(BASE, Delete("install")),
        apply(BASE, Move("install", None)),
        {("install", "delete-edit", None)},
    ),
    _case(
        "fields-merge-independently",
        apply(BASE, Edit("intro", "title", "Welcome"), Edit("intro", "hidden", True)),
        apply(BASE, Edit("intro", "emoji", "1f4d6"), Edit("intro", "description", "Start here")),
        apply(
            BASE,
            Edit("intro", "title", "Welcome"),
            Edit("intro", "hidden", True),
            Edit("intro", "emoji", "1f4d6"),
            Edit("intro", "description", "Start here"),
        ),
    ),
    _case(
        "same-change-both-sides",
        apply(BASE, Edit("intro", "icon", "book")),
        apply(BASE, Edit("intro", "icon", "book")),
        apply(BASE, Edit("intro", "icon", "book")),
    ),
    _case(
        "metadata-clash-keeps-ours",
        apply(BASE, Edit("intro", "title", "Welcome"), Edit("site", "href", "https://a")),
        apply(BASE, Edit("intro", "title", "Hello"), Edit("site", "href", "https://b")),
        apply(BASE, Edit("intro", "title", "Welcome"), Edit("site", "href", "https://a")),
        {("intro", "metadata", "title"), ("site", "metadata", "href")},
    ),
    _case(
        "markdown-disjoint-lines",
        apply(BASE, Edit("intro", "markdown", "ONE\ntwo\nthree\nfour\nfive\n")),
        apply(BASE, Edit("intro", "markdown", "one\ntwo\nthree\nfour\nFIVE\nsix\n")),
        apply(BASE, Edit("intro", "markdown", "ONE\ntwo\nthree\nfour\nFIVE\nsix\n")),
    ),
    _case(
        "markdown-same-lines",
        apply(BASE, Edit("intro", "markdown", "one\nTWO\nthree\nfour\nFIVE\n")),
        apply(BASE, Edit("intro", "markdown", "one\n2\nthree\nfour\nfive\n")),
        apply(BASE, Edit("intro", "markdown", "one\nTWO\nthree\nfour\nFIVE\n")),
        {("intro", "content", "markdown")},
    ),
    _case(
        "moved-one-side",
        BASE,
        apply(BASE, Move("deep", "guides", 0)),
        apply(BASE, Move("deep", "guides", 0)),
    ),
    _case(
        "moved-both-to-same-place",
        apply(BASE, Move("deep", None)),
        apply(BASE, Move("deep", None)),
        apply(BASE, Move("deep", None)),
    ),
    _case(
        "moved-both-to-different-parents",
        apply(BASE, Move("deep", None)),
        apply(BASE, Move("deep", "intro")),
        apply(BASE, Move("deep", None)),
        {("deep", "move", "parent")},
    ),
    _case(
        "moves-make-a-cycle",
        apply(BASE, Move("install", "intro")),
        apply(BASE, Move("intro", "install")),
        apply(BASE, Move("install", "intro")),
        {("intro", "cycle", "parent")},
    ),
    _case(
        "moves-make-a-longer-cycle",
        apply(BASE, Move("intro", "deep")),
        apply(BASE, Move("usage", "intro")),
        apply(BASE, Move("intro", "deep")),
        {("usage", "cycle", "parent")},
    ),
    _case(
        "orphan-goes-to-grandparent",
        apply(BASE, Add(page("child", "deep"))),
        apply(BASE, Delete("deep")),
        apply(BASE, Delete("deep"), Add(page("child", "usage"))),
        {("child", "orphan", "parent")},
    ),
    _case(
        "edited-orphan-kept-and-reattached",
        apply(BASE, Edit("deep", "title", "Deepest")),
        apply(BASE, Delete("usage")),
        apply(BASE, Delete("usage"), Add(replace(BASE["deep"], title="Deepest", parent="guides"))),
        {("deep", "delete-edit", None), ("deep", "orphan", "parent")},
    ),
    _case(
        "orphan-goes-to-root",
        apply(BASE, Add(page("child", "guides"))),
        apply(BASE, Delete("guides")),
        apply(BASE, Delete("guides"), Add(page("child"))),
        {("child", "orphan", "parent")},
    ),
    _case(
        "moved-under-a-deleted-page",
        apply(BASE, Move("intro", "deep")),
        apply(BASE, Delete("usage")),
        apply(BASE, Delete("usage"), Move("intro", "guides")),
        {("intro", "orphan", "parent")},
    ),
    _case(
        "order-appends-ours-first",
        apply(BASE, Add(page("o1")), Add(page("o2"))),
        apply(BASE, Add(page("t1"))),
        apply(BASE, Add(page("o1")), Add(page("o2")), Add(page("t1"))),
    ),
    _case(
        "order-inserts-at-same-spot-ours-first",
        apply(BASE, Add(page("o1"), 1)),
        apply(BASE, Add(page("t1"), 1)),
        apply(BASE, Add(page("o1"), 1), Add(page("t1"), 2)),
    ),
    _case(
        "order-one-sided-reorder-kept",
        apply(BASE, Move("site", None, 0)),
        apply(BASE, Add(page("t1"), 1)),
        apply(BASE, Move("site", None, 0), Add(page("t1"), 2)),
    ),
    _case(
        "order-both-reorder-different-pages",
        apply(XY, Move("site", None, 0)),
        apply(XY, Move("y", None, 1)),
        apply(XY, Move("site", None, 0), Move("y", None, 2)),
        base=XY,
    ),
    _case(
        "order-same-page-moved-to-different-spots",
        apply(ROW, Move("a", None)),
        apply(ROW, Move("a", None, 2)),
        apply(ROW, Move("a", None)),
        {("a", "move", "position")},
        base=ROW,
    ),
    _case(
        "slug-clash-between-new-siblings",
        apply(BASE, Add(page("o1", slug="faq"))),
        apply(BASE, Add(page("t1", slug="faq"))),
        apply(BASE, Add(page("o1", slug="faq")), Add(page("t1", slug="faq-2"))),
        {("t1", "slug", "slug")},
    ),
    _case(
        "slug-clash-skips-taken-suffix",
        apply(BASE, Add(page("o1", slug="faq")), Add(page("o2", slug="faq-2"))),
        apply(BASE, Add(page("t1", slug="faq"))),
        apply(
            BASE,
            Add(page("o1", slug="faq")),
            Add(page("o2", slug="faq-2")),
            Add(page("t1", slug="faq-3")),
        ),
        {("t1", "slug", "slug")},
    ),
    _case(
        "slug-clash-from-a-move",
        apply(BASE, Edit("intro", "slug", "usage")),
        apply(BASE, Move("usage", None, 1)),
        apply(
            BASE,
            Edit("intro", "slug", "usage"),
            Move("usage", None, 1),
            Edit("usage", "slug", "usage-2"),
        ),
        {("usage", "slug", "slug")},
    ),
    _case(
        "type-change-against-markdown-edit-keeps-ours",
        apply(BASE, Edit("intro", "type", "link"), Edit("intro", "markdown", "")),
        apply(BASE, Edit("intro", "markdown", TEXT + "six\n")),
        apply(BASE, Edit("intro", "type", "link"), Edit("intro", "markdown", "")),
        {("intro", "content", "markdown")},
    ),
    _case(
        "type-change-against-first-text-keeps-ours",
        apply(BASE, Edit("usage", "type", "link"), Edit("usage", "href", "https://x")),
        apply(BASE, Edit("usage", "markdown", "Use it.\n")),
        apply(BASE, Edit("usage", "type", "link"), Edit("usage", "href", "https://x")),
        {
            ("usage", "metadata", "type"),
            ("usage", "metadata", "href"),
            ("usage", "content", "markdown"),
        },
    ),
    _case(
        "markdown-edit-against-type-change-keeps-ours",
        apply(BASE, Edit("intro", "markdown", TEXT + "six\n")),
        apply(BASE, Edit("intro", "type", "group"), Edit("intro", "markdown", "")),
        apply(BASE, Edit("intro", "markdown", TEXT + "six\n")),
        {("intro", "metadata", "type"), ("intro", "content", "markdown")},
    ),
    _case(
        "group-moved-below-root-goes-back",
        apply(BASE, Edit("intro", "type", "group"), Edit("intro", "markdown", "")),
        apply(BASE, Move("intro", "guides")),
        apply(BASE, Edit("intro", "type", "group"), Edit("intro", "markdown", "")),
        {("intro", "move", "parent")},
    ),
    _case(
        "added-both-sides-same-id",
        apply(BASE, Add(NEW)),
        apply(BASE, Add(NEW)),
        apply(BASE, Add(NEW)),
    ),
    _case(
        "added-both-sides-same-id-different-content",
        apply(BASE, Add(NEW)),
        apply(BASE, Add(replace(NEW, title="Other", markdown="Other.\n"), 0)),
        apply(BASE, Add(NEW)),
        {("new", "metadata", "title"), ("new", "content", "markdown"), ("new", "move", "position")},
    ),
]


@pytest.mark.parametrize(("base", "ours", "theirs", "expected", "conflicts"), CASES)
def test_merge_rules(base: Tree, ours: Tree, theirs: Tree, expected: Tree, conflicts: Seen) -> None:
    result = merge(base, ours, theirs)
    assert result.tree == expected
    assert {(c.page_id, c.kind, c.field) for c in result.conflicts} == conflicts
    assert result.clean == (not conflicts)


def test_content_conflict_reports_both_texts() -> None:
    ours = apply(BASE, Edit("intro", "markdown", "one\nTWO\nthree\nfour\nfive\n"))
    theirs = apply(BASE, Edit("intro", "markdown", "one\n2\nthree\nfour\nfive\n"))
    (conflict,) = merge(BASE, ours, theirs).conflicts_for("intro")
    assert (conflict.base, conflict.ours, conflict.theirs, conflict.merged) == (
        TEXT,
        ours["intro"].markdown,
        theirs["intro"].markdown,
        ours["intro"].markdown,
    )


def test_conflicts_carry_both_values() -> None:
    result = merge(
        BASE,
        apply(BASE, Edit("intro", "title", "Welcome"), Delete("site")),
        apply(BASE, Edit("intro", "title", "Hello"), Edit("site", "title", "Web")),
    )
    (title,) = result.conflicts_for("intro")
    assert (title.field, title.base, title.ours, title.theirs, title.merged) == (
        "title",
        "Intro",
        "Welcome",
        "Hello",
        "Welcome",
    )
    (deleted,) = result.conflicts_for("site")
    assert (deleted.kind, deleted.ours, deleted.theirs) == ("delete-edit", None, "")
    assert "deleted in ours" in deleted.detail


# -- properties ----------------------------------------------------------------------------------

WORDS = ("alpha", "beta", "gamma", "delta")
SLUGS = ("intro", "setup", "usage")
TITLES = ("Intro", "Setup", "Usage", "Reference")
texts = st.lists(st.sampled_from(WORDS), max_size=5).map(lambda ws: "".join(f"{w}\n" for w in ws))


def _containers(draft: Draft, among: Sequence[str] | None = None) -> list[str | None]:
    """Where a page may go: the root, or under any page but a link."""
    ids = sorted(draft.pages if among is None else set(among) & set(draft.pages))
    return [None, *(pid for pid in ids if draft.pages[pid].type != "link")]


def _draw_add(
    draw: st.DrawFn,
    draft: Draft,
    page_id: str,
    parents: list[str | None],
    *,
    unique_slug: bool = False,
    append_at_root: bool = False,
) -> Add:
    parent = draw(st.sampled_from(parents))
    kinds: tuple[PageType, ...] = ("document", "link") + (("group",) if parent is None else ())
    kind = draw(st.sampled_from(kinds))
    slug = page_id if unique_slug else draw(st.sampled_from(SLUGS))
    if slug in {draft.pages[s].slug for s in draft.siblings(parent)}:
        slug = page_id
    new = Page(
        id=page_id,
        parent=parent,
        position=0,
        type=kind,
        title=draw(st.sampled_from(TITLES)),
        slug=slug,
        href=f"https://example.com/{page_id}" if kind == "link" else None,
        markdown=draw(texts) if kind == "document" else "",
    )
    size = len(draft.siblings(parent))
    index = None if parent is None and append_at_root else draw(st.integers(0, size))
    return Add(new, index)


def _draw_move(
    draw: st.DrawFn,
    draft: Draft,
    movable: Sequence[str],
    targets: list[str | None],
    *,
    change_parent: bool = False,
) -> Move | None:
    if not movable:
        return None
    pid = draw(st.sampled_from(sorted(movable)))
    moving = draft.pages[pid]
    below = set(draft.subtree(pid))
    options = [
        t
        for t in targets
        if t not in below
        and (moving.type != "group" or t is None)
        and not (change_parent and t == moving.parent)
        and moving.slug not in {draft.pages[s].slug for s in draft.siblings(t, without=pid)}
    ]
    if not options:
        return None
    target = draw(st.sampled_from(options))
    return Move(pid, target, draw(st.integers(0, len(draft.siblings(target, without=pid)))))


def _draw_markdown(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines(keepends=True)
    at = draw(st.integers(0, len(lines)))
    how = draw(st.sampled_from(("insert", "replace", "delete") if at < len(lines) else ("insert",)))
    word = f"{draw(st.sampled_from(WORDS))}\n"
    if how == "insert":
        lines.insert(at, word)
    elif how == "replace":
        lines[at] = word
    else:
        del lines[at]
    return "".join(lines)


@st.composite
def base_trees(draw: st.DrawFn, max_pages: int = 8) -> Tree:
    draft = Draft.of(Tree())
    for k in range(draw(st.integers(0, max_pages))):
        draft.apply(_draw_add(draw, draft, f"b{k}", _containers(draft)))
    return draft.tree()


# A few pages side by side at the root: both sides nesting them under each other is the quickest
# way to cycles, which random edits of a deeper tree rarely make.
flat_trees = st.integers(2, 5).map(lambda n: tree(*(page(f"f{k}") for k in range(n))))


@st.composite
def side_edits(
    draw: st.DrawFn, base: Tree, prefix: str, keep: frozenset[str] = frozenset()
) -> Tree:
    """One side's revision: a few random adds, deletes, moves, title and markdown edits. Pages in
    `keep` are neither deleted, moved nor rewritten (their ancestors may still be moved)."""
    draft = Draft.of(base)
    for k in range(draw(st.integers(0, 8))):
        alive = sorted(set(draft.pages) - keep)
        op: Op | None = None
        # Moves weigh more: cycles and orphans need both sides to move pages across each other.
        match draw(st.sampled_from(("add", "delete", "move", "move", "move", "title", "markdown"))):
            case "add":
                op = _draw_add(draw, draft, f"{prefix}{k}", _containers(draft))
            case "delete":
                free = [p for p in alive if not keep & set(draft.subtree(p))]
                op = Delete(draw(st.sampled_from(free))) if free else None
            case "move":
                op = _draw_move(draw, draft, alive, _containers(draft))
            case "title" if alive:
                op = Edit(draw(st.sampled_from(alive)), "title", draw(st.sampled_from(TITLES)))
            case "markdown":
                docs = [p for p in alive if draft.pages[p].type == "document"]
                if docs:
                    pid = draw(st.sampled_from(docs))
                    op = Edit(pid, "markdown", _draw_markdown(draw, draft.pages[pid].markdown))
        if op is not None:
            draft.apply(op)
    return draft.tree()


@st.composite
def owned_edits(
    draw: st.DrawFn,
    base: Tree,
    prefix: str,
    own: frozenset[str],
    titles_of: frozenset[str],
    markdown_of: frozenset[str],
) -> list[Op]:
    """Edits confined to pages this side owns, plus one field (title or markdown) of some shared
    pages. Pages are only added at the end of the root or under owned pages, and moved only
    between owned pages, so the other side never sees a parent's children change."""
    draft = Draft.of(base)
    owned = set(own)
    ops: list[Op] = []
    for k in range(draw(st.integers(0, 6))):
        mine = sorted(owned & set(draft.pages))
        op: Op | None = None
        match draw(st.sampled_from(("add", "delete", "move", "title", "markdown"))):
            case "add":
                parents = _containers(draft, mine)
                op = _draw_add(
                    draw, draft, f"{prefix}{k}", parents, unique_slug=True, append_at_root=True
                )
                owned.add(op.page.id)
            case "delete" if mine:
                op = Delete(draw(st.sampled_from(mine)))
            case "move":
                targets = _containers(draft, mine)[1:]
                op = _draw_move(draw, draft, mine, targets, change_parent=True)
            case "title":
                pool = sorted((owned | titles_of) & set(draft.pages))
                if pool:
                    op = Edit(draw(st.sampled_from(pool)), "title", f"{prefix} title {k}")
            case "markdown":
                pool = sorted((owned | markdown_of) & set(draft.pages))
                docs = [p for p in pool if draft.pages[p].type == "document"]
                if docs:
                    pid = draw(st.sampled_from(docs))
                    op = Edit(pid, "markdown", _draw_markdown(draw, draft.pages[pid].markdown))
        if op is not None:
            draft.apply(op)
            ops.append(op)
    return ops


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_one_sided_and_identical_changes_are_taken_as_they_are(data: st.DataObject) -> None:
    base = data.draw(base_trees())
    x = data.draw(side_edits(base, "x"))
    assert merge(base, x, base) == MergeResult(x)
    assert merge(base, base, x) == MergeResult(x)
    assert merge(base, x, x) == MergeResult(x)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_disjoint_edits_are_all_kept(data: st.DataObject) -> None:
    base = data.draw(base_trees())
    owner = {
        p.id: data.draw(st.sampled_from(("ours", "theirs", "shared"))) for p in base.children()
    }
    region: dict[str, frozenset[str]] = {
        who: frozenset(
            pid
            for root, o in owner.items()
            if o == who
            for pid in [root, *(p.id for p in base.descendants(root))]
        )
        for who in ("ours", "theirs", "shared")
    }
    shared, none = region["shared"], frozenset[str]()
    ours_ops = data.draw(owned_edits(base, "o", region["ours"], shared, none))
    theirs_ops = data.draw(owned_edits(base, "t", region["theirs"], none, shared))
    ours, theirs = apply(base, *ours_ops), apply(base, *theirs_ops)
    # Same as making one side's edits after the other's, whichever goes first.
    assert merge(base, ours, theirs) == MergeResult(apply(base, *ours_ops, *theirs_ops))
    assert merge(base, theirs, ours) == MergeResult(apply(base, *theirs_ops, *ours_ops))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_disjoint_line_edits_merge_cleanly(data: st.DataObject) -> None:
    size = data.draw(st.integers(3, 12))
    lines = [f"line {n}\n" for n in range(size)]
    i = data.draw(st.integers(0, size - 1))
    j = data.draw(st.integers(0, size - 1).filter(lambda j: abs(i - j) >= 2))
    ours, theirs, both = list(lines), list(lines), list(lines)
    ours[i] = both[i] = "ours\n"
    theirs[j] = both[j] = "theirs\n"
    assert merge_markdown("".join(lines), "".join(ours), "".join(theirs)) == "".join(both)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_same_lines_edited_differently_always_conflict(data: st.DataObject) -> None:
    base = data.draw(base_trees())
    text = data.draw(texts.filter(bool))
    base = apply(base, Add(page("target", slug="target-page", markdown=text)))
    line = data.draw(st.integers(0, text.count("\n") - 1))

    def rewrite(side: Tree, word: str) -> Tree:
        lines = text.splitlines(keepends=True)
        lines[line] = f"{word} edit\n"
        return apply(side, Edit("target", "markdown", "".join(lines)))

    keep = frozenset({"target"})
    ours = rewrite(data.draw(side_edits(base, "o", keep)), "ours")
    theirs = rewrite(data.draw(side_edits(base, "t", keep)), "theirs")
    result = merge(base, ours, theirs)
    assert result.tree["target"].markdown == ours["target"].markdown
    assert [(c.ours, c.theirs) for c in result.conflicts_for("target") if c.kind == "content"] == [
        (ours["target"].markdown, theirs["target"].markdown)
    ]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_merge_is_a_valid_tree_and_loses_no_text(data: st.DataObject) -> None:
    base = data.draw(st.one_of(base_trees(), flat_trees))
    # Same prefixes make both sides add pages with the same ids: add/add clashes.
    ours_prefix, theirs_prefix = data.draw(st.sampled_from((("o", "t"), ("n", "n"))))
    ours = data.draw(side_edits(base, ours_prefix))
    theirs = data.draw(side_edits(base, theirs_prefix))
    result = merge(base, ours, theirs)
    assert result.tree.problems() == ()
    assert len({(c.page_id, c.kind, c.field) for c in result.conflicts}) == len(result.conflicts)

    # Every text a side wrote is in the tree, in a conflict, or merged cleanly with the other's.
    for name, side, other in (("ours", ours, theirs), ("theirs", theirs, ours)):
        for p in side.pages:
            before = base.get(p.id)
            if p.markdown == ("" if before is None else before.markdown):
                continue
            merged = result.tree.get(p.id)
            assert merged is not None, f"{name} edited {p.id} and it vanished"
            if merged.markdown == p.markdown or any(
                getattr(c, name) == p.markdown
                for c in result.conflicts_for(p.id)
                if c.kind in ("content", "delete-edit")
            ):
                continue
            counterpart = other[p.id]
            assert before is not None and counterpart.markdown != before.markdown
            o, t = (p, counterpart) if name == "ours" else (counterpart, p)
            assert merged.markdown == merge_markdown(before.markdown, o.markdown, t.markdown)


@st.composite
def nestings(draw: st.DrawFn, base: Tree) -> Tree:
    draft = Draft.of(base)
    for _ in range(draw(st.integers(1, 3))):
        op = _draw_move(draw, draft, sorted(draft.pages), _containers(draft))
        if op is not None:
            draft.apply(op)
    return draft.tree()


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_crossing_moves_are_cut_where_they_would_loop(data: st.DataObject) -> None:
    base = data.draw(flat_trees)
    ours, theirs = data.draw(nestings(base)), data.draw(nestings(base))
    result = merge(base, ours, theirs)
    assert result.tree.problems() == ()
    # Taking each page's parent by the field rule alone: a cycle there must be reported, and
    # without one nothing may be.
    naive = {
        pid: theirs[pid].parent if ours[pid].parent == base[pid].parent else ours[pid].parent
        for pid in base
    }
    cut = [c.page_id for c in result.conflicts if c.kind == "cycle"]
    assert bool(cut) == bool(find_cycles(naive))
    for pid in cut:
        assert result.tree[pid].parent == ours[pid].parent
