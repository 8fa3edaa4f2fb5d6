from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Header, Query, Request
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.context import Ctx
from docshelf.kit.db import unit_of_work
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router, reads_published, staged
from docshelf.site import publishing, service, structure
from docshelf.site.published import Visitor
from docshelf.site.schemas import (
    AdaptiveSchemaOut,
    AddSectionToGroup,
    CreateGroup,
    CreateSection,
    CreateSite,
    CreateSiteSpace,
    MoveGroup,
    MoveSection,
    MoveSiteSpace,
    PublishedContentSiteOut,
    PublishedLookupOut,
    PublishingAuthOut,
    PutAdaptiveSchema,
    ResolvePublishedUrl,
    SiteList,
    SiteOut,
    SiteSectionGroupList,
    SiteSectionGroupOut,
    SiteSectionList,
    SiteSectionOut,
    SiteSpaceList,
    SiteSpaceOut,
    SiteStructureOut,
    UpdateGroup,
    UpdatePublishingAuth,
    UpdateSection,
    UpdateSite,
    UpdateSiteSpace,
)

router = domain_router(tags=["sites"])
# GitBook marks the published-URL look-ups as needing no token: visitors bring their own keys.
public_router = domain_router(tags=["sites"])

SITE = "/orgs/{organizationId}/sites/{siteId}"
Prefer = Annotated[
    str | None,
    Header(max_length=100, description="`return=minimal` answers 204 with no body"),
]
# Share keys open published content to visitors (not members); accepted for GitBook clients.
ShareKey = Annotated[str | None, Query(max_length=256)]


def _group_location(ctx: Ctx, org_id: str, site_id: str, group: dict[str, Any]) -> dict[str, str]:
    """A section group has no `urls` in GitBook's shape; its 201s still name where it is."""
    location = f"{ctx.base_url}/v1/orgs/{org_id}/sites/{site_id}/section-groups/{group['id']}"
    return {"Location": location}


def _answer(body: dict[str, Any], prefer: str | None, status: int = 200) -> Response:
    """GitBook's `Prefer: return=minimal`: 204 with `Preference-Applied`, no body."""
    if prefer is not None and "return=minimal" in prefer:
        return Response(status_code=204, headers={"Preference-Applied": "return=minimal"})
    headers = (
        {"Location": body["urls"]["location"]}
        if status == 201 and "location" in body.get("urls", {})
        else None
    )
    return ok(body, status, headers=headers)


# -- sites --


@router.get("/orgs/{organizationId}/sites", response_model=SiteList, summary="List sites")
async def list_sites(
    organizationId: str,
    ctx: Context,
    paging: Paging,
    space: Annotated[str | None, Query(max_length=64)] = None,
    title: Annotated[str | None, Query(max_length=128)] = None,
    published: bool | None = None,
) -> JSON:
    return ok(
        await service.list_sites(
            ctx, organizationId, paging, space=space, title=title, published=published
        )
    )


@router.post(
    "/orgs/{organizationId}/sites", response_model=SiteOut, status_code=201, summary="Create a site"
)
async def create_site(organizationId: str, ctx: Context, body: CreateSite | None = None) -> JSON:
    site = await service.create(ctx, organizationId, body or CreateSite())
    return ok(site, 201, headers={"Location": site["urls"]["location"]})


@router.get(SITE, response_model=SiteOut, summary="A site")
async def get_site(organizationId: str, siteId: str, ctx: Context) -> JSON:
    return ok(await service.get(ctx, organizationId, siteId))


@router.patch(SITE, response_model=SiteOut, summary="Update a site")
async def update_site(organizationId: str, siteId: str, body: UpdateSite, ctx: Context) -> JSON:
    return ok(await service.update(ctx, organizationId, siteId, body))


@router.delete(SITE, status_code=205, summary="Delete a site")
async def delete_site(organizationId: str, siteId: str, ctx: Context) -> Response:
    await service.delete(ctx, organizationId, siteId)
    return empty(205)


