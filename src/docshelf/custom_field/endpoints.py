from __future__ import annotations

from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.custom_field import service
from docshelf.custom_field.schemas import (
    CreateCustomField,
    CustomFieldList,
    CustomFieldOut,
    SpaceCustomFieldOut,
    UpdateCustomField,
    UpdateSpaceCustomFields,
)
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router

router = domain_router(tags=["custom fields"])


@router.get(
    "/orgs/{organizationId}/custom-fields",
    response_model=CustomFieldList,
    summary="List custom fields",
)
async def list_custom_fields(organizationId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_fields(ctx, organizationId, paging))


@router.post(
    "/orgs/{organizationId}/custom-fields",
    response_model=CustomFieldOut,
    status_code=201,
    summary="Create a custom field",
)
async def create_custom_field(organizationId: str, body: CreateCustomField, ctx: Context) -> JSON:
    created = await service.create_field(ctx, organizationId, body)
    return ok(created, 201, headers={"Location": created["urls"]["location"]})


@router.get(
    "/orgs/{organizationId}/custom-fields/{fieldName}",
    response_model=CustomFieldOut,
    summary="A custom field",
)
async def get_custom_field(organizationId: str, fieldName: str, ctx: Context) -> JSON:
    return ok(await service.get_field(ctx, organizationId, fieldName))


@router.patch(
    "/orgs/{organizationId}/custom-fields/{fieldName}",
    response_model=CustomFieldOut,
    summary="Change a custom field",
)
async def update_custom_field(
    organizationId: str, fieldName: str, body: UpdateCustomField, ctx: Context
) -> JSON:
    return ok(await service.update_field(ctx, organizationId, fieldName, body))


@router.delete(
    "/orgs/{organizationId}/custom-fields/{fieldName}",
    status_code=204,
    summary="Delete a custom field and its values",
)
async def delete_custom_field(organizationId: str, fieldName: str, ctx: Context) -> Response:
    await service.delete_field(ctx, organizationId, fieldName)
    return empty(204)


@router.get(
    "/spaces/{spaceId}/custom-fields",
    response_model=list[SpaceCustomFieldOut],
    summary="A space's custom field values",
)
async def get_space_custom_fields(spaceId: str, ctx: Context) -> JSON:
    return ok(await service.space_values(ctx, spaceId))


@router.patch(
    "/spaces/{spaceId}/custom-fields", status_code=204, summary="Set a space's custom field values"
)
async def update_space_custom_fields(
    spaceId: str, body: UpdateSpaceCustomFields, ctx: Context
) -> Response:
    await service.update_space_values(ctx, spaceId, body)
    return empty(204)
