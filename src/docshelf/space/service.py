from __future__ import annotations

import secrets
from typing import Any

import sqlalchemy as sa

from docshelf.authz import grants
from docshelf.authz.content import ContentScope
from docshelf.authz.guard import not_found, require
from docshelf.collection import ordering
from docshelf.collection import policy as collection_policy
from docshelf.collection import service as collection_service
from docshelf.collection.schemas import MoveContent
from docshelf.events import event, outbox
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.merge_rules import service as merge_rules
from docshelf.models import spaces
from docshelf.organization import policy as org_policy
from docshelf.space import policy, repository, signals
from docshelf.space.policy import SpaceAccess
from docshelf.space.presenter import present_space
from docshelf.space.schemas import CreateSpace, TransferSpace, UpdateSpace
from docshelf.space.tasks import RETENTION, schedule_purge

DEFAULT_TITLE = "Untitled space"

_ORG_KEYS = (
    SortKey(sa.func.coalesce(spaces.c.parent_id, ""), "parent_key"),
    SortKey(spaces.c.position, "position"),
    SortKey(spaces.c.id, "id"),
)
_COLLECTION_KEYS = (SortKey(spaces.c.position, "position"), SortKey(spaces.c.id, "id"))


def _present(scope: ContentScope, base_url: str) -> Any:
    return lambda row: present_space(row, scope.space_role(row), base_url)