@router.post(f"{SITE}/publish", response_model=SiteOut, summary="Publish a site")
async def publish_site(organizationId: str, siteId: str, ctx: Context) -> JSON:
    return ok(await service.set_published(ctx, organizationId, siteId, True))


@router.post(f"{SITE}/unpublish", response_model=SiteOut, summary="Unpublish a site")
async def unpublish_site(organizationId: str, siteId: str, ctx: Context) -> JSON:
    return ok(await service.set_published(ctx, organizationId, siteId, False))


@router.get(f"{SITE}/structure", response_model=SiteStructureOut, summary="A site's structure")
async def site_structure(
    organizationId: str, siteId: str, ctx: Context, shareKey: ShareKey = None
) -> JSON:
    return ok(await service.structure_of(ctx, organizationId, siteId, shareKey))


# -- sections --


@router.get(f"{SITE}/sections", response_model=SiteSectionList, summary="List site sections")
async def list_sections(
    organizationId: str, siteId: str, ctx: Context, paging: Paging, shareKey: ShareKey = None
) -> JSON:
    return ok(await structure.list_sections(ctx, organizationId, siteId, paging, shareKey))


@router.post(
    f"{SITE}/sections", response_model=SiteSectionOut, status_code=201, summary="Add a section"
)
async def create_section(
    organizationId: str, siteId: str, body: CreateSection, ctx: Context
) -> JSON:
    section = await structure.create_section(ctx, organizationId, siteId, body)
    return ok(section, 201, headers={"Location": section["urls"]["location"]})


@router.patch(
    f"{SITE}/sections/{{siteSectionId}}", response_model=SiteSectionOut, summary="Update a section"
)
async def update_section(
    organizationId: str,
    siteId: str,
    siteSectionId: str,
    body: UpdateSection,
    ctx: Context,
    prefer: Prefer = None,
) -> Response:
    section = await structure.update_section(ctx, organizationId, siteId, siteSectionId, body)
    return _answer(section, prefer)


@router.delete(f"{SITE}/sections/{{siteSectionId}}", status_code=205, summary="Delete a section")
async def delete_section(
    organizationId: str, siteId: str, siteSectionId: str, ctx: Context
) -> Response:
    await structure.delete_section(ctx, organizationId, siteId, siteSectionId)
    return empty(205)


@router.post(
    f"{SITE}/sections/{{siteSectionId}}/move",
    response_model=SiteSectionOut,
    summary="Move a section",
)
async def move_section(
    organizationId: str,
    siteId: str,
    siteSectionId: str,
    ctx: Context,
    body: MoveSection | None = None,
) -> JSON:
    return ok(
        await structure.move_section(
            ctx, organizationId, siteId, siteSectionId, body or MoveSection()
        )
    )


# -- section groups --

GROUP = f"{SITE}/section-groups/{{siteSectionGroupId}}"


@router.get(
    f"{SITE}/section-groups", response_model=SiteSectionGroupList, summary="List section groups"
)
async def list_groups(organizationId: str, siteId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await structure.list_groups(ctx, organizationId, siteId, paging))


@router.post(
    f"{SITE}/section-groups",
    response_model=SiteSectionGroupOut,
    status_code=201,
    summary="Add a section group",
)
async def create_group(organizationId: str, siteId: str, body: CreateGroup, ctx: Context) -> JSON:
    group = await structure.create_group(ctx, organizationId, siteId, body)
    return ok(group, 201, headers=_group_location(ctx, organizationId, siteId, group))


@router.patch(GROUP, response_model=SiteSectionGroupOut, summary="Update a section group")
async def update_group(
    organizationId: str,
    siteId: str,
    siteSectionGroupId: str,
    body: UpdateGroup,
    ctx: Context,
    prefer: Prefer = None,
) -> Response:
    group = await structure.update_group(ctx, organizationId, siteId, siteSectionGroupId, body)
    return _answer(group, prefer)


