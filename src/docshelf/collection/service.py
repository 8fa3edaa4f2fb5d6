from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.authz import grants
from docshelf.authz.content import ContentScope, ancestors_of, descendants_of
from docshelf.authz.guard import require
from docshelf.collection import ordering, policy, repository, signals
from docshelf.collection.policy import CollectionAccess
from docshelf.collection.presenter import present_collection
from docshelf.collection.schemas import (
    CreateCollection,
    MoveContent,
    TransferContent,
    UpdateCollection,
)
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Forbidden, NotFound
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import collections
from docshelf.organization import policy as org_policy

_KEYS = (
    SortKey(sa.func.coalesce(collections.c.parent_id, ""), "parent_key"),
    SortKey(collections.c.position, "position"),
    SortKey(collections.c.id, "id"),
)
DEFAULT_TITLE = "Untitled collection"


async def list_collections(
    ctx: Ctx, org_id: str, params: PageParams, *, nested: bool
) -> dict[str, Any]:
    scope = await org_policy.content_scope(ctx, await org_policy.load(ctx, org_id))
    visible, values = scope.visible_collections()
    stmt = repository.visible_in(visible, nested=nested)
    page = await paginate(
        ctx.conn,
        stmt,
        keys=_KEYS,
        params=params,
        # `nested` is no parameter of the statement, but part of what a cursor continues.
        values={"org_id": org_id, "nested": nested, **values},
    )
    return page.render(
        lambda row: present_collection(row, scope.collection_role(row["id"]), ctx.base_url)
    )


async def require_container(ctx: Ctx, org_id: str, parent_id: str | None) -> None:
    """The caller may create content at the organization root or in this collection."""
    if parent_id is None:
        access = await org_policy.load(ctx, org_id)
        require(
            org_policy.can_create_content(access), "You cannot create content in this organization"
        )
        return
    row = await repository.get(ctx.conn, parent_id)
    scope = await ContentScope.near(ctx.conn, org_id, ctx.actor.user_id, parent_id)
    if (
        row is None
        or row["organization_id"] != org_id
        or not policy.can_view(scope.collection_role(parent_id))
    ):
        raise BadRequest(f"Invalid body field 'parent': collection '{parent_id}' not found")
    require(
        policy.can_create_in(scope.collection_role(parent_id)),
        "You cannot create content in this collection",
    )


async def create(ctx: Ctx, org_id: str, body: CreateCollection) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    await require_container(ctx, org_id, body.parent)
    now = utcnow()
    cid = new_id()
    await repository.insert(
        ctx.conn,
        {
            "id": cid,
            "organization_id": org_id,
            "parent_id": body.parent,
            "title": (body.title or "").strip() or DEFAULT_TITLE,
            "default_level": "inherit",
            "position": await ordering.next_position(ctx.conn, org_id, body.parent),
            "created_at": now,
            "updated_at": now,
        },
    )
    if not org_policy.is_admin(access):
        await grants.make_creator_admin(
            ctx.conn,
            org_id=org_id,
            kind="collection",
            target_id=cid,
            user_id=ctx.actor.user_id,
            now=now,
        )
    return await get(ctx, cid)


async def get(ctx: Ctx, collection_id: str) -> dict[str, Any]:
    access = await policy.load(ctx, collection_id)
    return present_collection(access.row, access.role, ctx.base_url)


async def _admin(ctx: Ctx, collection_id: str) -> CollectionAccess:
    access = await policy.load(ctx, collection_id)
    require(policy.can_admin(access.role), "Only admins of the collection can do this")
    return access


async def update(ctx: Ctx, collection_id: str, body: UpdateCollection) -> dict[str, Any]:
    await _admin(ctx, collection_id)
    given = body.model_fields_set
    if "title" in given and body.title is None:
        raise BadRequest("Invalid body field 'title': must not be null")
    values: dict[str, Any] = {}
    if body.title is not None:
        values["title"] = body.title
    if "description" in given:
        values["description"] = body.description
    if "defaultLevel" in given:
        values["default_level"] = body.defaultLevel
    if values:
        values["updated_at"] = utcnow()
        await repository.update(ctx.conn, collection_id, values)
    return await get(ctx, collection_id)


