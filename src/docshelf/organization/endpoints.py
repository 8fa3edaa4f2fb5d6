from __future__ import annotations

from typing import Annotated

from fastapi import Path

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.organization import service
from docshelf.organization.schemas import (
    CreateOrganization,
    OrganizationList,
    OrganizationOut,
    OrganizationsForDomain,
    SubdomainOut,
    UpdateOrganization,
)

router = domain_router(tags=["organizations"])


@router.get("/orgs", response_model=OrganizationList, summary="Organizations of the caller")
async def list_organizations(ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_organizations(ctx, paging))


@router.post(
    "/orgs", response_model=OrganizationOut, status_code=201, summary="Create an organization"
)
async def create_organization(body: CreateOrganization, ctx: Context) -> JSON:
    org = await service.create(ctx, body)
    return ok(org, 201, headers={"Location": org["urls"]["location"]})


@router.get("/orgs/{organizationId}", response_model=OrganizationOut, summary="An organization")
async def get_organization(organizationId: str, ctx: Context) -> JSON:
    return ok(await service.get(ctx, organizationId))


@router.patch(
    "/orgs/{organizationId}", response_model=OrganizationOut, summary="Update an organization"
)
async def update_organization(organizationId: str, body: UpdateOrganization, ctx: Context) -> JSON:
    return ok(await service.update(ctx, organizationId, body))


@router.get("/subdomains/{subdomain}", response_model=SubdomainOut, summary="Resolve a subdomain")
async def get_subdomain(
    subdomain: Annotated[
        str, Path(min_length=3, max_length=32, pattern=r"^[a-z0-9][a-z0-9-]{1,30}[a-z0-9]$")
    ],
    ctx: Context,
) -> JSON:
    return ok(await service.resolve_subdomain(ctx, subdomain))


@router.get(
    "/email-domains/{emailDomain}/orgs",
    response_model=OrganizationsForDomain,
    summary="Organizations a user of an e-mail domain can join",
)
async def get_organizations_for_email_domain(
    emailDomain: Annotated[str, Path(min_length=3, max_length=253)], ctx: Context
) -> JSON:
    return ok(await service.organizations_for_email_domain(ctx, emailDomain))