@router.delete(GROUP, status_code=205, summary="Delete a section group (its sections stay)")
async def delete_group(
    organizationId: str, siteId: str, siteSectionGroupId: str, ctx: Context
) -> Response:
    await structure.delete_group(ctx, organizationId, siteId, siteSectionGroupId)
    return empty(205)


@router.post(
    f"{GROUP}/sections",
    response_model=SiteSectionGroupOut,
    status_code=201,
    summary="Add a section to a group",
)
async def add_to_group(
    organizationId: str,
    siteId: str,
    siteSectionGroupId: str,
    body: AddSectionToGroup,
    ctx: Context,
) -> JSON:
    group = await structure.add_to_group(ctx, organizationId, siteId, siteSectionGroupId, body)
    return ok(group, 201, headers=_group_location(ctx, organizationId, siteId, group))


@router.delete(
    f"{GROUP}/sections/{{siteSectionId}}",
    status_code=205,
    summary="Take a section out of a group",
)
async def remove_from_group(
    organizationId: str, siteId: str, siteSectionGroupId: str, siteSectionId: str, ctx: Context
) -> Response:
    await structure.remove_from_group(
        ctx, organizationId, siteId, siteSectionGroupId, siteSectionId
    )
    return empty(205)


@router.post(f"{GROUP}/move", response_model=SiteSectionGroupOut, summary="Move a section group")
async def move_group(
    organizationId: str,
    siteId: str,
    siteSectionGroupId: str,
    ctx: Context,
    body: MoveGroup | None = None,
) -> JSON:
    return ok(
        await structure.move_group(
            ctx, organizationId, siteId, siteSectionGroupId, body or MoveGroup()
        )
    )


# -- site spaces --

SITE_SPACE = f"{SITE}/site-spaces/{{siteSpaceId}}"


@router.get(f"{SITE}/site-spaces", response_model=SiteSpaceList, summary="List site spaces")
async def list_site_spaces(
    organizationId: str,
    siteId: str,
    ctx: Context,
    paging: Paging,
    shareKey: ShareKey = None,
    default: bool | None = None,
) -> JSON:
    return ok(
        await structure.list_site_spaces(
            ctx, organizationId, siteId, paging, default=default, share_key=shareKey
        )
    )


@router.post(
    f"{SITE}/site-spaces",
    response_model=SiteSpaceOut,
    status_code=201,
    summary="Add a space to a site",
)
async def create_site_space(
    organizationId: str, siteId: str, body: CreateSiteSpace, ctx: Context, prefer: Prefer = None
) -> Response:
    site_space = await structure.create_site_space(ctx, organizationId, siteId, body)
    return _answer(site_space, prefer, 201)


@router.patch(SITE_SPACE, response_model=SiteSpaceOut, summary="Update a site space")
async def update_site_space(
    organizationId: str,
    siteId: str,
    siteSpaceId: str,
    body: UpdateSiteSpace,
    ctx: Context,
    prefer: Prefer = None,
) -> Response:
    site_space = await structure.update_site_space(ctx, organizationId, siteId, siteSpaceId, body)
    return _answer(site_space, prefer)


@router.delete(SITE_SPACE, status_code=205, summary="Remove a space from a site")
async def delete_site_space(
    organizationId: str, siteId: str, siteSpaceId: str, ctx: Context
) -> Response:
    await structure.delete_site_space(ctx, organizationId, siteId, siteSpaceId)
    return empty(205)


@router.post(f"{SITE_SPACE}/move", response_model=SiteSpaceOut, summary="Move a site space")
async def move_site_space(
    organizationId: str,
    siteId: str,
    siteSpaceId: str,
    ctx: Context,
    body: MoveSiteSpace | None = None,
) -> JSON:
    return ok(
        await structure.move_site_space(
            ctx, organizationId, siteId, siteSpaceId, body or MoveSiteSpace()
        )
    )


# -- visitor authentication, adaptive content, published content --

