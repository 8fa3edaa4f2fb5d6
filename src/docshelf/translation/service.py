from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.authz.guard import not_found, require
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import translation_settings
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess
from docshelf.translation import repository
from docshelf.translation.presenter import present_translation_settings
from docshelf.translation.schemas import CreateTranslationSettings, ReplaceTranslationSettings

_KEYS = (
    SortKey(translation_settings.c.created_at, "created_at"),
    SortKey(translation_settings.c.id, "id"),
)
_GUESTS = "Guests cannot view translation settings"


async def _visible(ctx: Ctx, org_id: str, settings_id: str) -> tuple[OrgAccess, sa.RowMapping]:
    access = await org_policy.load(ctx, org_id)
    require(org_policy.can_view_setting(access), _GUESTS)
    row = await repository.get(ctx.conn, org_id, settings_id)
    if row is None:
        not_found("Translation settings")
    return access, row


async def list_translation_settings(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(org_policy.can_view_setting(access), _GUESTS)
    page = await paginate(ctx.conn, repository.in_organization(org_id), keys=_KEYS, params=params)
    return page.render(lambda row: present_translation_settings(row, access, ctx.base_url))


async def create_translation_settings(
    ctx: Ctx, org_id: str, body: CreateTranslationSettings
) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(
        org_policy.can_change_setting(access),
        "Only organization admins can create translation settings",
    )
    settings_id = new_id()
    await repository.insert(
        ctx.conn,
        settings_id=settings_id,
        org_id=org_id,
        title=body.title,
        languages=list(body.languages),
        now=utcnow(),
    )
    return await get_translation_settings(ctx, org_id, settings_id)


async def get_translation_settings(ctx: Ctx, org_id: str, settings_id: str) -> dict[str, Any]:
    access, row = await _visible(ctx, org_id, settings_id)
    return present_translation_settings(row, access, ctx.base_url)


async def replace_translation_settings(
    ctx: Ctx, org_id: str, settings_id: str, body: ReplaceTranslationSettings
) -> dict[str, Any]:
    access, _ = await _visible(ctx, org_id, settings_id)
    require(
        org_policy.can_change_setting(access),
        "Only organization admins can update translation settings",
    )
    await repository.replace(
        ctx.conn, settings_id, title=body.title, languages=list(body.languages), now=utcnow()
    )
    return await get_translation_settings(ctx, org_id, settings_id)


async def delete_translation_settings(ctx: Ctx, org_id: str, settings_id: str) -> None:
    # A missing id is a 404 like everywhere else in Docshelf, not GitBook's "204: did not exist":
    # a client deleting the wrong id learns so instead of believing it succeeded.
    access, _ = await _visible(ctx, org_id, settings_id)
    require(
        org_policy.can_change_setting(access),
        "Only organization admins can delete translation settings",
    )
    await repository.delete(ctx.conn, settings_id)
