from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.authz.guard import not_found, require
from docshelf.authz.roles import rank
from docshelf.invite import policy, repository
from docshelf.invite.presenter import present_invite
from docshelf.invite.schemas import CreateInvite, UpdateInvite
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import Forbidden
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.member import repository as member_repository
from docshelf.member.presenter import present_member
from docshelf.models import invites
from docshelf.organization import policy as org_policy
from docshelf.organization import repository as org_repository

_KEYS = (SortKey(invites.c.created_at, "created_at"), SortKey(invites.c.id, "id"))


async def _managed_invite(ctx: Ctx, org_id: str, invite_id: str) -> sa.RowMapping:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_manage_links(access), "Only organization admins can manage invite links")
    row = await repository.get(ctx.conn, org_id, invite_id)
    if row is None:
        not_found("Invite")
    return row


async def list_invites(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_view_links(access), "Only organization admins can view invite links")
    page = await paginate(ctx.conn, repository.in_organization(org_id), keys=_KEYS, params=params)
    return page.render(present_invite)


async def create_invite(ctx: Ctx, org_id: str, body: CreateInvite) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_manage_links(access), "Only organization admins can create invite links")
    invite_id = new_id()
    await repository.insert(
        ctx.conn,
        invite_id=invite_id,
        org_id=org_id,
        role=body.role,
        created_by=ctx.actor.user_id,
        now=utcnow(),
    )
    return await get_invite(ctx, org_id, invite_id)


async def get_invite(ctx: Ctx, org_id: str, invite_id: str) -> dict[str, Any]:
    return present_invite(await _managed_invite(ctx, org_id, invite_id))


async def update_invite(
    ctx: Ctx, org_id: str, invite_id: str, body: UpdateInvite
) -> dict[str, Any]:
    await _managed_invite(ctx, org_id, invite_id)
    await repository.update_role(ctx.conn, invite_id, body.new_role)
    return await get_invite(ctx, org_id, invite_id)


async def delete_invite(ctx: Ctx, org_id: str, invite_id: str) -> None:
    await _managed_invite(ctx, org_id, invite_id)
    await repository.delete(ctx.conn, invite_id)


async def join(ctx: Ctx, org_id: str, invite_id: str) -> dict[str, Any]:
    """Anyone holding the invite id may join with its role; a member keeps a higher role."""
    invite = await repository.get_any(ctx.conn, org_id, invite_id)
    if invite is None:
        not_found("Invite")
    org = await org_repository.get(ctx.conn, org_id)
    assert org is not None
    if not org["invite_links"]:
        raise Forbidden("Invite links are disabled for this organization")
    user_id = ctx.actor.user_id
    current = await member_repository.get(ctx.conn, org_id, user_id)
    if current is None:
        await member_repository.insert(
            ctx.conn, org_id=org_id, user_id=user_id, role=invite["role"], now=utcnow()
        )
    elif rank(invite["role"]) > rank(current["role"]):
        await member_repository.update(ctx.conn, org_id, user_id, {"role": invite["role"]})
    row = await member_repository.get(ctx.conn, org_id, user_id)
    assert row is not None
    return present_member(row, ctx.base_url)
