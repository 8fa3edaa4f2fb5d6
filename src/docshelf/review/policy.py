"""Who may do what with reviews, from the caller's role on the space (the roles of the spec:
`review` reviews content, `edit` edits it). GitBook: "Only users who are requested reviewers or
have space review permissions can submit a review"."""

from __future__ import annotations

from docshelf.authz.roles import at_least


def can_review(role: str | None, *, requested: bool) -> bool:
    return at_least(role, "review") or (requested and at_least(role, "read"))


def can_request_reviewers(role: str | None) -> bool:
    """Whoever may edit the change request may ask for its review."""
    return at_least(role, "edit")


def can_remove_request(role: str | None, *, caller: str, reviewer: str) -> bool:
    """Editors manage the requests; a requested reviewer may decline their own."""
    return can_request_reviewers(role) or caller == reviewer


def can_view_reviewer(role: str | None) -> bool:
    """A user can be asked for a review only if they can read the space."""
    return at_least(role, "read")
