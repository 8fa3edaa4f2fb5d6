from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Cookie, Query, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from docshelf.auth.context import Context
from docshelf.kit.errors import BadRequest, Forbidden, PayloadTooLarge
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.sso import login, service
from docshelf.sso.presenter import confirm_page
from docshelf.sso.schemas import (
    CreateSAMLProvider,
    SAMLLink,
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
    status_code=204,
    summary="Delete a SAML provider",
)
async def delete_saml_provider(organizationId: str, samlProviderId: str, ctx: Context) -> Response:
    await service.delete_provider(ctx, organizationId, samlProviderId)
    return empty(204)


@router.get(
    "/orgs/{organizationId}/sso",
    response_model=SSOProviderLogins,
    summary="List the organization's SSO logins",
)
async def list_sso_logins(organizationId: str, ctx: Context) -> JSON:
    return ok(await service.list_logins(ctx, organizationId))


@router.post(
    "/user/saml/{samlProviderId}/link",
    response_model=SAMLLink,
    status_code=201,
    summary="Link an identity of a SAML provider to your account (Docshelf extension)",
    description=(
        "A one-time URL, valid 10 minutes: open it in a browser and log in at the identity "
        "provider, and the identity it asserts logs in to this account from then on. An "
        "existing account is never reached by an SSO login through its e-mail address alone."
    ),
)
async def link_saml_identity(samlProviderId: str, ctx: Context) -> JSON:
    return ok(await service.link(ctx, samlProviderId), 201)


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


def _same_origin(request: Request, base_url: str) -> bool:
    """A navigation or form post from one of our own pages (Fetch Metadata, else Origin)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site == "same-origin"
    origin = request.headers.get("origin")
    return origin is not None and origin == _origin(base_url)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _browser_cookie(response: Response, browser: login.Browser, nonce: str) -> None:
    # Sent back with the identity provider's cross-site POST to the ACS: SameSite=None needs
    # Secure, so on plain http (a local install) no SameSite is set and browsers' own default
    # applies (Chrome's lets a top-level POST through within two minutes).
    secure = browser.base_url.startswith("https://")
    response.set_cookie(
        login.BROWSER_COOKIE,
        nonce,
        max_age=int(login.REQUEST_LIFETIME.total_seconds()),
        path="/sso/saml/",
        httponly=True,
        secure=secure,
        samesite="none" if secure else None,
    )


async def _start(
    request: Request, provider_id: str, next_path: str | None, link: str | None
) -> Response:
    browser = _browser(request)
    nonce = login.usable_nonce(request.cookies.get(login.BROWSER_COOKIE))
    nonce = nonce or login.new_browser_nonce()
    location = await login.start(browser, provider_id, next_path, nonce, link)
    response = RedirectResponse(location, status_code=303, headers={"Cache-Control": "no-store"})
    _browser_cookie(response, browser, nonce)
    return response


NextPath = Annotated[str | None, Query(max_length=2048)]
LinkCode = Annotated[str | None, Query(max_length=64)]


@browser_router.get("/saml/{providerId}/start")
async def start_saml_login(
    providerId: str, request: Request, next: NextPath = None, link: LinkCode = None
) -> Response:
    """A page that names where the browser is about to go (and, for a link, which account it
    links) and asks to continue (a POST). Never a redirect: any user can create an organization
    and set its SSO URL, and published pages, which any organization writes, share this origin,
    so not even a same-origin link proves the browser's user chose that identity provider."""
    browser = _browser(request)
    where = await login.destination(browser, providerId, link)
    return HTMLResponse(
        confirm_page(where, request.url.path, login.safe_next(next), link),
        headers={
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
            "X-Frame-Options": "DENY",
        },
    )


@browser_router.post("/saml/{providerId}/start")
async def continue_saml_login(providerId: str, request: Request) -> Response:
    browser = _browser(request)
    if not _same_origin(request, browser.base_url):
        raise Forbidden("A login continues only from this site's own page")
    form = _form(await _limited_body(request, 8 * 1024))
    next_path = form.get("next")
    link = form.get("link") or None
    if (next_path is not None and len(next_path) > 2048) or (link is not None and len(link) > 64):
        raise BadRequest("Invalid form field 'next' or 'link': too long")
    return await _start(request, providerId, next_path, link)


async def _limited_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 once it passes `limit` bytes, before anything reads it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"The form is larger than {limit // 1024} KiB")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"The form is larger than {limit // 1024} KiB")
        chunks.append(chunk)
    return b"".join(chunks)


@browser_router.post("/saml/{providerId}/acs")
async def saml_assertion_consumer(providerId: str, request: Request) -> Response:
    # The HTTP-POST binding: a urlencoded form with SAMLResponse and maybe RelayState (unused:
    # where to land was stored with the request).
    form = _form(await _limited_body(request, login.MAX_FORM_BYTES))
    browser = _browser(request)
    session = await login.consume(
        browser,
        providerId,
        form.get("SAMLResponse", ""),
        login.usable_nonce(request.cookies.get(login.BROWSER_COOKIE)),
    )
    response = RedirectResponse(
        f"{browser.base_url}{session.next_path}",
        status_code=303,
        headers={"Cache-Control": "no-store"},
    )
    response.set_cookie(
        login.COOKIE,
        session.value,
        max_age=session.max_age,
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
