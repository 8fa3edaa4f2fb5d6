from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from docshelf.kit.schemas import Body, EntityId, Out, Role
from docshelf.team.schemas import TeamOut
from docshelf.user.schemas import UserOut

Ids = Annotated[list[EntityId], Field(min_length=1, max_length=100)]


class InviteUsersAndTeams(Body):
    # null removes the listed users' and teams' grants (GitBook: MemberRoleOrGuest).
    role: Role | None
    users: Ids | None = None
    teams: Ids | None = None

    @model_validator(mode="after")
    def _someone(self) -> InviteUsersAndTeams:
        if not self.users and not self.teams:
            raise ValueError("give 'users' and/or 'teams'")
        return self


class UpdatePermission(Body):
    role: Role | None = None


class UserPermissionOut(Out):
    permission: Role
    user: UserOut


class TeamPermissionOut(Out):
    permission: Role
    team: TeamOut


class UserPermissionList(Out):
    items: list[UserPermissionOut]
    count: int
    next: dict[str, Any] | None = None


class TeamPermissionList(Out):
    items: list[TeamPermissionOut]
    count: int
    next: dict[str, Any] | None = None
