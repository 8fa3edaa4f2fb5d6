from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from docshelf.authz.content import ContentScope
from docshelf.authz.guard import not_found, require
from docshelf.events import event, outbox
from docshelf.kit import instance
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import Conflict
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.member import policy, repository
from docshelf.member.presenter import present_member
from docshelf.member.schemas import MemberSort, Order, RoleFilter, UpdateMember
from docshelf.models import members, spaces, users
from docshelf.organization import policy as org_policy
from docshelf.space import repository as space_repository
from docshelf.space.presenter import present_space

_SORT_KEYS: dict[str, tuple[SortKey, ...]] = {
    "joinedAt": (SortKey(members.c.joined_at, "joined_at"), SortKey(members.c.user_id, "user_id")),
    "lastSeenAt": (
        SortKey(members.c.last_seen_at, "last_seen_at"),
        SortKey(members.c.user_id, "user_id"),
    ),
    "name": (
        SortKey(users.c.display_name, "user_display_name"),
        SortKey(members.c.user_id, "user_id"),
    ),
}
VISITOR_CLAIMS_TTL = timedelta(hours=1)
_SPACE_KEYS = (SortKey(spaces.c.created_at, "created_at"), SortKey(spaces.c.id, "id"))


async def list_members(
    ctx: Ctx,
    org_id: str,
    params: PageParams,
    *,
    role: RoleFilter | None,
    search: str | None,
    sort: MemberSort,
    order: Order,
) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_list(access), "Guests cannot list the organization's members")
    stmt, values = repository.listing(org_id, role=role, search=search, seen=sort == "lastSeenAt")
    page = await paginate(
        ctx.conn,
        stmt,
        keys=_SORT_KEYS[sort],
        params=params,
        descending=order == "desc",
        values=values,
    )
    return page.render(lambda row: present_member(row, ctx.base_url))


async def _member(ctx: Ctx, org_id: str, user_id: str) -> sa.RowMapping:
    row = await repository.get(ctx.conn, org_id, user_id)
    if row is None:
        not_found("Member")
    return row


async def get_member(ctx: Ctx, org_id: str, user_id: str) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    if not policy.can_view_member(access, user_id, ctx.actor.user_id):
        require(False, "Guests cannot view other members")
    return present_member(await _member(ctx, org_id, user_id), ctx.base_url)


async def update_member(ctx: Ctx, org_id: str, user_id: str, body: UpdateMember) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id, lock=True)
    require(policy.can_manage(access), "Only organization admins can change member roles")
    row = await _member(ctx, org_id, user_id)
    if "role" in body.model_fields_set and body.role != row["role"]:
        if row["role"] == "admin" and await repository.count_admins(ctx.conn, org_id) <= 1:
            raise Conflict("Cannot demote the last admin of the organization")
        await repository.update(ctx.conn, org_id, user_id, {"role": body.role})
    return present_member(await _member(ctx, org_id, user_id), ctx.base_url)


async def remove_member(ctx: Ctx, org_id: str, user_id: str) -> None:
    access = await org_policy.load(ctx, org_id, lock=True)
    if not policy.can_remove(access, user_id, ctx.actor.user_id):
        require(policy.can_list(access), "Guests cannot view other members")
        await _member(ctx, org_id, user_id)
        require(False, "Only organization admins can remove members")
    row = await _member(ctx, org_id, user_id)
    if row["role"] == "admin" and await repository.count_admins(ctx.conn, org_id) <= 1:
        raise Conflict("Cannot remove the last admin of the organization")
    await repository.delete(ctx.conn, org_id, user_id)
    data = {"userId": user_id, "role": row["role"]}
    await outbox.emit(ctx, event.MEMBER_LEFT, organization=org_id, data=data)


async def set_sso(ctx: Ctx, org_id: str, user_id: str) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_manage(access), "Only organization admins can set SSO members")
    await _member(ctx, org_id, user_id)
    await repository.update(ctx.conn, org_id, user_id, {"sso": True})
    return present_member(await _member(ctx, org_id, user_id), ctx.base_url)


async def ping(ctx: Ctx, org_id: str) -> dict[str, str]:
    access = await org_policy.load(ctx, org_id)
    now = utcnow()
    await repository.update(ctx.conn, org_id, ctx.actor.user_id, {"last_seen_at": now})
    secret = await instance.get_or_create(
        ctx.conn, "visitor_jwt_secret", lambda: secrets.token_urlsafe(48)
    )
    claims = {
        "iss": ctx.base_url,
        "sub": ctx.actor.user_id,
        "org": org_id,
        "role": access.role,
        "iat": int(now.timestamp()),
        "exp": int((now + VISITOR_CLAIMS_TTL).timestamp()),
    }
    import jwt  # loaded where a token is signed, not in every API process

    token = jwt.encode(claims, secret, algorithm="HS256")
    # GitBook clients read gitbookVisitorClaims; the spec names it serviceVisitorClaims.
    return {"serviceVisitorClaims": token, "gitbookVisitorClaims": token}


async def list_member_spaces(
    ctx: Ctx, org_id: str, user_id: str, params: PageParams, order: Order
) -> dict[str, Any]:
    """Spaces the member can access, with their role; limited to what the caller can see too."""
    access = await org_policy.load(ctx, org_id)
    if not policy.can_view_member(access, user_id, ctx.actor.user_id):
        require(False, "Guests cannot view other members")
    await _member(ctx, org_id, user_id)
    theirs = await ContentScope.load(ctx.conn, org_id, user_id)
    mine = await org_policy.content_scope(ctx, access)
    stmt = (
        space_repository.in_organization(org_id)
        .where(theirs.visible_spaces_clause())
        .where(mine.visible_spaces_clause())
    )
    page = await paginate(
        ctx.conn, stmt, keys=_SPACE_KEYS, params=params, descending=order == "desc"
    )
    return page.render(
        lambda row: {
            "permission": theirs.space_role(row),
            "space": present_space(row, mine.space_role(row), ctx.base_url),
        }
    )
