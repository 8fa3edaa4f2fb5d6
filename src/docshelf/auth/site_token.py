"""Site content tokens: what `POST /v1/urls/published` hands a renderer as `apiToken`
(GitBook's `SiteAPIToken`), so that it reads one site's published content, as one visitor,
read-only, and nothing else.

A token is a JWT signed (HS256) with an install-wide key kept in the database, so every process
mints and opens alike. Its claims are GitBook's (`kind: "site"`, organization, site, siteSpace,
siteSection, space, spaces, visitorType, claims) plus what Docshelf checks on every request: the
site's visibility when it was minted, the share link that opened it, a fingerprint of the
site's visitor key. `authenticate` re-reads those in one statement, so unpublishing the site,
changing its visibility, removing the space from it, deactivating the share link or
regenerating the visitor key stops the token at once, not when it expires.

Tokens are minted per UTC day and expire at 00:05 the next day (GitBook's bucket, which the
renderer's refresh margin expects): the same site, site space, visitor and day give the same
token, which the renderer uses as a cache key.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit import instance

_KEY = "site_token_secret"
_AUDIENCE = "docshelf-site"
_ALGORITHM = "HS256"
# Three base64url parts: told apart from API tokens (`dsk_…`) by shape alone.
_SHAPE = re.compile(r"^[A-Za-z0-9_-]{10,1024}\.[A-Za-z0-9_-]{2,16000}\.[A-Za-z0-9_-]{20,200}$")
# What a token may weigh: the visitor's claims it carries are bounded (a visitor token of 8 KB,
# unsigned claims within their bounds), and a token past this is refused when made.
MAX_LENGTH = 16384
_OVERLAP = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class SiteGrant:
    """The published content one site token opens, read-only."""

    organization_id: str
    site_id: str
    site_space_id: str
    space_id: str
    spaces: frozenset[str]
    visibility: str
    # The condition scope the visitor was given when the token was minted.
    scope: dict[str, Any] = field(hash=False, compare=False)
    section_id: str | None = None
    share_link_id: str | None = None
    visitor_key_print: str | None = None
    visitor_type: str = "human"


def looks_like_one(token: str) -> bool:
    return len(token) <= MAX_LENGTH and _SHAPE.match(token) is not None


def key_print(visitor_key: str | None) -> str | None:
    """A fingerprint of a site's visitor key: regenerating the key voids the tokens it opened."""
    if visitor_key is None:
        return None
    return hashlib.sha256(visitor_key.encode()).hexdigest()[:32]


async def _secret(conn: AsyncConnection) -> str:
    return await instance.get_or_create(conn, _KEY, lambda: secrets.token_urlsafe(48))


def _day_bounds(now: datetime) -> tuple[int, int]:
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return int(day.timestamp()), int((day + timedelta(days=1) + _OVERLAP).timestamp())


async def mint(
    conn: AsyncConnection, grant: SiteGrant, now: datetime, until: int | None = None
) -> str | None:
    """The token, or None if its claims make it too large to send. `until`: the visitor token's
    own expiry, which it never outlives."""
    import jwt  # PyJWT (and the cryptography it loads) only where a token is made or opened

    issued, expires = _day_bounds(now)
    if until is not None:
        expires = min(expires, until)
    claims: dict[str, Any] = {
        "aud": _AUDIENCE,
        "iat": issued,
        "exp": expires,
        "kind": "site",
        "organization": grant.organization_id,
        "site": grant.site_id,
        "siteSpace": grant.site_space_id,
        "space": grant.space_id,
        "spaces": sorted(grant.spaces),
        "visitorType": grant.visitor_type,
        "claims": grant.scope,
        "vis": grant.visibility,
    }
    if grant.section_id is not None:
        claims["siteSection"] = grant.section_id
    if grant.share_link_id is not None:
        claims["link"] = grant.share_link_id
    if grant.visitor_key_print is not None:
        claims["vkey"] = grant.visitor_key_print
    token = str(jwt.encode(claims, await _secret(conn), algorithm=_ALGORITHM))
    return token if looks_like_one(token) else None


async def open_token(conn: AsyncConnection, token: str, now: datetime) -> SiteGrant | None:
    """The grant of a token this install signed and that has not expired, else None. Whether
    the site still shows it is the caller's check (auth.repository.site_grant_live)."""
    import jwt

    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            await _secret(conn),
            algorithms=[_ALGORITHM],
            audience=_AUDIENCE,
            options={"require": ["exp", "aud", "iat"], "verify_exp": False},
        )
    except jwt.PyJWTError:
        return None
    if claims["exp"] <= now.timestamp():
        return None
    try:
        spaces = claims["spaces"]
        grant = SiteGrant(
            organization_id=str(claims["organization"]),
            site_id=str(claims["site"]),
            site_space_id=str(claims["siteSpace"]),
            space_id=str(claims["space"]),
            spaces=frozenset(str(s) for s in spaces),
            visibility=str(claims["vis"]),
            scope=dict(claims["claims"]),
            section_id=claims.get("siteSection"),
            share_link_id=claims.get("link"),
            visitor_key_print=claims.get("vkey"),
            visitor_type=str(claims.get("visitorType", "human")),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return grant
