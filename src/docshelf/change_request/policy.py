"""Change requests follow the space's role: readers see them, editors write them, reviewers
merge them (with the content engine)."""

from __future__ import annotations

from docshelf.authz.roles import at_least


def can_edit(role: str | None, edit_mode: str | None) -> bool:
    return at_least(role, "edit") and edit_mode != "locked"


def can_merge(role: str | None) -> bool:
    return at_least(role, "review")
