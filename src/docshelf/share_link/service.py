from __future__ import annotations

import secrets
from typing import Any

import sqlalchemy as sa

from docshelf.authz.guard import not_found
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import site_share_links
from docshelf.share_link import policy, repository
from docshelf.share_link.presenter import present_share_link
from docshelf.share_link.schemas import CreateShareLink, UpdateShareLink
from docshelf.site.policy import SiteAccess
from docshelf.site.presenter import public_base, site_address

_KEYS = (
    SortKey(site_share_links.c.created_at, "created_at"),
    SortKey(site_share_links.c.id, "id"),
)


def _address(ctx: Ctx, access: SiteAccess) -> str:
    return site_address(access.site, public_base(ctx))


async def list_links(ctx: Ctx, org_id: str, site_id: str, params: PageParams) -> dict[str, Any]:
    access = await policy.manage(ctx, org_id, site_id)
    page = await paginate(ctx.conn, repository.of_site(site_id), keys=_KEYS, params=params)
    address = _address(ctx, access)
    return page.render(lambda row: present_share_link(row, address))


async def create(ctx: Ctx, org_id: str, site_id: str, body: CreateShareLink) -> dict[str, Any]:
    access = await policy.manage(ctx, org_id, site_id)
    link_id = new_id()
    await repository.insert(
        ctx.conn,
        {
            "id": link_id,
            "site_id": site_id,
            "name": body.name,
            # 192 random bits: the whole credential.
            "secret": secrets.token_urlsafe(24),
            "active": True,
            "created_at": utcnow(),
        },
    )
    return await _present(ctx, access, link_id)


async def _present(ctx: Ctx, access: SiteAccess, link_id: str) -> dict[str, Any]:
    row = await repository.get(ctx.conn, access.id, link_id)
    if row is None:
        not_found("Share link")
    return present_share_link(row, _address(ctx, access))


async def _link(
    ctx: Ctx, org_id: str, site_id: str, link_id: str
) -> tuple[SiteAccess, sa.RowMapping]:
    access = await policy.manage(ctx, org_id, site_id)
    row = await repository.get(ctx.conn, site_id, link_id)
    if row is None:
        not_found("Share link")
    return access, row


async def update(
    ctx: Ctx, org_id: str, site_id: str, link_id: str, body: UpdateShareLink
) -> dict[str, Any]:
    access, _ = await _link(ctx, org_id, site_id, link_id)
    given = body.model_fields_set
    for name in ("active", "name"):
        if name in given and getattr(body, name) is None:
            raise BadRequest(f"Invalid body field '{name}': must not be null")
    values: dict[str, Any] = {}
    if body.active is not None:
        values["active"] = body.active
    if body.name is not None:
        values["name"] = body.name
    if values:
        await repository.update(ctx.conn, link_id, values)
    return await _present(ctx, access, link_id)


async def delete(ctx: Ctx, org_id: str, site_id: str, link_id: str) -> None:
    await _link(ctx, org_id, site_id, link_id)
    await repository.delete(ctx.conn, link_id)
