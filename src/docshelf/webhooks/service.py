from __future__ import annotations

import base64
import secrets
from typing import Any

from docshelf.authz.guard import not_found, require
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import webhook_deliveries, webhooks
from docshelf.organization import policy as org_policy
from docshelf.webhooks import delivery, policy, repository
from docshelf.webhooks.presenter import present_delivery, present_webhook
from docshelf.webhooks.schemas import CreateWebhook, UpdateWebhook

_KEYS = (SortKey(webhooks.c.created_at, "created_at"), SortKey(webhooks.c.id, "id"))
_DELIVERY_KEYS = (
    SortKey(webhook_deliveries.c.created_at, "created_at"),
    SortKey(webhook_deliveries.c.id, "id"),
)
_ADMINS_ONLY = "Only organization admins can manage webhooks"


def new_secret() -> str:
    """Standard Webhooks' form: `whsec_` and base64 of random bytes (24, as Svix makes)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


async def _managed(ctx: Ctx, org_id: str) -> None:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_manage(access), _ADMINS_ONLY)


async def _webhook(ctx: Ctx, org_id: str, webhook_id: str) -> Any:
    await _managed(ctx, org_id)
    row = await repository.get(ctx.conn, org_id, webhook_id)
    if row is None:
        not_found("Webhook")
    return row


async def create(ctx: Ctx, org_id: str, body: CreateWebhook) -> dict[str, Any]:
    await _managed(ctx, org_id)
    if body.space is not None and not await repository.space_in_organization(
        ctx.conn, org_id, body.space
    ):
        raise BadRequest(f"Invalid body: 'space' {body.space!r} is no space of the organization")
    webhook_id = new_id()
    secret = new_secret()
    now = utcnow()
    await repository.insert(
        ctx.conn,
        id=webhook_id,
        organization_id=org_id,
        space_id=body.space,
        url=body.url,
        events=body.events or [],
        active=True,
        secret=secret,
        failures=0,
        created_by=ctx.actor.user_id,
        created_at=now,
        updated_at=now,
    )
    row = await repository.get(ctx.conn, org_id, webhook_id)
    assert row is not None
    return present_webhook(row, secret=secret)


async def list_webhooks(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    await _managed(ctx, org_id)
    page = await paginate(ctx.conn, repository.in_organization(org_id), keys=_KEYS, params=params)
    return page.render(present_webhook)


async def get(ctx: Ctx, org_id: str, webhook_id: str) -> dict[str, Any]:
    return present_webhook(await _webhook(ctx, org_id, webhook_id))


async def update(ctx: Ctx, org_id: str, webhook_id: str, body: UpdateWebhook) -> dict[str, Any]:
    await _webhook(ctx, org_id, webhook_id)
    for name in body.model_fields_set:
        if getattr(body, name) is None:
            raise BadRequest(f"Invalid body field '{name}': must not be null")
    values: dict[str, Any] = {"updated_at": utcnow()}
    if body.url is not None:
        values["url"] = body.url
    if body.events is not None:
        values["events"] = body.events
    if body.active is not None:
        values["active"] = body.active
        if body.active:
            # Re-enabled by its owner: its run of failures starts again.
            values.update(failures=0, disabled_at=None)
    await repository.update(ctx.conn, webhook_id, values)
    return await get(ctx, org_id, webhook_id)


async def delete(ctx: Ctx, org_id: str, webhook_id: str) -> None:
    await _webhook(ctx, org_id, webhook_id)
    await repository.delete(ctx.conn, webhook_id)


async def rotate_secret(ctx: Ctx, org_id: str, webhook_id: str) -> dict[str, Any]:
    await _webhook(ctx, org_id, webhook_id)
    secret = new_secret()
    await repository.update(ctx.conn, webhook_id, {"secret": secret, "updated_at": utcnow()})
    row = await repository.get(ctx.conn, org_id, webhook_id)
    assert row is not None
    return present_webhook(row, secret=secret)


async def list_deliveries(
    ctx: Ctx, org_id: str, webhook_id: str, params: PageParams
) -> dict[str, Any]:
    await _webhook(ctx, org_id, webhook_id)
    page = await paginate(
        ctx.conn,
        repository.deliveries_of(webhook_id),
        keys=_DELIVERY_KEYS,
        params=params,
        descending=True,
    )
    return page.render(present_delivery)


async def redeliver(ctx: Ctx, org_id: str, webhook_id: str, delivery_id: str) -> dict[str, Any]:
    hook = await _webhook(ctx, org_id, webhook_id)
    row = await repository.get_delivery(ctx.conn, webhook_id, delivery_id)
    if row is None:
        not_found("Delivery")
    if not hook["active"]:
        raise BadRequest("The webhook is disabled: set 'active' to true first")
    await delivery.send_again(ctx.conn, org_id, delivery_id)
    again = await repository.get_delivery(ctx.conn, webhook_id, delivery_id)
    assert again is not None
    return present_delivery(again)
