from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from docshelf.kit.schemas import Body, Out, TeamRole
from docshelf.member.schemas import MemberOut

TeamTitle = Annotated[str, StringConstraints(min_length=1, max_length=64)]
MemberRef = Annotated[str, StringConstraints(min_length=1, max_length=320)]


class CreateTeam(Body):
    title: TeamTitle
    members: Annotated[list[MemberRef], Field(max_length=1000)] = []


class UpdateTeam(Body):
    title: TeamTitle


class TeamMembership(Body):
    role: TeamRole


class UpdateTeamMembers(Body):
    add: Annotated[list[MemberRef], Field(max_length=1000)] = []
    remove: Annotated[list[MemberRef], Field(max_length=1000)] = []
    memberships: Annotated[dict[str, TeamMembership], Field(max_length=1000)] = {}


class AddTeamMember(Body):
    role: TeamRole = "member"


class TeamOut(Out):
    object: Literal["team"]
    id: str
    title: str
    members: int
    spaces: int
    createdAt: str
    permissions: dict[str, bool]


class TeamList(Out):
    items: list[TeamOut]
    count: int
    next: dict[str, str] | None = None


class TeamMemberRole(Out):
    role: TeamRole


class TeamMemberItem(Out):
    organization: MemberOut
    team: TeamMemberRole
    permissions: dict[str, bool]


class TeamMemberList(Out):
    items: list[TeamMemberItem]
    count: int
    next: dict[str, str] | None = None


class MemberTeamItem(Out):
    team: TeamOut
    member: TeamMemberRole


class MemberTeamList(Out):
    items: list[MemberTeamItem]
    count: int
    next: dict[str, str] | None = None
