"""The service provider: the browser's side of a SAML login (start, assertion consumer) and the
session it opens (a cookie; an API token obtained with it; logout).

Each step is staged like kit.context.Staged: a short read, the SAML work in the offload pool
with no transaction open, then one short write that re-reads what the read saw. Any refusal
raises before the write commits, so a refused response leaves no trace: no user, member,
session, used assertion or consumed request."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.auth.service import create_token
from docshelf.authz.guard import not_found
from docshelf.events import event, outbox
from docshelf.kit import offload
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    ServiceUnavailable,
    Unauthorized,
)
from docshelf.kit.ids import new_id
from docshelf.kit.validation import has_controls
from docshelf.member import repository as member_repository
from docshelf.organization import repository as org_repository
from docshelf.sso import certificate, repository, saml
from docshelf.sso.presenter import Destination, service_urls
from docshelf.team import repository as team_repository
from docshelf.user import repository as user_repository

log = logging.getLogger("docshelf.sso")

COOKIE = "docshelf_session"
# An AuthnRequest may be answered this long after it was issued (the user logging in at the
# identity provider); then its id is forgotten.
REQUEST_LIFETIME = timedelta(minutes=10)
# pysaml2's work on one message: milliseconds normally; past this its worker is killed.
SAML_SECONDS = 20.0
_EMAIL = re.compile(r"^[^\s@]{1,64}@[^\s@]{1,255}$")
_REFUSED = "SAML response refused: "
_LOGIN_REFUSED = "SAML login refused: "
_UNKNOWN_LINK = (
    "This link is unknown, already used or expired: ask for a new one (POST /v1/user/saml/{}/link)"
)


@dataclass(frozen=True, slots=True)
class Browser:
    engine: AsyncEngine
    base_url: str
    session_hours: int


def hash_session(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def safe_next(path: str | None) -> str:
    """Where to land after the login: a path on this site only (never another host)."""
    if (
        not path
        or not path.startswith("/")
        or path.startswith("//")
        or "\\" in path
        or len(path) > 2048
        or has_controls(path, multiline=False)
    ):
        return "/"
    return path


def _partner(row: sa.RowMapping, base_url: str) -> saml.Partner:
    urls = service_urls(base_url, row["id"])
    return saml.Partner(
        idp_entity_id=row["entity_id"],
        sso_url=row["sso_url"],
        certificate=row["certificate"],
        sp_entity_id=urls["entityID"],
        acs_url=urls["acsURL"],
    )


async def _active_partner(b: Browser, provider_id: str) -> tuple[sa.RowMapping, saml.Partner]:
    if saml.xmlsec_binary() is None:
        raise ServiceUnavailable("Single sign-on is unavailable: xmlsec1 is not installed")
    async with unit_of_work(b.engine, write=False) as conn:
        row = await repository.get_active(conn, provider_id)
    if row is None:
        not_found("SAML provider")
    try:
        certificate.check(row["certificate"], utcnow())
    except certificate.CertificateError as exc:
        raise BadRequest(f"The SAML provider's certificate is not usable: {exc}") from None
    return row, _partner(row, b.base_url)


async def metadata(b: Browser, provider_id: str) -> str:
    """Our service provider metadata for one provider (pending ones too: an admin sets up the
    identity provider's side before pasting its settings here)."""
    async with unit_of_work(b.engine, write=False) as conn:
        exists = await repository.exists(conn, provider_id)
    if not exists:
        not_found("SAML provider")
    urls = service_urls(b.base_url, provider_id)
    return saml.sp_metadata(urls["entityID"], urls["acsURL"])


BROWSER_COOKIE = "docshelf_sso_browser"
_NONCE = re.compile(r"^[A-Za-z0-9_-]{43}$")


def new_browser_nonce() -> str:
    return secrets.token_urlsafe(32)


def usable_nonce(value: str | None) -> str | None:
    return value if value is not None and _NONCE.fullmatch(value) else None


async def destination(b: Browser, provider_id: str, link_code: str | None) -> Destination:
    """Where a start URL would send the browser, for a browser that did not come from one of
    our pages: it is shown and confirmed rather than followed (any user can create an
    organization and set its SSO URL, so a bare redirect would be an open one)."""
    row, partner = await _active_partner(b, provider_id)
    linking = None
    async with unit_of_work(b.engine, write=False) as conn:
        org = await org_repository.get(conn, row["organization_id"])
        if link_code is not None:
            owner = await repository.link_code_user(
                conn, hash_session(link_code), provider_id, utcnow()
            )
            account = None if owner is None else await user_repository.get_by_id(conn, owner)
            if account is None:
                raise BadRequest(_UNKNOWN_LINK.format(provider_id))
            linking = str(account["email"])
    assert org is not None  # providers go with their organization
    return Destination(
        organization=str(org["title"]),
        label=str(row["label"]),
        host=urlsplit(partner.sso_url).hostname or "",
        linking=linking,
    )


async def start(
    b: Browser, provider_id: str, next_path: str | None, nonce: str, link_code: str | None
) -> str:
    """The identity provider's URL with a new AuthnRequest, remembered with the browser's
    nonce, where to land, and (with a link code) the account the login links."""
    row, partner = await _active_partner(b, provider_id)
    request_id, location = await _offload(
        saml.authn_request, partner, "", tenant=row["organization_id"]
    )
    now = utcnow()
    async with unit_of_work(b.engine) as conn:
        link_user = None
        if link_code is not None:
            link_user = await repository.consume_link_code(
                conn, hash_session(link_code), provider_id, now
            )
            if link_user is None:
                raise BadRequest(_UNKNOWN_LINK.format(provider_id))
        await repository.remember_request(
            conn,
            request_id,
            provider_id,
            now + REQUEST_LIFETIME,
            now,
            browser_hash=hash_session(nonce),
            next_path=safe_next(next_path),
            link_user_id=link_user,
        )
    return location


# A SAMLResponse is a few kilobytes, tens with many attributes; the form is refused past this
# before any XML work (a larger post costs the parse lane for every organization).
MAX_FORM_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Session:
    value: str
    max_age: int
    next_path: str


async def consume(b: Browser, provider_id: str, encoded: str, nonce: str | None) -> Session:
    """Verifies a SAMLResponse and logs its subject in."""
    if not encoded:
        raise BadRequest(_REFUSED + "SAMLResponse is missing")
    provider, partner = await _active_partner(b, provider_id)
    if nonce is None:
        # Before any XML work: a response posted by a browser that started no login here.
        raise BadRequest(
            _REFUSED + "this browser did not start a login here (its login cookie is missing); "
            "start again from the organization's login link"
        )
    verified = await _offload(
        saml.verify_response, partner, encoded, tenant=provider["organization_id"]
    )
    if not _EMAIL.match(verified.email) or has_controls(verified.email, multiline=False):
        raise BadRequest(_REFUSED + "the asserted e-mail address is not valid")
    now = utcnow()
    async with unit_of_work(b.engine) as conn:
        row = await repository.get_active(conn, provider_id)
        if row is None or _partner(row, b.base_url) != partner:
            raise BadRequest(_REFUSED + "the provider's settings changed during the login")
        if await repository.assertion_used(conn, provider_id, verified.assertion_id):
            raise BadRequest(_REFUSED + "this assertion was already used")
        request = await repository.consume_request(conn, verified.in_response_to, provider_id, now)
        if request is None:
            raise BadRequest(
                _REFUSED + "it answers no pending request of ours (InResponseTo unknown, "
                "already answered or expired)"
            )
        if not hmac.compare_digest(request["browser_hash"] or "", hash_session(nonce)):
            raise BadRequest(_REFUSED + "it answers a login started in another browser")
        # Kept until pysaml2 itself would refuse the assertion as expired.
        keep_until = max(verified.expires_at, now) + timedelta(seconds=saml.CLOCK_SKEW_SECONDS)
        await repository.record_assertion(conn, provider_id, verified.assertion_id, keep_until, now)
        user_id = await _account(conn, row, verified, request["link_user_id"], now)
        await _join(conn, row, user_id, now)
        value = "dss_" + secrets.token_urlsafe(32)
        max_age = b.session_hours * 3600
        await repository.insert_session(
            conn,
            session_id=new_id(),
            user_id=user_id,
            provider_id=provider_id,
            session_hash=hash_session(value),
            now=now,
            expires_at=now + timedelta(seconds=max_age),
        )
    return Session(value, max_age, request["next_path"] or "/")


async def _account(
    conn: AsyncConnection,
    provider: sa.RowMapping,
    verified: saml.Verified,
    link_user_id: str | None,
    now: datetime,
) -> str:
    """The account the provider's subject logs in to: the identity rule (README, "Single
    sign-on"). A provider speaks only for the subjects linked to it; an existing account is
    linked when its owner asked for it (a link code) or when the provider's organization
    verified the e-mail's domain; never by the e-mail alone."""
    provider_id = provider["id"]
    org_id = provider["organization_id"]
    linked = await repository.identity_user(conn, provider_id, verified.subject)
    if link_user_id is not None:
        # The code says which account asked; the identity must be that account's own, as its
        # e-mail shows: else anyone could have another's login land in their account by
        # getting them to open a link URL of theirs.
        account = await user_repository.get_by_id(conn, link_user_id)
        if account is None or account["email"] != verified.email:
            raise Forbidden(
                _LOGIN_REFUSED + f"the identity provider signed in {verified.email}, not the "
                "account that asked to link it: sign in there as that account"
            )
        if linked is not None and linked != link_user_id:
            raise Conflict(
                _LOGIN_REFUSED + f"this identity of {provider['label']} is already linked to "
                "another account"
            )
        if linked is None:
            await repository.link_identity(conn, provider_id, verified.subject, link_user_id, now)
        return link_user_id
    if linked is not None:
        return linked
    domain = verified.email.rsplit("@", 1)[1]
    domain_org = await org_repository.domain_owner(conn, domain)
    existing = await user_repository.get_by_email(conn, verified.email)
    if existing is None:
        if domain_org is not None and domain_org != org_id:
            raise Forbidden(
                _LOGIN_REFUSED + f"the e-mail domain {domain} belongs to another organization"
            )
        user_id = new_id()
        name = (verified.display_name or verified.email.split("@", 1)[0])[:255]
        if has_controls(name, multiline=False):
            name = verified.email.split("@", 1)[0]
        await user_repository.insert(
            conn, user_id=user_id, email=verified.email, display_name=name, now=now
        )
    elif domain_org == org_id:
        user_id = str(existing["id"])
    else:
        raise Forbidden(
            _LOGIN_REFUSED + "an account with this e-mail address already exists and is not "
            f"linked to {provider['label']}. Its owner can link it: with the account's API "
            f"token, POST /v1/user/saml/{provider_id}/link and open the URL it answers"
        )
    await repository.link_identity(conn, provider_id, verified.subject, user_id, now)
    return user_id


async def _join(
    conn: AsyncConnection, provider: sa.RowMapping, user_id: str, now: datetime
) -> None:
    """A member with the provider's default role and team on their first login; marked as an
    SSO member. Only ever in the provider's own organization."""
    org_id = provider["organization_id"]
    member = await member_repository.get(conn, org_id, user_id)
    if member is None:
        await member_repository.insert(
            conn, org_id=org_id, user_id=user_id, role=provider["default_role"], now=now
        )
        await outbox.record(
            conn,
            event.MEMBER_JOINED,
            organization=org_id,
            actor_id=user_id,
            data={"userId": user_id, "role": provider["default_role"], "sso": True},
        )
        team_id = provider["default_team_id"]
        if team_id is not None:
            await team_repository.add_member(
                conn, team_id=team_id, org_id=org_id, user_id=user_id, role="member", now=now
            )
    elif member["disabled"]:
        raise Forbidden("Your membership of this organization is disabled")
    await member_repository.update(conn, org_id, user_id, {"sso": True})


T = TypeVar("T")


async def _offload(fn: Callable[..., T], *args: object, tenant: str) -> T:
    # Taking turns with other organizations' page parses and logins: one organization's
    # logins cannot hold the lane from the others.
    try:
        return await offload.run(fn, *args, seconds=SAML_SECONDS, lane="parse", tenant=tenant)
    except saml.SamlRefused as exc:
        log.info("SAML refused: %s", exc)
        raise BadRequest(_REFUSED + str(exc)) from None
    except (offload.OffloadTimeout, offload.OffloadCrashed):
        raise BadRequest(_REFUSED + "it could not be processed within the limits") from None


async def session_user(conn: AsyncConnection, value: str | None, org_id: str) -> str | None:
    """The user of a live session cookie opened by a provider of `org_id`, or None: how the
    published reader knows a member. A session never counts in another organization."""
    if not value:
        return None
    found = await repository.session_user(conn, hash_session(value), utcnow())
    if found is None or found[1] != org_id:
        return None
    return found[0]


async def token_for_session(b: Browser, value: str | None) -> str:
    """A new API token of the session's user, which acts only in the provider's organization
    (shown once, like any API token)."""
    async with unit_of_work(b.engine) as conn:
        found = None
        if value:
            found = await repository.session_user(conn, hash_session(value), utcnow())
        if found is None:
            raise Unauthorized("No live SSO session: log in through your organization's SSO")
        user_id, org_id = found
        if await member_repository.belongs_elsewhere(conn, user_id, org_id):
            raise Forbidden(
                "This account belongs to other organizations too, and a token made from one "
                "organization's single sign-on acts only in it: use an API token of the "
                "account's own"
            )
        return await create_token(conn, user_id, organization_id=org_id)


async def logout(b: Browser, value: str | None) -> None:
    if value:
        async with unit_of_work(b.engine) as conn:
            await repository.delete_session(conn, hash_session(value))