async def delete(ctx: Ctx, collection_id: str) -> None:
    await _admin(ctx, collection_id)
    ids = await descendants_of(ctx.conn, collection_id)
    now = utcnow()
    space_ids = await repository.spaces_in(ctx.conn, ids, live=True)
    await repository.delete_tree(ctx.conn, ids, now)
    await signals.spaces_deleted.send(ctx.conn, signals.SpacesDeleted(space_ids, now))


async def move_item(
    ctx: Ctx,
    org_id: str,
    item: ordering.Item,
    current_parent: str | None,
    body: MoveContent,
    scope: ContentScope,
) -> str | None:
    """Shared by collection and space moves; returns the new parent."""
    target = body.parent if "parent" in body.model_fields_set else current_parent
    if target is not None:
        if item[0] == "collection" and item[1] in await ancestors_of(ctx.conn, org_id, target):
            raise BadRequest(
                "Invalid body field 'parent': a collection cannot move into itself or a descendant"
            )
        await require_container(ctx, org_id, target)
    elif target != current_parent:
        await require_container(ctx, org_id, None)
    before, after = body.position.anchors() if body.position else (None, None)
    await ordering.lock_parent(ctx.conn, org_id, target)
    current = await ordering.positions(ctx.conn, org_id, target)
    order = ordering.place(list(current), item, before=before, after=after)
    await ordering.set_parent(ctx.conn, item, target, utcnow())
    await ordering.write_order(ctx.conn, order, item, current)
    return target


async def move(ctx: Ctx, collection_id: str, body: MoveContent) -> dict[str, Any]:
    access = await _admin(ctx, collection_id)
    await move_item(
        ctx,
        access.org_id,
        ("collection", collection_id),
        access.row["parent_id"],
        body,
        access.scope,
    )
    return await get(ctx, collection_id)


async def require_admin_of(ctx: Ctx, org_id: str) -> None:
    """Transfers need admin of the target organization; others see it as missing."""
    try:
        target = await org_policy.load(ctx, org_id)
    except NotFound as exc:
        raise BadRequest(
            f"Invalid body field 'organization': organization '{org_id}' not found"
        ) from exc
    if not org_policy.is_admin(target):
        raise Forbidden("You must be an admin of the target organization")


async def detach_from_organization(
    ctx: Ctx, space_ids: list[str], collection_ids: list[str]
) -> None:
    """What belongs to the old organization does not follow content to a new one: grants to
    its users and teams, invites, and values of its custom fields."""
    await repository.drop_organization_ties(ctx.conn, space_ids, collection_ids)


async def transfer(ctx: Ctx, collection_id: str, body: TransferContent) -> dict[str, Any]:
    access = await _admin(ctx, collection_id)
    require(
        org_policy.is_admin(await org_policy.load(ctx, access.org_id)),
        "Only organization admins can transfer",
    )
    if body.organization == access.org_id:
        raise BadRequest(
            "Invalid body field 'organization': the collection is already in this organization"
        )
    await require_admin_of(ctx, body.organization)
    ids = await descendants_of(ctx.conn, collection_id)
    space_ids = await repository.spaces_in(ctx.conn, ids, live=False)
    await detach_from_organization(ctx, space_ids, ids)
    await signals.spaces_transferred.send(ctx.conn, space_ids)
    now = utcnow()
    await repository.move_to_organization(ctx.conn, ids, space_ids, body.organization, now)
    position = await ordering.next_position(ctx.conn, body.organization, None)
    await repository.update(ctx.conn, collection_id, {"parent_id": None, "position": position})
    return await get(ctx, collection_id)
