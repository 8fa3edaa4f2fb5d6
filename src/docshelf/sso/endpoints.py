from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Cookie, Query, Request
from starlette.responses import RedirectResponse, Response

from docshelf.auth.context import Context
from docshelf.kit.errors import BadRequest
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.sso import login, service
from docshelf.sso.schemas import (
    CreateSAMLProvider,
    SAMLProviderList,
    SAMLProviderOut,
    SessionToken,
    SSOProviderLogins,
    UpdateSAMLProvider,
)

router = domain_router(tags=["sso"])


@router.get(
    "/orgs/{organizationId}/saml", response_model=SAMLProviderList, summary="List SAML providers"
)
async def list_saml_providers(organizationId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_providers(ctx, organizationId, paging))


@router.post(
    "/orgs/{organizationId}/saml",
    response_model=SAMLProviderOut,
    status_code=201,
    summary="Create a SAML provider",
)
async def create_saml_provider(organizationId: str, body: CreateSAMLProvider, ctx: Context) -> JSON:
    created = await service.create_provider(ctx, organizationId, body)
    return ok(created, 201, headers={"Location": created["urls"]["location"]})


@router.get(
    "/orgs/{organizationId}/saml/{samlProviderId}",
    response_model=SAMLProviderOut,
    summary="SAML provider",
)
async def get_saml_provider(organizationId: str, samlProviderId: str, ctx: Context) -> JSON:
    return ok(await service.get_provider(ctx, organizationId, samlProviderId))


@router.patch(
    "/orgs/{organizationId}/saml/{samlProviderId}",
    response_model=SAMLProviderOut,
    summary="Update a SAML provider",
)
async def update_saml_provider(
    organizationId: str, samlProviderId: str, body: UpdateSAMLProvider, ctx: Context
) -> JSON:
    return ok(await service.update_provider(ctx, organizationId, samlProviderId, body))


@router.delete(
    "/orgs/{organizationId}/saml/{samlProviderId}",
    status_code=205,
    summary="Delete a SAML provider",
)
async def delete_saml_provider(organizationId: str, samlProviderId: str, ctx: Context) -> Response:
    await service.delete_provider(ctx, organizationId, samlProviderId)
    return empty(205)


@router.get(
    "/orgs/{organizationId}/sso",
    response_model=SSOProviderLogins,
    summary="List the organization's SSO logins",
)
async def list_sso_logins(organizationId: str, ctx: Context) -> JSON:
    return ok(await service.list_logins(ctx, organizationId))


# -- the service provider, for browsers: not GitBook API routes, so outside /v1 and the API's
# OpenAPI description. Unauthenticated by nature (the SAML response or the cookie proves who
# calls); each opens its own short transactions (sso.login).

browser_router = APIRouter(prefix="/sso", include_in_schema=False)

SessionCookie = Annotated[str | None, Cookie(alias=login.COOKIE)]


def _browser(request: Request) -> login.Browser:
    state = request.app.state
    return login.Browser(
        engine=state.engine,
        base_url=state.base_url,
        session_hours=state.settings.sso_session_hours,
    )


def _form(body: bytes) -> dict[str, str]:
    try:
        fields = parse_qs(body.decode("ascii"), max_num_fields=16, keep_blank_values=True)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("Expected a form (application/x-www-form-urlencoded)") from None
    return {name: values[0] for name, values in fields.items() if len(values) == 1}


@browser_router.get("/saml/{providerId}/metadata")
async def saml_metadata(providerId: str, request: Request) -> Response:
    xml = await login.metadata(_browser(request), providerId)
    return Response(xml, media_type="application/samlmetadata+xml")


@browser_router.get("/saml/{providerId}/start")
async def start_saml_login(
    providerId: str, request: Request, next: Annotated[str | None, Query(max_length=2048)] = None
) -> Response:
    location = await login.start(_browser(request), providerId, next)
    return RedirectResponse(location, status_code=303, headers={"Cache-Control": "no-store"})


@browser_router.post("/saml/{providerId}/acs")
async def saml_assertion_consumer(providerId: str, request: Request) -> Response:
    # The HTTP-POST binding: a urlencoded form with SAMLResponse and maybe RelayState.
    form = _form(await request.body())
    browser = _browser(request)
    value, max_age = await login.consume(browser, providerId, form.get("SAMLResponse", ""))
    response = RedirectResponse(
        f"{browser.base_url}{login.safe_next(form.get('RelayState'))}",
        status_code=303,
        headers={"Cache-Control": "no-store"},
    )
    response.set_cookie(
        login.COOKIE,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        secure=browser.base_url.startswith("https://"),
        samesite="lax",
    )
    return response


@browser_router.post("/token", response_model=SessionToken)
async def token_from_session(request: Request, session: SessionCookie = None) -> JSON:
    """A new API token for the SSO session's user (see README, "Single sign-on")."""
    return ok({"token": await login.token_for_session(_browser(request), session)}, 201)


@browser_router.post("/logout")
async def end_session(request: Request, session: SessionCookie = None) -> Response:
    await login.logout(_browser(request), session)
    response = empty(204)
    response.delete_cookie(login.COOKIE, path="/")
    return response
