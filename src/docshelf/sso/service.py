"""The /v1 operations on SAML providers and the members' list of SSO logins."""

from __future__ import annotations

import ipaddress
import secrets
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from docshelf.auth.service import require_unscoped
from docshelf.authz.guard import not_found, require
from docshelf.kit.clock import isoformat, utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import saml_providers
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess
from docshelf.sso import certificate, login, policy, repository
from docshelf.sso.presenter import present_login, present_provider, service_urls
from docshelf.sso.schemas import CreateSAMLProvider, UpdateSAMLProvider
from docshelf.team import repository as team_repository
from docshelf.team.presenter import present_team

_KEYS = (
    SortKey(saml_providers.c.created_at, "created_at"),
    SortKey(saml_providers.c.id, "id"),
)
_ADMINS = "Only organization admins can manage SAML providers"


def _check_sso_url(url: str) -> None:
    """https; plain http only to a loopback host (an identity provider on the same machine,
    as in tests), since the browser carries the login there."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise BadRequest("Invalid body field 'ssoURL': must be an absolute https URL")
    if parts.scheme == "http" and not _is_loopback(host):
        raise BadRequest("Invalid body field 'ssoURL': must use https (http only for loopback)")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _values(
    ctx: Ctx, org_id: str, body: CreateSAMLProvider | UpdateSAMLProvider
) -> dict[str, Any]:
    given = body.model_fields_set
    values: dict[str, Any] = {}
    if "label" in given:
        if body.label is None:
            raise BadRequest("Invalid body field 'label': must be a string of 1 to 30 characters")
        values["label"] = body.label
    if "entityID" in given:
        values["entity_id"] = (body.entityID or "").strip() or None
    if "ssoURL" in given:
        url = (body.ssoURL or "").strip()
        if url:
            _check_sso_url(url)
        values["sso_url"] = url or None
    if "certificate" in given:
        text = (body.certificate or "").strip()
        if text:
            try:
                certificate.check(text, utcnow())
            except certificate.CertificateError as exc:
                raise BadRequest(f"Invalid body field 'certificate': {exc}") from None
        values["certificate"] = text or None
    if "defaultTeam" in given:
        if body.defaultTeam is not None and not await repository.team_in_organization(
            ctx.conn, org_id, body.defaultTeam
        ):
            raise BadRequest("Invalid body field 'defaultTeam': no such team in the organization")
        values["default_team_id"] = body.defaultTeam
    if "defaultRole" in given:
        values["default_role"] = body.defaultRole
    return values


async def _present(ctx: Ctx, access: OrgAccess, row: sa.RowMapping) -> dict[str, Any]:
    team = None
    if row["default_team_id"] is not None:
        team_row = await team_repository.get(
            ctx.conn, row["organization_id"], row["default_team_id"], ctx.actor.user_id
        )
        team = present_team(team_row, access) if team_row is not None else None
    return present_provider(row, team, ctx.base_url)


async def _managed(ctx: Ctx, org_id: str) -> OrgAccess:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_manage(access), _ADMINS)
    return access


async def _provider(ctx: Ctx, org_id: str, provider_id: str) -> sa.RowMapping:
    row = await repository.get(ctx.conn, org_id, provider_id)
    if row is None:
        not_found("SAML provider")
    return row


async def list_providers(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    access = await _managed(ctx, org_id)
    page = await paginate(ctx.conn, repository.in_organization(org_id), keys=_KEYS, params=params)
    items = [await _present(ctx, access, row) for row in page.rows]
    return page.with_items(items)


async def create_provider(ctx: Ctx, org_id: str, body: CreateSAMLProvider) -> dict[str, Any]:
    await _managed(ctx, org_id)
    provider_id = new_id()
    values = await _values(ctx, org_id, body)
    await repository.insert(
        ctx.conn,
        {**values, "id": provider_id, "organization_id": org_id, "created_at": utcnow()},
    )
    return await get_provider(ctx, org_id, provider_id)


async def get_provider(ctx: Ctx, org_id: str, provider_id: str) -> dict[str, Any]:
    access = await _managed(ctx, org_id)
    return await _present(ctx, access, await _provider(ctx, org_id, provider_id))


async def update_provider(
    ctx: Ctx, org_id: str, provider_id: str, body: UpdateSAMLProvider
) -> dict[str, Any]:
    await _managed(ctx, org_id)
    await _provider(ctx, org_id, provider_id)
    await repository.update(ctx.conn, provider_id, await _values(ctx, org_id, body))
    return await get_provider(ctx, org_id, provider_id)


async def delete_provider(ctx: Ctx, org_id: str, provider_id: str) -> None:
    # A missing id is a 404 (not GitBook's "204: did not exist"), as for every Docshelf delete.
    await _managed(ctx, org_id)
    await _provider(ctx, org_id, provider_id)
    await repository.delete(ctx.conn, provider_id)


async def list_logins(ctx: Ctx, org_id: str) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_list_logins(access), "Only members can list SSO logins")
    rows = await repository.active_in_organization(ctx.conn, org_id)
    return {"items": [present_login(row, ctx.base_url) for row in rows]}


async def link(ctx: Ctx, provider_id: str) -> dict[str, Any]:
    """A one-time start URL (10 minutes) that links the identity a login with it asserts to the
    caller's account: how an existing account's owner lets a provider log them in."""
    require_unscoped(ctx.actor)
    if await repository.get_active(ctx.conn, provider_id) is None:
        not_found("SAML provider")
    code = secrets.token_urlsafe(32)
    now = utcnow()
    expires = now + login.REQUEST_LIFETIME
    await repository.insert_link_code(
        ctx.conn,
        code_hash=login.hash_session(code),
        provider_id=provider_id,
        user_id=ctx.actor.user_id,
        expires_at=expires,
        now=now,
    )
    start = service_urls(ctx.base_url, provider_id)["startURL"]
    return {"object": "saml-link", "url": f"{start}?link={code}", "expiresAt": isoformat(expires)}
