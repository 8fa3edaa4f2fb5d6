from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.authz.guard import not_found, require
from docshelf.change_request import policy, repository
from docshelf.change_request.presenter import present_change_request
from docshelf.change_request.schemas import (
    CreateChangeRequest,
    LinkInput,
    Status,
    UpdateChangeRequest,
)
from docshelf.document.model import document_to_markdown
from docshelf.events import event, outbox
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict, SpaceLocked
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import change_requests
from docshelf.space import policy as space_policy
from docshelf.space import repository as space_repository
from docshelf.space.policy import SpaceAccess

_KEYS = (SortKey(change_requests.c.updated_at, "updated_at"), SortKey(change_requests.c.id, "id"))


def _require_edit(space: SpaceAccess, refusal: str) -> None:
    """Editors may write, unless the space is locked: then nobody may."""
    if space.row["edit_mode"] == "locked" and space_policy.can_view(space.role):
        raise SpaceLocked()
    require(policy.can_edit(space.role, space.row["edit_mode"]), refusal)


async def _get(ctx: Ctx, space_id: str, ref: str) -> sa.RowMapping:
    row = await repository.get(ctx.conn, space_id, ref)
    if row is None:
        not_found("Change request")
    return row


async def list_change_requests(
    ctx: Ctx,
    space_id: str,
    params: PageParams,
    *,
    status: Status,
    contributor: str | None,
    requested_reviewer: str | None = None,
) -> dict[str, Any]:
    await space_policy.load(ctx, space_id)
    stmt, values = repository.listing(
        space_id, status, contributor=contributor, requested_reviewer=requested_reviewer
    )
    # Most recently updated first, as GitBook lists them.
    page = await paginate(ctx.conn, stmt, keys=_KEYS, params=params, descending=True, values=values)
    return page.render(lambda row: present_change_request(row, ctx.base_url))


async def create(ctx: Ctx, space_id: str, body: CreateChangeRequest) -> dict[str, Any]:
    space = await space_policy.load(ctx, space_id)
    _require_edit(space, "You cannot edit this space")
    if body.template is not None:
        raise BadRequest(
            "Unsupported body field 'template': Docshelf has no templates; "
            "create the change request, then write its content"
        )
    now = utcnow()
    cr_id = new_id()
    extra: dict[str, Any] = {}
    if body.description is not None:
        extra["description"] = _description(body.description)
    if body.links is not None:
        extra["links"] = _links(body.links, [])
    head = space.row["revision_id"]
    await repository.insert(
        ctx.conn,
        {
            "id": cr_id,
            "space_id": space_id,
            "number": await repository.next_number(ctx.conn, space_id),
            # Open at once: the list's default filter shows what an API client just created.
            "status": "open",
            "subject": (body.subject or "").strip(),
            "created_by": ctx.actor.user_id,
            "created_at": now,
            "updated_at": now,
            "revision_id": head,
            "revision_initial": head,
            **extra,
        },
    )
    row = await _get(ctx, space_id, cr_id)
    await outbox.emit(
        ctx,
        event.CHANGE_REQUEST_CREATED,
        space=space_id,
        data={"changeRequestId": cr_id, "number": row["number"], "subject": row["subject"]},
    )
    return present_change_request(row, ctx.base_url)


async def get(ctx: Ctx, space_id: str, ref: str) -> dict[str, Any]:
    await space_policy.load(ctx, space_id)
    return present_change_request(await _get(ctx, space_id, ref), ctx.base_url)


async def update(ctx: Ctx, space_id: str, ref: str, body: UpdateChangeRequest) -> dict[str, Any]:
    space = await space_policy.load(ctx, space_id)
    row = await _get(ctx, space_id, ref)
    _require_edit(space, "You cannot edit this change request")
    given = body.model_fields_set
    for name in ("subject", "status", "description", "links"):
        if name in given and getattr(body, name) is None:
            raise BadRequest(f"Invalid body field '{name}': must not be null")
    if given:
        # Space row, then change request row: the order merges take, so the two never deadlock,
        # and the status is judged as it is once no merge can move it any more.
        await space_repository.lock_head(ctx.conn, space_id)
        row = await repository.lock(ctx.conn, row["id"])
    if row["status"] == "merged" and given:
        raise Conflict("A merged change request cannot change")
    values: dict[str, Any] = {}
    if body.subject is not None:
        values["subject"] = body.subject.strip()
    if body.status is not None:
        values["status"] = body.status
    if body.description is not None:
        values["description"] = _description(body.description)
    if body.links is not None:
        values["links"] = _links(body.links, row["links"] or [])
    if values:
        values["updated_at"] = utcnow()
        await repository.update(ctx.conn, row["id"], values)
        if body.status is not None:
            await repository.count_status_change(ctx.conn, space_id, row["status"], body.status)
        await _changed(ctx, space_id, row, values)
    return present_change_request(await _get(ctx, space_id, row["id"]), ctx.base_url)


async def _changed(ctx: Ctx, space_id: str, row: sa.RowMapping, values: dict[str, Any]) -> None:
    ids = {"changeRequestId": row["id"], "number": row["number"]}
    status = values.get("status")
    if status is not None and status != row["status"]:
        data = {**ids, "status": status, "previousStatus": row["status"]}
        await outbox.emit(ctx, event.CHANGE_REQUEST_STATUS_UPDATED, space=space_id, data=data)
    fields = sorted(k for k in values if k not in ("status", "updated_at"))
    if fields:
        data = {**ids, "fields": fields}
        await outbox.emit(ctx, event.CHANGE_REQUEST_UPDATED, space=space_id, data=data)


def _links(given: list[LinkInput], served: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The change request's links as given: a link with an `id` updates the served link of that
    id (400 if there is none), one without is new. GitBook replaces the list with what it is
    sent, so links not named again are dropped."""
    known = {link["id"] for link in served}
    out: list[dict[str, Any]] = []
    for n, link in enumerate(given):
        if link.id is not None and link.id not in known:
            raise BadRequest(
                f"Invalid body field 'links[{n}].id': no such link on this change request"
            )
        item: dict[str, Any] = {
            "id": link.id or new_id(),
            "ref": {"kind": "url", "url": link.ref.url},
        }
        if link.title is not None:
            item["title"] = link.title
        out.append(item)
    return out


def _description(doc: dict[str, Any]) -> str:
    try:
        return document_to_markdown(doc)
    except BadRequest as exc:
        raise BadRequest(f"Invalid body field 'description': {exc.message}") from exc
