"""The page tree of one revision, as the content engine merges it.

Plain immutable values with nothing behind them: merging and validating are then pure functions
of their inputs, cheap to test exhaustively, and a tree can be shared between revisions, cached
or used as a dictionary key without anyone changing it underneath.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

PageType = Literal["document", "group", "link"]
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def page_slug(title: str) -> str:
    """The slug a page gets from its title: ASCII letters and digits joined by hyphens."""
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    slug = _NOT_SLUG.sub("-", text).strip("-")[:100].strip("-")
    return slug or "untitled"


def free_slug(wanted: str, taken: set[str]) -> str:
    """`wanted`, or the first of `wanted-2`, `wanted-3`... that no sibling has."""
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


PAGE_TYPES: frozenset[str] = frozenset(get_args(PageType))


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a revision.

    `position` orders a page among the children of its parent; a valid tree numbers each
    parent's children 0..n-1, so the number says nothing beyond that order. Only document pages
    hold `markdown` and only link pages an `href`: keeping the other fields empty means a merge
    cannot smuggle text into a page that would never show it.
    """

    id: str
    parent: str | None
    position: int
    type: PageType
    title: str
    slug: str
    emoji: str | None = None
    icon: str | None = None
    description: str | None = None
    hidden: bool = False
    href: str | None = None
    markdown: str = ""


class InvalidTree(ValueError):
    """A tree that breaks one of the rules in `Tree.problems`; `problems` lists every breach."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("; ".join(self.problems))


def _by_id(page: Page) -> str:
    return page.id


def _sibling_order(page: Page) -> tuple[int, str]:
    # The id breaks ties so that even a malformed tree (duplicate positions) has one order.
    return (page.position, page.id)


@dataclass(frozen=True, slots=True)
class Tree(Mapping[str, Page]):
    """A revision's pages, as a read-only mapping from page id to page.

    `pages` is kept sorted by id, so two trees holding the same pages are equal and hash alike
    whatever order they were built in. The indexes are built once, at construction, because a
    frozen value cannot fill a cache later and every helper needs them.
    """

    pages: tuple[Page, ...] = ()
    _index: dict[str, Page] = field(init=False, repr=False, compare=False)
    _kids: dict[str | None, tuple[Page, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pages = tuple(sorted(self.pages, key=_by_id))
        index = {page.id: page for page in pages}
        if len(index) != len(pages):
            twice = sorted(pid for pid, n in Counter(p.id for p in pages).items() if n > 1)
            raise ValueError(f"duplicate page ids: {', '.join(twice)}")
        grouped: dict[str | None, list[Page]] = {}
        for page in pages:
            grouped.setdefault(page.parent, []).append(page)
        kids = {
            parent: tuple(sorted(group, key=_sibling_order)) for parent, group in grouped.items()
        }
        object.__setattr__(self, "pages", pages)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_kids", kids)

    @classmethod
    def of(cls, pages: Iterable[Page]) -> Tree:
        return cls(tuple(pages))

    def __getitem__(self, page_id: str) -> Page:
        return self._index[page_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def children(self, parent_id: str | None = None) -> tuple[Page, ...]:
        """The pages directly under `parent_id` (None: the root), in sibling order."""
        return self._kids.get(parent_id, ())

    def ancestors(self, page_id: str) -> tuple[Page, ...]:
        """Parent first, up to the page at the root. InvalidTree when the chain is broken or loops,
        rather than an endless walk or a silently shortened path."""
        chain: list[Page] = []
        seen = {page_id}
        parent = self[page_id].parent
        while parent is not None:
            if parent in seen:
                raise InvalidTree([f"page {page_id!r}: its ancestors form a cycle"])
            page = self._index.get(parent)
            if page is None:
                raise InvalidTree([f"page {page_id!r}: ancestor {parent!r} does not exist"])
            seen.add(parent)
            chain.append(page)
            parent = page.parent
        return tuple(chain)

    def path(self, page_id: str) -> str:
        """Slugs from the root down to the page, joined by "/": the page's address in the space."""
        chain = [self[page_id], *self.ancestors(page_id)]
        return "/".join(page.slug for page in reversed(chain))

    def descendants(self, page_id: str) -> tuple[Page, ...]:
        """Everything under the page, depth first in sibling order (the order a reader sees)."""
        out: list[Page] = []
        seen = {page_id}
        stack = list(reversed(self.children(page_id)))
        while stack:
            page = stack.pop()
            if page.id in seen:  # only a malformed tree loops; stop rather than spin
                continue
            seen.add(page.id)
            out.append(page)
            stack.extend(reversed(self.children(page.id)))
        return tuple(out)

    def problems(self) -> tuple[str, ...]:
        """Every way this tree breaks the rules; empty when it is well formed.

        The rules: known page types; slugs non-empty and free of "/" (they are path segments);
        markdown only on documents and href only on links; every parent exists; no cycles; group
        pages only at the root; siblings have distinct slugs (paths must be unique) and positions
        exactly 0..n-1.
        """
        out: list[str] = []
        for page in self.pages:
            where = f"page {page.id!r}"
            if page.type not in PAGE_TYPES:
                out.append(f"{where}: unknown type {page.type!r}")
            if not page.slug or "/" in page.slug:
                out.append(f"{where}: slug {page.slug!r} is empty or holds '/'")
            if page.markdown and page.type != "document":
                out.append(f"{where}: a {page.type} page holds markdown")
            if page.href is not None and page.type != "link":
                out.append(f"{where}: a {page.type} page has an href")
            if page.parent is not None:
                if page.parent not in self._index:
                    out.append(f"{where}: parent {page.parent!r} does not exist")
                if page.type == "group":
                    out.append(f"{where}: group pages belong at the root")
        for cycle in find_cycles({page.id: page.parent for page in self.pages}):
            out.append(f"pages {', '.join(map(repr, cycle))} form a cycle")
        for parent in sorted(self._kids, key=lambda p: (p is not None, p or "")):
            kids = self._kids[parent]
            where = "the root" if parent is None else f"page {parent!r}"
            if [page.position for page in kids] != list(range(len(kids))):
                out.append(f"children of {where}: positions are not 0..{len(kids) - 1}")
            slugs: dict[str, list[str]] = {}
            for page in kids:
                slugs.setdefault(page.slug, []).append(page.id)
            for slug, ids in sorted(slugs.items()):
                if len(ids) > 1:
                    out.append(f"children of {where}: slug {slug!r} used by {', '.join(ids)}")
        return tuple(out)

    def validate(self) -> None:
        """Raise InvalidTree listing every problem, if there is any."""
        problems = self.problems()
        if problems:
            raise InvalidTree(problems)


def find_cycles(parent_of: Mapping[str, str | None]) -> list[tuple[str, ...]]:
    """Each cycle in a parent relation, once, in a deterministic order (by the smallest id from
    which it is reached). Parents missing from the mapping end a chain: that is a separate
    problem, and counting it as a cycle would report it twice."""
    done: set[str] = set()
    cycles: list[tuple[str, ...]] = []
    for start in sorted(parent_of):
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = start
        while node is not None and node in parent_of and node not in done:
            if node in on_path:
                cycles.append(tuple(path[path.index(node) :]))
                break
            path.append(node)
            on_path.add(node)
            node = parent_of[node]
        done.update(path)
    return cycles
