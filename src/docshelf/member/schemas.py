from __future__ import annotations

from typing import Any, Literal

from docshelf.kit.schemas import Body, Out, Role
from docshelf.user.schemas import UserOut

MemberSort = Literal["joinedAt", "lastSeenAt", "name"]
Order = Literal["asc", "desc"]
RoleFilter = Literal["admin", "create", "review", "edit", "comment", "read", "guest"]


class UpdateMember(Body):
    role: Role | None = None


class MemberOut(Out):
    object: Literal["member"]
    id: str
    role: Role | None
    user: UserOut
    disabled: bool
    joinedAt: str
    lastSeenAt: str | None = None
    sso: bool
    spaces: int
    teams: int


class MemberList(Out):
    items: list[MemberOut]
    count: int
    next: dict[str, str] | None = None


class PingOut(Out):
    serviceVisitorClaims: str
    gitbookVisitorClaims: str


class MemberSpacesList(Out):
    items: list[dict[str, Any]]
    count: int
    next: dict[str, str] | None = None
