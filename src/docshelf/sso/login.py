"""The service provider: the browser's side of a SAML login (start, assertion consumer) and the
session it opens (a cookie; an API token obtained with it; logout).

Each step is staged like kit.context.Staged: a short read, the SAML work in the offload pool
with no transaction open, then one short write that re-reads what the read saw. Any refusal
raises before the write commits, so a refused response leaves no trace: no user, member,
session, used assertion or consumed request."""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.auth.service import create_token
from docshelf.authz.guard import not_found
from docshelf.kit import offload
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest, Forbidden, ServiceUnavailable, Unauthorized
from docshelf.kit.ids import new_id
from docshelf.kit.validation import has_controls
from docshelf.member import repository as member_repository
from docshelf.sso import certificate, repository, saml
from docshelf.sso.presenter import service_urls
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


async def start(b: Browser, provider_id: str, next_path: str | None) -> str:
    """The identity provider's URL with a new AuthnRequest, whose id is remembered."""
    _, partner = await _active_partner(b, provider_id)
    request_id, location = await _offload(saml.authn_request, partner, safe_next(next_path))
    now = utcnow()
    async with unit_of_work(b.engine) as conn:
        await repository.remember_request(
            conn, request_id, provider_id, now + REQUEST_LIFETIME, now
        )
    return location


async def consume(b: Browser, provider_id: str, encoded: str) -> tuple[str, int]:
    """Verifies a SAMLResponse and logs its subject in: (session cookie value, max-age)."""
    if not encoded or len(encoded) > 4 * 1024 * 1024:
        raise BadRequest(_REFUSED + "SAMLResponse is missing or too large")
    _, partner = await _active_partner(b, provider_id)
    verified = await _offload(saml.verify_response, partner, encoded)
    if not _EMAIL.match(verified.email) or has_controls(verified.email, multiline=False):
        raise BadRequest(_REFUSED + "the asserted e-mail address is not valid")
    now = utcnow()
    async with unit_of_work(b.engine) as conn:
        row = await repository.get_active(conn, provider_id)
        if row is None or _partner(row, b.base_url) != partner:
            raise BadRequest(_REFUSED + "the provider's settings changed during the login")
        if await repository.assertion_used(conn, provider_id, verified.assertion_id):
            raise BadRequest(_REFUSED + "this assertion was already used")
        if not await repository.consume_request(conn, verified.in_response_to, provider_id, now):
            raise BadRequest(
                _REFUSED + "it answers no pending request of ours (InResponseTo unknown, "
                "already answered or expired)"
            )
        # Kept until pysaml2 itself would refuse the assertion as expired.
        keep_until = max(verified.expires_at, now) + timedelta(seconds=saml.CLOCK_SKEW_SECONDS)
        await repository.record_assertion(conn, provider_id, verified.assertion_id, keep_until, now)
        user_id = await _join(conn, row, verified, now)
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
    return value, max_age


async def _join(
    conn: AsyncConnection, provider: sa.RowMapping, verified: saml.Verified, now: datetime
) -> str:
    """The user named by the e-mail, created if new; a member with the provider's default role
    and team on their first login; marked as an SSO member."""
    org_id = provider["organization_id"]
    user = await user_repository.get_by_email(conn, verified.email)
    if user is None:
        user_id = new_id()
        name = (verified.display_name or verified.email.split("@", 1)[0])[:255]
        if has_controls(name, multiline=False):
            name = verified.email.split("@", 1)[0]
        await user_repository.insert(
            conn, user_id=user_id, email=verified.email, display_name=name, now=now
        )
    else:
        user_id = user["id"]
    member = await member_repository.get(conn, org_id, user_id)
    if member is None:
        await member_repository.insert(
            conn, org_id=org_id, user_id=user_id, role=provider["default_role"], now=now
        )
        team_id = provider["default_team_id"]
        if team_id is not None:
            await team_repository.add_member(
                conn, team_id=team_id, org_id=org_id, user_id=user_id, role="member", now=now
            )
    elif member["disabled"]:
        raise Forbidden("Your membership of this organization is disabled")
    await member_repository.update(conn, org_id, user_id, {"sso": True})
    return str(user_id)


T = TypeVar("T")


async def _offload(fn: Callable[..., T], *args: object) -> T:
    try:
        return await offload.run(fn, *args, seconds=SAML_SECONDS, lane="parse")
    except saml.SamlRefused as exc:
        log.info("SAML refused: %s", exc)
        raise BadRequest(_REFUSED + str(exc)) from None
    except (offload.OffloadTimeout, offload.OffloadCrashed):
        raise BadRequest(_REFUSED + "it could not be processed within the limits") from None


async def session_user(conn: AsyncConnection, value: str | None) -> str | None:
    """The user of a live session cookie, or None: how the published reader knows a member."""
    if not value:
        return None
    return await repository.session_user(conn, hash_session(value), utcnow())


async def token_for_session(b: Browser, value: str | None) -> str:
    """A new API token of the session's user (shown once, like any API token)."""
    async with unit_of_work(b.engine) as conn:
        user_id = None
        if value:
            user_id = await repository.session_user(conn, hash_session(value), utcnow())
        if user_id is None:
            raise Unauthorized("No live SSO session: log in through your organization's SSO")
        return await create_token(conn, user_id)


async def logout(b: Browser, value: str | None) -> None:
    if value:
        async with unit_of_work(b.engine) as conn:
            await repository.delete_session(conn, hash_session(value))
