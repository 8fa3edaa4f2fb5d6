"""The table of contents: every router mounted under /v1.

Routers in PUBLIC_ROUTERS answer without a token; every other router sits behind
authentication. The unauthenticated test matrix reads PUBLIC_PATHS from here."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI

from docshelf.audit.endpoints import router as audit_router
from docshelf.auth.context import authenticated_actor
from docshelf.change_request.endpoints import router as change_request_router
from docshelf.collection.endpoints import router as collection_router
from docshelf.comment.endpoints import router as comment_router
from docshelf.content.endpoints import public_router as download_router
from docshelf.content.endpoints import router as content_router
from docshelf.custom_field.endpoints import router as custom_field_router
from docshelf.gitsync.endpoints import api_router as git_sync_router
from docshelf.imports.endpoints import router as import_router
from docshelf.imports.endpoints import runs_router as import_runs_router
from docshelf.invite.endpoints import router as invite_router
from docshelf.links.endpoints import router as links_router
from docshelf.member.endpoints import router as member_router
from docshelf.meta.endpoints import router as meta_router
from docshelf.openapi_spec.endpoints import router as openapi_spec_router
from docshelf.organization.endpoints import router as organization_router
from docshelf.pdf.endpoints import router as pdf_router
from docshelf.permission.endpoints import router as permission_router
from docshelf.review.endpoints import router as review_router
from docshelf.search.endpoints import router as search_router
from docshelf.share_link.endpoints import router as share_link_router
from docshelf.site.endpoints import public_router as published_router
from docshelf.site.endpoints import router as site_router
from docshelf.space.endpoints import router as space_router
from docshelf.sso.endpoints import browser_router as sso_browser_router
from docshelf.sso.endpoints import router as sso_router
from docshelf.team.endpoints import router as team_router
from docshelf.translation.endpoints import router as translation_router
from docshelf.user.endpoints import router as user_router
from docshelf.webhooks.endpoints import router as webhook_router

AUTHENTICATED_ROUTERS: tuple[APIRouter, ...] = (
    meta_router,
    user_router,
    organization_router,
    member_router,
    team_router,
    invite_router,
    # -- spaces and collections --
    collection_router,
    space_router,
    permission_router,
    change_request_router,
    # -- comments --
    comment_router,
    # -- content --
    content_router,
    links_router,
    import_router,
    import_runs_router,
    git_sync_router,
    search_router,
    # -- exports --
    pdf_router,
    # -- reviews --
    review_router,
    # -- custom fields --
    custom_field_router,
    # -- translations --
    translation_router,
    # -- single sign-on --
    sso_router,
    # -- sites --
    site_router,
    share_link_router,
    # -- OpenAPI specs --
    openapi_spec_router,
    # -- events: webhooks and the audit log --
    webhook_router,
    audit_router,
)

# File downloads carry their own signed, expiring token in the path. Published-URL look-ups
# are GitBook's token-free operations: the visitor's share key or visitor token decides.
PUBLIC_ROUTERS: tuple[APIRouter, ...] = (download_router, published_router)

# Outside /v1 and the OpenAPI description; they authenticate by SAML response or session cookie.
BROWSER_ROUTERS: tuple[APIRouter, ...] = (sso_browser_router,)

PUBLIC_PATHS: frozenset[tuple[str, str]] = frozenset(
    (method, f"/v1{getattr(route, 'path', '')}")
    for router in PUBLIC_ROUTERS
    for route in router.routes
    for method in getattr(route, "methods", ())
)
# The same routes as path prefixes (up to their first parameter): what the edge counts by client
# address, since a token sent to them names nobody.
PUBLIC_PREFIXES: tuple[str, ...] = tuple(sorted({p.split("{", 1)[0] for _, p in PUBLIC_PATHS}))


def mount_v1(app: FastAPI) -> None:
    """Each domain router is included once, straight under /v1: one level of routing to match."""
    for router in AUTHENTICATED_ROUTERS:
        # Secure by default: a route authenticates even if its handler never asks who calls.
        app.include_router(router, prefix="/v1", dependencies=[Depends(authenticated_actor)])
    for router in PUBLIC_ROUTERS:
        app.include_router(router, prefix="/v1")
    # Not GitBook API routes: the SAML service provider's browser endpoints (/sso/...).
    for router in BROWSER_ROUTERS:
        app.include_router(router)
