"""Grants on spaces and collections: invite users and teams with a role, list, change, remove,
and the aggregate of who can access a piece of content."""

from __future__ import annotations

from typing import Any, Literal

from docshelf.authz import grants
from docshelf.authz.content import ContentScope
from docshelf.authz.guard import not_found, require
from docshelf.authz.roles import ROLES, rank
from docshelf.collection import policy as collection_policy
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import content_grants, members
from docshelf.organization import policy as org_policy
from docshelf.permission import repository
from docshelf.permission.schemas import InviteUsersAndTeams, UpdatePermission
from docshelf.space import policy as space_policy
from docshelf.team.presenter import present_team
from docshelf.user.presenter import present_user

Kind = Literal["space", "collection"]
_KEYS = (SortKey(content_grants.c.principal_id, "principal_id"),)
_AGGREGATE_KEYS = (SortKey(members.c.user_id, "user_id"),)


async def _target(ctx: Ctx, kind: Kind, target_id: str) -> tuple[str, ContentScope, Any]:
    """(organization id, caller's scope, target row) once the caller may administer it."""
    if kind == "space":
        space = await space_policy.load(ctx, target_id)
        require(
            space_policy.can_admin(space.role),
            "Only admins of the space can manage its permissions",
        )
        return space.org_id, space.scope, space.row
    collection = await collection_policy.load(ctx, target_id)
    require(
        collection_policy.can_admin(collection.role),
        "Only admins of the collection can manage its permissions",
    )
    return collection.org_id, collection.scope, collection.row


async def invite(ctx: Ctx, kind: Kind, target_id: str, body: InviteUsersAndTeams) -> None:
    org_id, _, _ = await _target(ctx, kind, target_id)
    users = list(dict.fromkeys(body.users or []))
    teams = list(dict.fromkeys(body.teams or []))
    unknown_users = set(users) - await repository.org_member_ids(ctx.conn, org_id, users)
    if unknown_users:
        names = ", ".join(sorted(unknown_users))
        raise BadRequest(f"Invalid body field 'users': not members of the organization: {names}")
    unknown_teams = set(teams) - await repository.org_team_ids(ctx.conn, org_id, teams)
    if unknown_teams:
        raise BadRequest(
            f"Invalid body field 'teams': no such teams: {', '.join(sorted(unknown_teams))}"
        )
    principals = [("user", u) for u in users] + [("team", t) for t in teams]
    if body.role is None:
        await repository.remove(ctx.conn, kind, target_id, principals)
        return
    now = utcnow()
    for principal in principals:
        await grants.upsert(
            ctx.conn,
            org_id=org_id,
            kind=kind,
            target_id=target_id,
            principal=principal,
            role=body.role,
            now=now,
        )


async def list_users(ctx: Ctx, kind: Kind, target_id: str, params: PageParams) -> dict[str, Any]:
    await _target(ctx, kind, target_id)
    page = await paginate(
        ctx.conn, repository.user_grants(kind, target_id), keys=_KEYS, params=params
    )
    return page.render(
        lambda row: {"permission": row["role"], "user": present_user(row, ctx.base_url)}
    )


async def list_teams(ctx: Ctx, kind: Kind, target_id: str, params: PageParams) -> dict[str, Any]:
    org_id, _, _ = await _target(ctx, kind, target_id)
    access = await org_policy.load(ctx, org_id)
    page = await paginate(
        ctx.conn,
        repository.team_grants(kind, target_id, ctx.actor.user_id),
        keys=_KEYS,
        params=params,
    )
    return page.render(lambda row: {"permission": row["role"], "team": present_team(row, access)})


async def update(
    ctx: Ctx, kind: Kind, target_id: str, principal: tuple[str, str], body: UpdatePermission
) -> None:
    await _target(ctx, kind, target_id)
    if body.role is None:
        if not await repository.remove(ctx.conn, kind, target_id, [principal]):
            not_found("Permission")
        return
    if not await repository.set_role(ctx.conn, kind, target_id, principal, body.role):
        not_found("Permission")


async def remove(ctx: Ctx, kind: Kind, target_id: str, principal: tuple[str, str]) -> None:
    await _target(ctx, kind, target_id)
    if not await repository.remove(ctx.conn, kind, target_id, [principal]):
        not_found("Permission")


async def aggregate(
    ctx: Ctx, kind: Kind, target_id: str, params: PageParams, role: str | None
) -> dict[str, Any]:
    """Every member who can access the content, with their effective role, resolved by the same
    rules that guard access: what each organization role gives there is resolved here, once per
    role; grants on the content's chain are compared in SQL, so a page costs one page."""
    org_id, scope, row = await _target(ctx, kind, target_id)
    parent = row["parent_id"] if kind == "space" else target_id
    chain = [("collection", c) for c in scope.ancestors(parent)] if parent else []
    if kind == "space":
        chain.append(("space", target_id))
    inherited: dict[str | None, int] = {}
    for org_role in (None, *ROLES):
        other = ContentScope(
            org_id=org_id, user_id="", is_member=True, org_role=org_role, tree=scope.tree
        )
        got = other.space_role(row) if kind == "space" else other.collection_role(target_id)
        inherited[org_role] = rank(got)
    stmt, values = repository.aggregate(
        org_id, chain, inherited, None if role is None else rank(role)
    )
    page = await paginate(ctx.conn, stmt, keys=_AGGREGATE_KEYS, params=params, values=values)
    by_rank = {rank(r): r for r in ROLES}
    return page.render(
        lambda m: {"permission": by_rank[m["rank"]], "user": present_user(m, ctx.base_url)}
    )