VisitorAuthToken = Annotated[str | None, Query(max_length=8192)]


@router.get(
    f"{SITE}/publishing/auth",
    response_model=PublishingAuthOut,
    summary="A site's visitor authentication settings",
)
async def get_publishing_auth(organizationId: str, siteId: str, ctx: Context) -> JSON:
    return ok(await publishing.get_auth(ctx, organizationId, siteId))


@router.patch(
    f"{SITE}/publishing/auth",
    response_model=PublishingAuthOut,
    summary="Update a site's visitor authentication settings",
)
async def update_publishing_auth(
    organizationId: str, siteId: str, body: UpdatePublishingAuth, ctx: Context
) -> JSON:
    return ok(await publishing.update_auth(ctx, organizationId, siteId, body))


@router.post(
    f"{SITE}/publishing/auth/regenerate",
    response_model=PublishingAuthOut,
    summary="Regenerate a site's visitor signing key",
)
async def regenerate_publishing_auth(organizationId: str, siteId: str, ctx: Context) -> JSON:
    return ok(await publishing.regenerate_auth(ctx, organizationId, siteId))


@router.get(
    f"{SITE}/adaptive-schema", response_model=AdaptiveSchemaOut, summary="A site's adaptive schema"
)
async def get_adaptive_schema(organizationId: str, siteId: str, ctx: Context) -> JSON:
    return ok(await publishing.get_schema(ctx, organizationId, siteId))


@router.put(
    f"{SITE}/adaptive-schema",
    response_model=AdaptiveSchemaOut,
    summary="Replace a site's adaptive schema",
)
async def put_adaptive_schema(
    organizationId: str, siteId: str, body: PutAdaptiveSchema, ctx: Context
) -> JSON:
    return ok(await publishing.put_schema(ctx, organizationId, siteId, body))


@router.get(
    f"{SITE}/published",
    response_model=PublishedContentSiteOut,
    summary="A site's published content",
)
@reads_published
async def published_site(
    organizationId: str,
    siteId: str,
    ctx: Context,
    shareKey: ShareKey = None,
    # Docshelf extension: a visitor token, so non-members see a visitor-auth site's content.
    visitorAuthToken: VisitorAuthToken = None,
) -> JSON:
    who = Visitor(share_key=shareKey, token=visitorAuthToken)
    return ok(await publishing.published_site(ctx, organizationId, siteId, who))


def _public(request: Request) -> str:
    settings = getattr(request.app.state, "settings", None)
    base: str = request.app.state.base_url
    return settings.resolved_public_url if settings is not None else base


@public_router.get(
    "/urls/published",
    response_model=PublishedLookupOut,
    summary="Resolve a published URL (no token needed)",
)
async def published_by_url(
    request: Request,
    url: Annotated[str, Query(min_length=1, max_length=2048)],
    visitorAuthToken: VisitorAuthToken = None,
    redirectOnError: bool = False,
) -> JSON:
    return ok(
        await publishing.lookup(
            request.state.conn,
            request.app.state.base_url,
            _public(request),
            url,
            Visitor(token=visitorAuthToken),
            redirect_on_error=redirectOnError,
        )
    )


@public_router.post(
    "/urls/published",
    response_model=PublishedLookupOut,
    summary="Resolve a published URL for a visitor (no token needed)",
)
@staged
async def resolve_published_url(
    request: Request, body: Annotated[ResolvePublishedUrl, Body()]
) -> JSON:
    # Staged only to read: an anonymous POST must not take the write lock (SQLite's is global).
    payload = body.visitor
    async with unit_of_work(request.app.state.engine, write=False) as conn:
        return ok(
            await publishing.lookup(
                conn,
                request.app.state.base_url,
                _public(request),
                body.url,
                Visitor(
                    token=payload.jwtToken if payload else None,
                    unsigned=payload.unsignedClaims if payload else None,
                    kind=payload.type if payload else "human",
                ),
                redirect_on_error=body.redirectOnError,
            )
        )
