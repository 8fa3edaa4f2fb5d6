"""Visitor authentication settings, the adaptive schema and published content of a site.

Rights: the signing key is a credential, so only organization admins read or change it (other
members get 403, as for share links); full members read the adaptive schema, admins replace it
(`permissions.viewAdaptiveSchema` / `editAdaptiveSchema`)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.guard import not_found, require
from docshelf.kit.clock import isoformat, utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, NotFound
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess
from docshelf.site import policy, published, repository, visitor
from docshelf.site.policy import SiteAccess
from docshelf.site.presenter import public_base
from docshelf.site.schemas import PutAdaptiveSchema, UpdatePublishingAuth


async def _admin(ctx: Ctx, org_id: str, site_id: str, *, lock: bool = False) -> SiteAccess:
    access = await policy.load(ctx, org_id, site_id, lock=lock)
    require(policy.can_admin(access.org), "Only organization admins can see or change this")
    return access


def _auth(site: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "publishing-auth",
        "backend": "custom",
        "privateKey": site["visitor_key"],
    }
    if site["fallback_url"] is not None:
        body["fallbackURL"] = site["fallback_url"]
    return body


async def get_auth(ctx: Ctx, org_id: str, site_id: str) -> dict[str, Any]:
    return _auth((await _admin(ctx, org_id, site_id)).site)


async def update_auth(
    ctx: Ctx, org_id: str, site_id: str, body: UpdatePublishingAuth
) -> dict[str, Any]:
    await _admin(ctx, org_id, site_id, lock=True)
    if body.backend != "custom":
        raise BadRequest(
            "Invalid body field 'backend': no integration is installed on this site; use 'custom'"
        )
    if "fallbackURL" in body.model_fields_set:
        await repository.update_site(ctx.conn, site_id, {"fallback_url": body.fallbackURL})
    return await get_auth(ctx, org_id, site_id)


async def regenerate_auth(ctx: Ctx, org_id: str, site_id: str) -> dict[str, Any]:
    """A new key: every token signed with the old one stops opening the site at once."""
    await _admin(ctx, org_id, site_id, lock=True)
    await repository.update_site(
        ctx.conn, site_id, {"visitor_key": visitor.new_key(), "visitor_key_at": utcnow()}
    )
    return await get_auth(ctx, org_id, site_id)


def _schema(site: Any) -> dict[str, Any]:
    schema = published.adaptive_schema(site)
    return {
        "object": "site-adaptive-schema",
        # Schemas stored before the unsigned description was set read back as GitBook's too.
        "jsonSchema": visitor.gitbook_form(schema)
        if schema is not None
        else visitor.DEFAULT_SCHEMA,
        "updatedAt": isoformat(site["adaptive_schema_at"] or site["created_at"]),
    }


async def get_schema(ctx: Ctx, org_id: str, site_id: str) -> dict[str, Any]:
    return _schema((await policy.load(ctx, org_id, site_id)).site)


async def put_schema(
    ctx: Ctx, org_id: str, site_id: str, body: PutAdaptiveSchema
) -> dict[str, Any]:
    access = await policy.load(ctx, org_id, site_id, lock=True)
    require(policy.can_admin(access.org), "Only organization admins can change the schema")
    visitor.check_schema(body.jsonSchema)
    await repository.update_site(
        ctx.conn,
        site_id,
        {
            "adaptive_schema": json.dumps(
                visitor.gitbook_form(body.jsonSchema), separators=(",", ":")
            ),
            "adaptive_schema_at": utcnow(),
        },
    )
    return await get_schema(ctx, org_id, site_id)


async def opened_for(
    ctx: Ctx, org_id: str, site_id: str, who: published.Visitor
) -> tuple[published.Opened, OrgAccess | None]:
    """The site as the caller sees it, and their organization access if they are a member:
    members who may view the site see the site spaces they may view; a site content token
    the visitor it was minted for, on its own site only; any other caller is a visitor."""
    try:
        org = await org_policy.load(ctx, org_id)
    except NotFound:
        org = None
    site = await repository.get_site(ctx.conn, site_id, org_id)
    if site is None:
        not_found("Site")
    public = public_base(ctx)
    if org is not None and policy.can_view(org):
        scope = await org_policy.content_scope(ctx, org)
        opened = await published.open_for_member(ctx.conn, site, scope, ctx.base_url, public)
        return opened, org
    if ctx.actor.reads is not None:
        who = published.Visitor(grant=ctx.actor.reads)
    seen = await published.open_for_visitor(ctx.conn, site, who, ctx.base_url, public)
    if seen is None:
        not_found("Site")
    return seen, None


async def published_site(
    ctx: Ctx, org_id: str, site_id: str, who: published.Visitor
) -> dict[str, Any]:
    opened, org = await opened_for(ctx, org_id, site_id, who)
    return await published.published_site(ctx.conn, opened, org, who.share_key)


async def lookup(
    conn: AsyncConnection,
    base_url: str,
    public: str,
    url: str,
    who: published.Visitor,
    *,
    redirect_on_error: bool,
) -> dict[str, Any]:
    """For anyone, without a token: the visitor's own key, token or claims decide."""
    found = await published.resolve(
        conn,
        url,
        who,
        base_url=base_url,
        public=public,
        redirect_on_error=redirect_on_error,
        require_page=False,
    )
    if found is None:
        raise NotFound("No published content at this URL")
    return found.body
