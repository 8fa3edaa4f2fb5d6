from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.auth.service import require_unscoped
from docshelf.authz import grants
from docshelf.authz.content import ContentScope
from docshelf.authz.guard import not_found, require
from docshelf.authz.roles import highest, rank
from docshelf.collection import policy as collection_policy
from docshelf.collection import repository as collection_repository
from docshelf.collection.presenter import present_collection
from docshelf.events import event, outbox
from docshelf.invite import policy, repository
from docshelf.invite.presenter import present_invite
from docshelf.invite.schemas import CreateInvite, UpdateInvite
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Forbidden, NotFound
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.member import repository as member_repository
from docshelf.member.presenter import present_member
from docshelf.models import invites
from docshelf.organization import policy as org_policy
from docshelf.organization import repository as org_repository
from docshelf.organization.policy import OrgAccess
from docshelf.permission import repository as permission_repository
from docshelf.space import policy as space_policy
from docshelf.space import repository as space_repository
from docshelf.space.presenter import present_space

_KEYS = (SortKey(invites.c.created_at, "created_at"), SortKey(invites.c.id, "id"))


async def _present_many(
    ctx: Ctx, scope: ContentScope, rows: list[sa.RowMapping]
) -> list[dict[str, Any]]:
    """Content invites carry their space or collection, loaded in one query per kind."""
    space_ids = {r["space_id"] for r in rows if r["space_id"]}
    collection_ids = {r["collection_id"] for r in rows if r["collection_id"]}
    space_rows = await space_repository.by_ids(ctx.conn, space_ids)
    collection_rows = await collection_repository.by_ids(ctx.conn, collection_ids)
    out = []
    for r in rows:
        if r["space_id"]:
            s = space_rows.get(r["space_id"])
            if s is None:  # deleted since the page was read
                continue
            out.append(present_invite(r, space=present_space(s, scope.space_role(s), ctx.base_url)))
        elif r["collection_id"]:
            c = collection_rows.get(r["collection_id"])
            if c is None:
                continue
            collection = present_collection(c, scope.collection_role(c["id"]), ctx.base_url)
            out.append(present_invite(r, collection=collection))
        else:
            out.append(present_invite(r))
    return out


async def _can_manage(ctx: Ctx, access: OrgAccess, row: sa.RowMapping) -> bool:
    """Organization admins manage every invite; content admins the invites to their content."""
    if policy.can_manage_links(access):
        return True
    try:
        if row["space_id"]:
            return space_policy.can_admin((await space_policy.load(ctx, row["space_id"])).role)
        if row["collection_id"]:
            return collection_policy.can_admin(
                (await collection_policy.load(ctx, row["collection_id"])).role
            )
    except NotFound:
        return False
    return False


async def _managed_invite(ctx: Ctx, org_id: str, invite_id: str) -> tuple[OrgAccess, sa.RowMapping]:
    """The invite and the organization as the caller sees it (read once: the caller's role
    decides both who manages the invite and how its content is presented)."""
    access = await org_policy.load(ctx, org_id)
    row = await repository.get(ctx.conn, org_id, invite_id)
    if row is None:
        not_found("Invite")
    require(await _can_manage(ctx, access, row), "Only admins can manage this invite link")
    return access, row


