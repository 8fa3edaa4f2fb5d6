"""Who may do what with comments, from the caller's role on the space (authz.content). The same
functions guard the endpoints and fill each comment's and reply's `permissions`."""

from __future__ import annotations

from docshelf.authz.roles import at_least
from docshelf.space.policy import can_admin, can_comment, can_view


def can_post(role: str | None) -> bool:
    """Post comments and replies, and react: the `comment` role and up."""
    return can_comment(role)


def can_edit(role: str | None, *, author: bool) -> bool:
    """Change the text: its author while they may still comment, or a space admin."""
    return can_admin(role) or (author and can_comment(role))


def can_delete(role: str | None, *, author: bool) -> bool:
    return can_edit(role, author=author)


def can_resolve(role: str | None) -> bool:
    return at_least(role, "edit")


def permissions(role: str | None, *, author: bool) -> dict[str, bool]:
    return {
        "view": can_view(role),
        "edit": can_edit(role, author=author),
        "reply": can_post(role),
        # GitBook 0.130 requires `react` though it describes only `reply` ("react or reply").
        "react": can_post(role),
        "delete": can_delete(role, author=author),
    }
