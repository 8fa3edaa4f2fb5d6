from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.guard import not_found, require
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.member import policy as member_policy
from docshelf.member import repository as member_repository
from docshelf.models import team_members, teams
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess
from docshelf.team import policy, repository
from docshelf.team.presenter import present_team, present_team_member
from docshelf.team.schemas import AddTeamMember, CreateTeam, UpdateTeam, UpdateTeamMembers

_TEAM_KEYS = (SortKey(teams.c.created_at, "created_at"), SortKey(teams.c.id, "id"))
_TEAM_MEMBER_KEYS = (
    SortKey(team_members.c.added_at, "added_at"),
    SortKey(team_members.c.user_id, "user_id"),
)


async def _visible_team(ctx: Ctx, org_id: str, team_id: str) -> tuple[OrgAccess, sa.RowMapping]:
    access = await org_policy.load(ctx, org_id)
    row = await repository.get(ctx.conn, org_id, team_id, ctx.actor.user_id)
    require(
        policy.can_view(access, row["caller_team_role"] if row else None),
        "Guests cannot view teams",
    )
    if row is None:
        not_found("Team")
    return access, row


async def _resolve_members(conn: AsyncConnection, org_id: str, refs: list[str]) -> list[str]:
    """Member references are user ids or e-mail addresses; every one must be a member."""
    emails = {r.strip().lower() for r in refs if "@" in r}
    ids = {r for r in refs if "@" not in r}
    by_email = await member_repository.user_ids_by_email(conn, org_id, emails) if emails else {}
    known_ids = await member_repository.existing_user_ids(conn, org_id, ids) if ids else set()
    unknown = sorted((emails - set(by_email)) | (ids - known_ids))
    if unknown:
        raise BadRequest(f"Not members of the organization: {', '.join(unknown)}")
    resolved: list[str] = []
    for r in refs:
        uid = by_email[r.strip().lower()] if "@" in r else r
        if uid not in resolved:
            resolved.append(uid)
    return resolved


async def list_teams(
    ctx: Ctx, org_id: str, params: PageParams, *, owner: str | None, title: str | None
) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_list(access), "Guests cannot list teams")
    owned_by, none = None, False
    if owner is not None:
        owner_member = await member_repository.get(ctx.conn, org_id, owner)
        if owner_member is None:
            none = True
        elif owner_member["role"] != "admin":
            # Admins can manage every team; others only the teams they own.
            owned_by = owner
    stmt, values = repository.listing(
        org_id, ctx.actor.user_id, title=title, owned_by=owned_by, none=none
    )
    page = await paginate(ctx.conn, stmt, keys=_TEAM_KEYS, params=params, values=values)
    return page.render(lambda row: present_team(row, access))


async def create_team(ctx: Ctx, org_id: str, body: CreateTeam) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_create(access), "Only organization admins can create teams")
    member_ids = await _resolve_members(ctx.conn, org_id, body.members)
    team_id = new_id()
    now = utcnow()
    await repository.insert(ctx.conn, team_id=team_id, org_id=org_id, title=body.title, now=now)
    for uid in member_ids:
        await repository.add_member(
            ctx.conn, team_id=team_id, org_id=org_id, user_id=uid, role="member", now=now
        )
    _, row = await _visible_team(ctx, org_id, team_id)
    return present_team(row, access)


async def get_team(ctx: Ctx, org_id: str, team_id: str) -> dict[str, Any]:
    access, row = await _visible_team(ctx, org_id, team_id)
    return present_team(row, access)


async def update_team(ctx: Ctx, org_id: str, team_id: str, body: UpdateTeam) -> dict[str, Any]:
    access, _ = await _visible_team(ctx, org_id, team_id)
    require(policy.can_edit(access), "Only organization admins can rename teams")
    await repository.update(ctx.conn, team_id, {"title": body.title})
    return await get_team(ctx, org_id, team_id)


async def delete_team(ctx: Ctx, org_id: str, team_id: str) -> None:
    access, _ = await _visible_team(ctx, org_id, team_id)
    require(policy.can_edit(access), "Only organization admins can delete teams")
    await repository.delete(ctx.conn, team_id)


async def list_team_members(
    ctx: Ctx, org_id: str, team_id: str, params: PageParams
) -> dict[str, Any]:
    await _visible_team(ctx, org_id, team_id)
    page = await paginate(
        ctx.conn, repository.members_of(team_id), keys=_TEAM_MEMBER_KEYS, params=params
    )
    return page.render(lambda row: present_team_member(row, ctx.base_url))


async def _manageable_team(ctx: Ctx, org_id: str, team_id: str) -> None:
    access, row = await _visible_team(ctx, org_id, team_id)
    require(
        policy.can_manage_members(access, row["caller_team_role"]),
        "Only organization admins and the team's owners can manage its members",
    )


async def update_team_members(ctx: Ctx, org_id: str, team_id: str, body: UpdateTeamMembers) -> None:
    await _manageable_team(ctx, org_id, team_id)
    add = await _resolve_members(ctx.conn, org_id, body.add)
    remove = set(await _resolve_members(ctx.conn, org_id, body.remove))
    memberships: dict[str, str] = {}
    for ref, membership in body.memberships.items():
        (uid,) = await _resolve_members(ctx.conn, org_id, [ref])
        memberships[uid] = membership.role
    current = await repository.team_roles(ctx.conn, team_id)
    now = utcnow()
    wanted: dict[str, str] = {uid: current.get(uid, "member") for uid in add}
    wanted.update(memberships)
    for uid, role in wanted.items():
        # Removal wins over addition for a user named in both.
        if uid in remove:
            continue
        if uid not in current:
            await repository.add_member(
                ctx.conn, team_id=team_id, org_id=org_id, user_id=uid, role=role, now=now
            )
        elif current[uid] != role:
            await repository.set_member_role(ctx.conn, team_id, uid, role)
    await repository.remove_members(ctx.conn, team_id, remove & set(current))


async def put_team_member(
    ctx: Ctx, org_id: str, team_id: str, user_id: str, body: AddTeamMember
) -> None:
    await _manageable_team(ctx, org_id, team_id)
    if await member_repository.get(ctx.conn, org_id, user_id) is None:
        not_found("Member")
    current = await repository.team_roles(ctx.conn, team_id)
    if user_id not in current:
        await repository.add_member(
            ctx.conn, team_id=team_id, org_id=org_id, user_id=user_id, role=body.role, now=utcnow()
        )
    elif current[user_id] != body.role:
        await repository.set_member_role(ctx.conn, team_id, user_id, body.role)


async def delete_team_member(ctx: Ctx, org_id: str, team_id: str, user_id: str) -> None:
    await _manageable_team(ctx, org_id, team_id)
    if user_id not in await repository.team_roles(ctx.conn, team_id):
        not_found("Team member")
    await repository.remove_members(ctx.conn, team_id, {user_id})


async def list_member_teams(
    ctx: Ctx, org_id: str, user_id: str, params: PageParams, *, title: str | None
) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    if not member_policy.can_view_member(access, user_id, ctx.actor.user_id):
        require(False, "Guests cannot view other members")
    if await member_repository.get(ctx.conn, org_id, user_id) is None:
        not_found("Member")
    stmt, values = repository.teams_of_member(org_id, user_id, ctx.actor.user_id, title=title)
    page = await paginate(ctx.conn, stmt, keys=_TEAM_KEYS, params=params, values=values)
    return page.render(
        lambda row: {"team": present_team(row, access), "member": {"role": row["member_team_role"]}}
    )