async def list_invites(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    """The organization's own invite links (every GitBook version types this list as
    organization invites, with a `role`), for organization admins."""
    access = await org_policy.load(ctx, org_id)
    require(policy.can_view_links(access), "You cannot view this organization's invite links")
    stmt = repository.in_organization(org_id).where(
        invites.c.space_id.is_(None), invites.c.collection_id.is_(None)
    )
    scope = await org_policy.content_scope(ctx, access)
    page = await paginate(ctx.conn, stmt, keys=_KEYS, params=params)
    return page.with_items(await _present_many(ctx, scope, list(page.rows)))


async def list_content_invites(
    ctx: Ctx, org_id: str, params: PageParams, space: str | None, collection: str | None
) -> dict[str, Any]:
    """Invite links to spaces and collections (GitBook 0.91's content-link-invites): every one
    for organization admins, the links to content they administer for others (what
    `viewInviteLinks` on a space or collection promises); `space`/`collection` narrow it."""
    access = await org_policy.load(ctx, org_id)
    scope = await org_policy.content_scope(ctx, access)
    administered = None
    if not policy.can_view_links(access):
        administered = (scope.administered_spaces_clause(), scope.administered_collections())
    stmt = repository.content_links(
        org_id, space=space, collection=collection, administered=administered
    )
    page = await paginate(ctx.conn, stmt, keys=_KEYS, params=params)
    return page.with_items(await _present_many(ctx, scope, list(page.rows)))


async def create_invite(ctx: Ctx, org_id: str, body: CreateInvite) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    values: dict[str, Any] = {
        "id": new_id(),
        "organization_id": org_id,
        "created_by": ctx.actor.user_id,
        "created_at": utcnow(),
    }
    if body.space is not None:
        space = await _target(ctx, "space", body.space, org_id)
        require(
            space_policy.can_admin(space.role),
            "Only admins of the space can create invite links to it",
        )
        values.update(space_id=body.space, role=body.level)
    elif body.collection is not None:
        collection = await _target(ctx, "collection", body.collection, org_id)
        require(
            collection_policy.can_admin(collection.role),
            "Only admins of the collection can create invite links to it",
        )
        values.update(collection_id=body.collection, role=body.level)
    else:
        require(policy.can_manage_links(access), "Only organization admins can create invite links")
        values["role"] = body.role
    await repository.insert(ctx.conn, values)
    return await _presented(ctx, access, await _written(ctx, org_id, values["id"]))


async def _target(ctx: Ctx, kind: str, target_id: str, org_id: str) -> Any:
    try:
        if kind == "space":
            target: Any = await space_policy.load(ctx, target_id)
        else:
            target = await collection_policy.load(ctx, target_id)
    except NotFound as exc:
        raise BadRequest(f"Invalid body field '{kind}': {kind} '{target_id}' not found") from exc
    if target.org_id != org_id:
        raise BadRequest(f"Invalid body field '{kind}': {kind} '{target_id}' not found")
    return target


async def get_invite(ctx: Ctx, org_id: str, invite_id: str) -> dict[str, Any]:
    access, row = await _managed_invite(ctx, org_id, invite_id)
    return await _presented(ctx, access, row)


async def _written(ctx: Ctx, org_id: str, invite_id: str) -> sa.RowMapping:
    """The invite as this unit of work just wrote it, read back for what the query works out
    (whether it is redundant; an invite to a space deleted meanwhile is not found)."""
    row = await repository.get(ctx.conn, org_id, invite_id)
    if row is None:
        not_found("Invite")
    return row


async def _presented(ctx: Ctx, access: OrgAccess, row: sa.RowMapping) -> dict[str, Any]:
    scope = await org_policy.content_scope(ctx, access)
    (presented,) = await _present_many(ctx, scope, [row])
    return presented


async def update_invite(
    ctx: Ctx, org_id: str, invite_id: str, body: UpdateInvite
) -> dict[str, Any]:
    access, row = await _managed_invite(ctx, org_id, invite_id)
    if (row["space_id"] or row["collection_id"]) and body.new_role is None:
        raise BadRequest("Invalid body field 'level': an invite to content needs a level")
    await repository.update_role(ctx.conn, invite_id, body.new_role)
    return await _presented(ctx, access, await _written(ctx, org_id, invite_id))


async def delete_invite(ctx: Ctx, org_id: str, invite_id: str) -> None:
    await _managed_invite(ctx, org_id, invite_id)
    await repository.delete(ctx.conn, invite_id)


async def join(ctx: Ctx, org_id: str, invite_id: str) -> dict[str, Any]:
    """Anyone holding the invite id may join with its role; a member keeps a higher role. An
    invite to content makes a newcomer a guest of the organization with the level on that
    content."""
    invite = await repository.get_any(ctx.conn, org_id, invite_id)
    if invite is None:
        not_found("Invite")
    require_unscoped(ctx.actor, org_id)
    org = await org_repository.get(ctx.conn, org_id)
    assert org is not None
    if not org["invite_links"]:
        raise Forbidden("Invite links are disabled for this organization")
    user_id = ctx.actor.user_id
    now = utcnow()
    current = await member_repository.get(ctx.conn, org_id, user_id)
    target = ("space", invite["space_id"]) if invite["space_id"] else None
    if invite["collection_id"]:
        target = ("collection", invite["collection_id"])
    org_role = None if target else invite["role"]
    if current is None:
        await member_repository.insert(
            ctx.conn, org_id=org_id, user_id=user_id, role=org_role, now=now
        )
        data = {"userId": user_id, "role": org_role, "inviteId": invite_id}
        await outbox.emit(ctx, event.MEMBER_JOINED, organization=org_id, data=data)
    elif target is None and rank(invite["role"]) > rank(current["role"]):
        await member_repository.update(ctx.conn, org_id, user_id, {"role": invite["role"]})
    if target is not None:
        existing = await permission_repository.user_grant(ctx.conn, target[0], target[1], user_id)
        await grants.upsert(
            ctx.conn,
            org_id=org_id,
            kind=target[0],
            target_id=target[1],
            principal=("user", user_id),
            role=highest([existing, invite["role"]]) or invite["role"],
            now=now,
        )
    row = await member_repository.get(ctx.conn, org_id, user_id)
    assert row is not None
    return present_member(row, ctx.base_url)
