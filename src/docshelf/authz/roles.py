"""The permission model, pure and I/O-free.

Roles rank admin > create > review > edit > comment > read; `None` is a guest (no role of its
own). Content (spaces, collections) carries a `defaultLevel`: a role, `None` (nobody gets a role
from the organization) or "inherit" (take the parent's level; at the top, the organization role).
The effective role on a piece of content is the highest of
- the organization role, capped by the resolved default level (an organization role flows down
  only as far as the content lets it: `defaultLevel: read` makes editors readers there),
- every direct grant to the user on the content or any ancestor,
- every grant to a team the user belongs to, on the content or any ancestor.
Organization admins always keep admin on content of their organization.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Literal

Role = Literal["admin", "create", "review", "edit", "comment", "read"]
INHERIT: Final = "inherit"
DefaultLevel = Role | None | Literal["inherit"]

ROLES: Final[tuple[Role, ...]] = ("read", "comment", "edit", "review", "create", "admin")
_RANK: Final[dict[str | None, int]] = {None: 0, **{r: i + 1 for i, r in enumerate(ROLES)}}


def rank(role: str | None) -> int:
    return _RANK[role]


def at_least(role: str | None, needed: Role) -> bool:
    return rank(role) >= rank(needed)


def highest(roles: Iterable[str | None]) -> Role | None:
    best: str | None = None
    for r in roles:
        if rank(r) > rank(best):
            best = r
    return best  # type: ignore[return-value]


def resolve_default_level(chain: Sequence[DefaultLevel], org_role: str | None) -> str | None:
    """`chain` runs from the content itself up through its parent collections. The first level
    that is not "inherit" decides; a chain of only "inherit" ends at the organization role."""
    for level in chain:
        if level != INHERIT:
            return level
    return org_role


def effective_role(
    *,
    org_role: str | None,
    is_member: bool,
    default_levels: Sequence[DefaultLevel] = (),
    user_grants: Iterable[str | None] = (),
    team_grants: Iterable[str | None] = (),
) -> Role | None:
    """Role of one user on one piece of content. Non-members get only what is granted to them."""
    if is_member and org_role == "admin":
        return "admin"
    inherited: str | None = None
    if is_member and org_role is not None:
        level = resolve_default_level(default_levels, org_role)
        # The default level caps what the organization role gives on this content.
        inherited = level if rank(level) < rank(org_role) else org_role
    return highest([inherited, *user_grants, *team_grants])
