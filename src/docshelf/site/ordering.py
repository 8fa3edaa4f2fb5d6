"""Pure order and default rules of a site's structure, shared by sections, section groups and
site spaces (and property-tested on their own).

Siblings are ordered by (position, id). Positions are gapped (GAP apart), so a move writes one
row: the moved item takes a position between its new neighbours (the approach of
`collection/ordering.py`); only a closed gap renumbers the siblings."""

from __future__ import annotations

import re
from collections.abc import Sequence

from docshelf.kit.errors import BadRequest

GAP = 1024
# URL-safe path segments: lower-case letters, digits and single inner hyphens, dots or
# underscores; no slash, so a path is one segment below its parent.
PATH_PATTERN = r"^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$"
_PATH = re.compile(PATH_PATTERN)
_NOT_SAFE = re.compile(r"[^a-z0-9]+")


def place(order: Sequence[str], item: str, *, before: str | None, after: str | None) -> list[str]:
    """`order` with `item` moved (or inserted) before/after a sibling, else at the end."""
    rest = [i for i in order if i != item]
    anchor = before if before is not None else after
    if anchor is None:
        return [*rest, item]
    if anchor == item:
        raise BadRequest(
            "Invalid body field 'position': an item cannot be placed relative to itself"
        )
    if anchor not in rest:
        raise BadRequest(f"Invalid body field 'position': '{anchor}' is not a sibling of the item")
    index = rest.index(anchor) + (0 if before is not None else 1)
    return [*rest[:index], item, *rest[index:]]


def positions_for(order: Sequence[str], moved: str, current: dict[str, int]) -> dict[str, int]:
    """The positions to write so that `order` (where only `moved` changed place) holds, given
    the others' `current` positions: the moved item alone, or every sibling when no integer
    is left between its neighbours."""
    index = order.index(moved)
    before = current[order[index - 1]] if index > 0 else None
    after = current[order[index + 1]] if index + 1 < len(order) else None
    if before is None and after is None:
        return {moved: 0}
    if after is None:
        assert before is not None
        return {moved: before + GAP}
    if before is None:
        return {moved: after - GAP}
    if after - before >= 2:
        return {moved: (before + after) // 2}
    return {item: i * GAP for i, item in enumerate(order)}


def next_default(order: Sequence[str], leaving: str, current_default: str | None) -> str | None:
    """The default after `leaving` goes: unchanged unless it was the default, then the first
    remaining sibling (None when none remains)."""
    if current_default != leaving:
        return current_default
    rest = [i for i in order if i != leaving]
    return rest[0] if rest else None


def is_url_safe(path: str) -> bool:
    return 1 <= len(path) <= 100 and _PATH.match(path) is not None


def path_from(title: str, taken: set[str], fallback: str) -> str:
    """A URL-safe path from a title, unique among `taken` (a numeric suffix otherwise)."""
    base = _NOT_SAFE.sub("-", title.lower()).strip("-")[:90] or fallback
    path, n = base, 2
    while path in taken:
        path = f"{base}-{n}"
        n += 1
    return path
