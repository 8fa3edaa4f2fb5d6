from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth.service import require_unscoped
from docshelf.authz.guard import require
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict, NotFound
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.merge_rules import service as merge_rules
from docshelf.models import organizations
from docshelf.organization import policy, repository
from docshelf.organization.presenter import present_organization, present_row
from docshelf.organization.schemas import CreateOrganization, UpdateOrganization

_PAGE_KEYS = (
    SortKey(organizations.c.created_at, "created_at"),
    SortKey(organizations.c.id, "id"),
)


async def list_organizations(ctx: Ctx, params: PageParams) -> dict[str, Any]:
    page = await paginate(
        ctx.conn,
        repository.READABLE,
        keys=_PAGE_KEYS,
        params=params,
        values={"user_id": ctx.actor.user_id},
    )
    return page.render(lambda row: present_row(row, ctx.base_url))


async def create_organization(
    conn: AsyncConnection, owner_id: str, body: CreateOrganization
) -> str:
    """The creator becomes the organization's first admin."""
    now = utcnow()
    org_id = new_id()
    await repository.insert(
        conn,
        {
            "id": org_id,
            "title": body.title,
            "created_at": now,
            "updated_at": now,
            "email_domains": sorted({d.lower() for d in body.emailDomains}),
            "type": body.type,
            "use_case": body.useCase,
            "community_type": body.communityType,
        },
        owner_id=owner_id,
    )
    return org_id


async def create(ctx: Ctx, body: CreateOrganization) -> dict[str, Any]:
    require_unscoped(ctx.actor)
    org_id = await create_organization(ctx.conn, ctx.actor.user_id, body)
    return await get(ctx, org_id)


async def get(ctx: Ctx, org_id: str) -> dict[str, Any]:
    return present_organization(await policy.load(ctx, org_id), ctx.base_url)


async def update(ctx: Ctx, org_id: str, body: UpdateOrganization) -> dict[str, Any]:
    access = await policy.load(ctx, org_id)
    require(policy.is_admin(access), "Only organization admins can change the organization")
    given = body.model_fields_set
    values: dict[str, Any] = {}
    for field in ("title", "sso", "ai", "inviteLinks", "mergeRules"):
        if field in given and getattr(body, field) is None:
            raise BadRequest(f"Invalid body field '{field}': must not be null")
    if body.title is not None:
        values["title"] = body.title
    if body.sso is not None:
        values["sso"] = body.sso
    if body.ai is not None:
        values["ai"] = body.ai
    if body.inviteLinks is not None:
        values["invite_links"] = body.inviteLinks
    if "emailDomains" in given:
        values["email_domains"] = sorted({d.lower() for d in body.emailDomains or []})
    if "hostname" in given:
        if body.hostname is not None and await repository.hostname_taken(
            ctx.conn, body.hostname, org_id
        ):
            raise Conflict(f"The hostname '{body.hostname}' is already taken")
        values["hostname"] = body.hostname
    if "defaultRole" in given:
        values["default_role"] = body.defaultRole
        values["has_default_role"] = True
    if "logo" in given:
        values["logo"] = body.logo
    if body.mergeRules is not None:
        values["merge_rules"] = body.mergeRules.stored()
        await merge_rules.check_rule_users(ctx, org_id, values["merge_rules"])
    if "defaultContent" in given:
        if body.defaultContent is not None:
            # Sites arrive with a later domain; until then no site id can exist.
            site = body.defaultContent.site
            raise BadRequest(f"Invalid body field 'defaultContent.site': site '{site}' not found")
        values["default_content"] = None
    if values:
        values["updated_at"] = utcnow()
        await repository.update(ctx.conn, org_id, values)
    return await get(ctx, org_id)


async def resolve_subdomain(ctx: Ctx, subdomain: str) -> dict[str, Any]:
    """Resolving a published hostname is open to any caller: it names the organization behind
    public content, nothing more."""
    row = await repository.by_hostname(ctx.conn, subdomain)
    if row is None:
        raise NotFound("Subdomain not found")
    return {
        "object": "subdomain",
        "subdomain": subdomain,
        "target": {"type": "organization", "organization": row["id"]},
        "isActive": True,
    }


async def organizations_for_email_domain(ctx: Ctx, domain: str) -> dict[str, Any]:
    """Organizations a user of that e-mail domain could join. Only the caller's own domain is
    answered, so the endpoint cannot enumerate other companies' organizations."""
    domain = domain.lower()
    if ctx.actor.email.rsplit("@", 1)[-1] != domain:
        return {"organizations": []}
    rows = await repository.with_email_domain(ctx.conn, domain, ctx.actor.user_id)
    return {
        "organizations": [
            present_organization(
                policy.OrgAccess(
                    org=r,
                    is_member=r["member_id"] is not None,
                    role=r["caller_role"],
                    owns_team=r["owns_team"],
                ),
                ctx.base_url,
            )
            for r in rows
        ]
    }


async def verify_email_domain(conn: AsyncConnection, org_id: str, domain: str) -> None:
    """The install's operator vouches that the organization owns the e-mail domain: its SSO
    providers may then link existing accounts at that domain, and no other organization's may
    create accounts there (README, "Single sign-on"). The organization must list the domain in
    its `emailDomains`; a domain belongs to one organization."""
    domain = domain.strip().lower()
    if await repository.get(conn, org_id) is None:
        raise NotFound(f"No organization {org_id}")
    if not await repository.lists_email_domain(conn, org_id, domain):
        raise BadRequest(
            f"The organization does not list {domain} in its emailDomains: add it there first "
            "(PATCH /v1/orgs/{organizationId})"
        )
    owner = await repository.domain_owner(conn, domain)
    if owner == org_id:
        return
    if owner is not None:
        raise Conflict(f"{domain} is verified for another organization ({owner})")
    await repository.verify_domain(conn, org_id, domain, utcnow())


async def unverify_email_domain(conn: AsyncConnection, org_id: str, domain: str) -> None:
    if not await repository.unverify_domain(conn, org_id, domain.strip().lower()):
        raise NotFound(f"{domain} is not verified for organization {org_id}")
