from __future__ import annotations

from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.translation import service
from docshelf.translation.schemas import (
    CreateTranslationSettings,
    ReplaceTranslationSettings,
    TranslationSettingsList,
    TranslationSettingsOut,
)

router = domain_router(tags=["translations"])


@router.get(
    "/orgs/{organizationId}/translations",
    response_model=TranslationSettingsList,
    summary="List translation settings",
)
async def list_translation_settings(organizationId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_translation_settings(ctx, organizationId, paging))


@router.post(
    "/orgs/{organizationId}/translations",
    response_model=TranslationSettingsOut,
    status_code=201,
    summary="Create translation settings",
)
async def create_translation_settings(
    organizationId: str, body: CreateTranslationSettings, ctx: Context
) -> JSON:
    created = await service.create_translation_settings(ctx, organizationId, body)
    return ok(created, 201, headers={"Location": created["urls"]["location"]})


@router.get(
    "/orgs/{organizationId}/translations/{translationSettingsId}",
    response_model=TranslationSettingsOut,
    summary="Translation settings",
)
async def get_translation_settings(
    organizationId: str, translationSettingsId: str, ctx: Context
) -> JSON:
    return ok(await service.get_translation_settings(ctx, organizationId, translationSettingsId))


@router.put(
    "/orgs/{organizationId}/translations/{translationSettingsId}",
    response_model=TranslationSettingsOut,
    summary="Replace translation settings",
)
async def replace_translation_settings(
    organizationId: str,
    translationSettingsId: str,
    body: ReplaceTranslationSettings,
    ctx: Context,
) -> JSON:
    return ok(
        await service.replace_translation_settings(ctx, organizationId, translationSettingsId, body)
    )


@router.delete(
    "/orgs/{organizationId}/translations/{translationSettingsId}",
    status_code=205,
    summary="Delete translation settings",
)
async def delete_translation_settings(
    organizationId: str, translationSettingsId: str, ctx: Context
) -> Response:
    await service.delete_translation_settings(ctx, organizationId, translationSettingsId)
    # 205 Reset Content, as GitBook answers a deletion; it carries no body by definition.
    return empty(205)
