"""Webhooks: a Docshelf extension (GitBook sends its events to integrations instead)."""

from __future__ import annotations

from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.webhooks import service
from docshelf.webhooks.schemas import (
    CreateWebhook,
    DeliveryList,
    DeliveryOut,
    UpdateWebhook,
    WebhookList,
    WebhookOut,
)

router = domain_router(tags=["webhooks"])
_ONE = "/orgs/{organizationId}/webhooks/{webhookId}"


@router.post(
    "/orgs/{organizationId}/webhooks",
    response_model=WebhookOut,
    status_code=201,
    summary="Create a webhook (its secret is shown in this answer)",
)
async def create_webhook(organizationId: str, body: CreateWebhook, ctx: Context) -> JSON:
    return ok(await service.create(ctx, organizationId, body), 201)


@router.get("/orgs/{organizationId}/webhooks", response_model=WebhookList, summary="List webhooks")
async def list_webhooks(organizationId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_webhooks(ctx, organizationId, paging))


@router.get(_ONE, response_model=WebhookOut, summary="A webhook")
async def get_webhook(organizationId: str, webhookId: str, ctx: Context) -> JSON:
    return ok(await service.get(ctx, organizationId, webhookId))


@router.patch(_ONE, response_model=WebhookOut, summary="Update or re-enable a webhook")
async def update_webhook(
    organizationId: str, webhookId: str, body: UpdateWebhook, ctx: Context
) -> JSON:
    return ok(await service.update(ctx, organizationId, webhookId, body))


@router.delete(_ONE, status_code=204, summary="Delete a webhook")
async def delete_webhook(organizationId: str, webhookId: str, ctx: Context) -> Response:
    await service.delete(ctx, organizationId, webhookId)
    return empty(204)


@router.post(
    f"{_ONE}/secret", response_model=WebhookOut, summary="Rotate a webhook's signing secret"
)
async def rotate_webhook_secret(organizationId: str, webhookId: str, ctx: Context) -> JSON:
    return ok(await service.rotate_secret(ctx, organizationId, webhookId))


@router.get(f"{_ONE}/deliveries", response_model=DeliveryList, summary="A webhook's deliveries")
async def list_webhook_deliveries(
    organizationId: str, webhookId: str, ctx: Context, paging: Paging
) -> JSON:
    return ok(await service.list_deliveries(ctx, organizationId, webhookId, paging))


@router.post(
    f"{_ONE}/deliveries/{{deliveryId}}/redeliver",
    response_model=DeliveryOut,
    status_code=202,
    summary="Send a delivery again",
)
async def redeliver_webhook_delivery(
    organizationId: str, webhookId: str, deliveryId: str, ctx: Context
) -> JSON:
    return ok(await service.redeliver(ctx, organizationId, webhookId, deliveryId), 202)