async def list_in_organization(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    scope = await org_policy.content_scope(ctx, await org_policy.load(ctx, org_id))
    visible, values = scope.visible_spaces()
    stmt = repository.visible_in(visible, in_collection=False)
    page = await paginate(
        ctx.conn, stmt, keys=_ORG_KEYS, params=params, values={"org_id": org_id, **values}
    )
    return page.render(_present(scope, ctx.base_url))


async def list_in_collection(ctx: Ctx, collection_id: str, params: PageParams) -> dict[str, Any]:
    access = await collection_policy.load(ctx, collection_id)
    visible, values = access.scope.visible_spaces()
    stmt = repository.visible_in(visible, in_collection=True)
    values.update(org_id=access.org_id, collection_id=collection_id)
    page = await paginate(ctx.conn, stmt, keys=_COLLECTION_KEYS, params=params, values=values)
    return page.render(_present(access.scope, ctx.base_url))


def _check_visibility(visibility: str, parent: str | None) -> None:
    if visibility == "in-collection" and parent is None:
        raise BadRequest(
            "Invalid body field 'visibility': 'in-collection' is only for spaces in a collection"
        )


async def create(ctx: Ctx, org_id: str, body: CreateSpace) -> dict[str, Any]:
    await org_policy.load(ctx, org_id)
    for name in ("template", "computedSource"):
        if getattr(body, name) is not None:
            raise BadRequest(
                f"Unsupported body field '{name}': Docshelf has no space templates or computed "
                "sources; create the space (it starts empty), then write or import its content"
            )
    await collection_service.require_container(ctx, org_id, body.parent)
    # Secure default: a space is private unless it lives in a collection, where it follows the
    # collection's access.
    visibility = body.visibility or ("in-collection" if body.parent else "private")
    _check_visibility(visibility, body.parent)
    now = utcnow()
    sid = new_id()
    revision_id = new_id()
    await repository.insert(
        ctx.conn,
        {
            "id": sid,
            "organization_id": org_id,
            "parent_id": body.parent,
            "title": (body.title or "").strip() or DEFAULT_TITLE,
            "emoji": body.emoji,
            "visibility": visibility,
            "edit_mode": body.editMode,
            "default_level": "inherit",
            "language": body.language,
            "share_key": secrets.token_urlsafe(24) if visibility == "share-link" else None,
            "revision_id": revision_id,
            "position": await ordering.next_position(ctx.conn, org_id, body.parent),
            "created_at": now,
            "updated_at": now,
        },
    )
    await signals.created.send(
        ctx.conn, signals.SpaceCreated(sid, revision_id, ctx.actor.user_id, now)
    )
    await _make_creator_admin(ctx, org_id, sid)
    data = {"parent": body.parent, "visibility": visibility}
    await outbox.emit(ctx, event.SPACE_CREATED, organization=org_id, space=sid, data=data)
    return await get(ctx, sid)


async def _make_creator_admin(ctx: Ctx, org_id: str, space_id: str) -> None:
    if not org_policy.is_admin(await org_policy.load(ctx, org_id)):
        await grants.make_creator_admin(
            ctx.conn,
            org_id=org_id,
            kind="space",
            target_id=space_id,
            user_id=ctx.actor.user_id,
            now=utcnow(),
        )


async def get(ctx: Ctx, space_id: str, share_key: str | None = None) -> dict[str, Any]:
    access = await policy.load(ctx, space_id, deleted=True, share_key=share_key, role_only=True)
    return present_space(access.row, access.role, ctx.base_url)


async def _admin(ctx: Ctx, space_id: str, *, deleted: bool = False) -> SpaceAccess:
    access = await policy.load(ctx, space_id, deleted=deleted)
    require(policy.can_admin(access.role), "Only admins of the space can do this")
    return access


async def update(ctx: Ctx, space_id: str, body: UpdateSpace) -> dict[str, Any]:
    access = await _admin(ctx, space_id)
    given = body.model_fields_set
    if body.emoji is not None and body.icon is not None:
        raise BadRequest("Invalid body: give 'emoji' or 'icon', not both")
    for name in ("title", "visibility", "mergeRules"):
        if name in given and getattr(body, name) is None:
            raise BadRequest(f"Invalid body field '{name}': must not be null")
    values: dict[str, Any] = {}
    if body.title is not None:
        if not body.title.strip():
            raise BadRequest("Invalid body field 'title': must not be blank")
        values["title"] = body.title.strip()
    if "emoji" in given:
        values["emoji"] = body.emoji
    if "icon" in given:
        values["icon"] = body.icon
    if "editMode" in given:
        values["edit_mode"] = body.editMode
    if "defaultLevel" in given:
        values["default_level"] = body.defaultLevel
    if "language" in given:
        values["language"] = body.language
    if body.mergeRules is not None:
        values["merge_rules"] = body.mergeRules.stored()
        await merge_rules.check_rule_users(ctx, access.org_id, values["merge_rules"])
    if body.visibility is not None:
        _check_visibility(body.visibility, access.row["parent_id"])
        values["visibility"] = body.visibility
        if body.visibility != "share-link":
            # A link handed out once must not come back to life when the space is shared again.
            values["share_key"] = None
        elif access.row["visibility"] != "share-link" or access.row["share_key"] is None:
            values["share_key"] = secrets.token_urlsafe(24)
    if values:
        values["updated_at"] = utcnow()
        await repository.update(ctx.conn, space_id, values)
    before = access.row["visibility"]
    if body.visibility is not None and body.visibility != before:
        # GitBook's SpaceVisibilityUpdatedEvent.
        data = {"previousVisibility": before, "visibility": body.visibility}
        await outbox.emit(
            ctx,
            event.SPACE_VISIBILITY_UPDATED,
            organization=access.org_id,
            space=space_id,
            data=data,
        )
    return await get(ctx, space_id)


async def delete(ctx: Ctx, space_id: str) -> None:
    access = await _admin(ctx, space_id)
    now = utcnow()
    await repository.update(ctx.conn, space_id, {"deleted_at": now, "updated_at": now})
    await signals.left.send(ctx.conn, signals.SpacesLeft([space_id]))
    await schedule_purge(ctx.conn, space_id, now)
    await outbox.emit(ctx, event.SPACE_DELETED, organization=access.org_id, space=space_id)


async def restore(ctx: Ctx, space_id: str) -> dict[str, Any]:
    access = await _admin(ctx, space_id, deleted=True)
    row = access.row
    if row["deleted_at"] is None:
        # Already active: restoring is idempotent.
        return present_space(row, access.role, ctx.base_url)
    if row["deleted_at"] + RETENTION <= utcnow():
        not_found("Space")
    values: dict[str, Any] = {"deleted_at": None, "updated_at": utcnow()}
    if row["parent_id"] is None and row["visibility"] == "in-collection":
        # Its collection is gone: at the root, "in-collection" has nothing to follow.
        values["visibility"] = "private"
    values["position"] = await ordering.next_position(ctx.conn, access.org_id, row["parent_id"])
    await repository.update(ctx.conn, space_id, values)
    await outbox.emit(ctx, event.SPACE_RESTORED, organization=access.org_id, space=space_id)
    return await get(ctx, space_id)


async def duplicate(ctx: Ctx, space_id: str) -> dict[str, Any]:
    access = await policy.load(ctx, space_id)
    row = access.row
    await collection_service.require_container(ctx, access.org_id, row["parent_id"])
    now = utcnow()
    copy_id = new_id()
    values = {c.name: row[c.name] for c in spaces.c}
    values.update(
        id=copy_id,
        title=_copy_title(row["title"]),
        share_key=secrets.token_urlsafe(24) if row["share_key"] else None,
        change_request_seq=0,
        change_requests_total=0,
        change_requests_open=0,
        change_requests_draft=0,
        # Comments stay with the original.
        comments_open=0,
        created_at=now,
        updated_at=now,
        deleted_at=None,
    )
    await repository.insert(ctx.conn, values)
    revision_id = new_id()
    await signals.duplicated.send(
        ctx.conn,
        signals.SpaceDuplicated(space_id, copy_id, revision_id, ctx.actor.user_id, now),
    )
    await repository.update(ctx.conn, copy_id, {"revision_id": revision_id})
    current = await ordering.positions(ctx.conn, access.org_id, row["parent_id"])
    order = ordering.place(
        list(current), ("space", copy_id), before=None, after=("space", space_id)
    )
    await ordering.write_order(ctx.conn, order, ("space", copy_id), current)
    await repository.copy_ties(ctx.conn, space_id, copy_id, now)
    await _make_creator_admin(ctx, access.org_id, copy_id)
    data = {"parent": row["parent_id"], "visibility": row["visibility"], "duplicateOf": space_id}
    await outbox.emit(
        ctx, event.SPACE_CREATED, organization=access.org_id, space=copy_id, data=data
    )
    return await get(ctx, copy_id)


def _copy_title(title: str) -> str:
    suffix = " (copy)"
    return title[: 50 - len(suffix)] + suffix


async def move(ctx: Ctx, space_id: str, body: MoveContent) -> dict[str, Any]:
    access = await _admin(ctx, space_id)
    parent = await collection_service.move_item(
        ctx, access.org_id, ("space", space_id), access.row["parent_id"], body, access.scope
    )
    if parent is None and access.row["visibility"] == "in-collection":
        await repository.update(ctx.conn, space_id, {"visibility": "private"})
    data = {"parent": parent, "previousParent": access.row["parent_id"]}
    await outbox.emit(ctx, event.SPACE_MOVED, organization=access.org_id, space=space_id, data=data)
    return await get(ctx, space_id)


async def transfer(ctx: Ctx, space_id: str, body: TransferSpace) -> dict[str, Any]:
    access = await _admin(ctx, space_id)
    moving = body.organization != access.org_id
    if moving:
        require(
            org_policy.is_admin(await org_policy.load(ctx, access.org_id)),
            "Only organization admins can transfer spaces",
        )
        await collection_service.require_admin_of(ctx, body.organization)
        await collection_service.detach_from_organization(ctx, [space_id], [])
        await signals.left.send(ctx.conn, signals.SpacesLeft([space_id]))
    elif body.parent == access.row["parent_id"]:
        raise BadRequest("Invalid body: the space is already there")
    await collection_service.require_container(ctx, body.organization, body.parent)
    visibility = access.row["visibility"]
    if body.parent is None and visibility == "in-collection":
        visibility = "private"
    await repository.update(
        ctx.conn,
        space_id,
        {
            "organization_id": body.organization,
            "parent_id": body.parent,
            "visibility": visibility,
            "position": await ordering.next_position(ctx.conn, body.organization, body.parent),
            "updated_at": utcnow(),
        },
    )
    data = {
        "organization": body.organization,
        "previousOrganization": access.org_id,
        "parent": body.parent,
        "previousParent": access.row["parent_id"],
    }
    # Told to both organizations when it leaves one for the other.
    for org in dict.fromkeys((access.org_id, body.organization)):
        await outbox.emit(ctx, event.SPACE_MOVED, organization=org, space=space_id, data=data)
    return await get(ctx, space_id)
