from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth import repository, site_token, tokens
from docshelf.auth.site_token import SiteGrant
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Caller
from docshelf.kit.errors import BadRequest, Forbidden, Unauthorized


@dataclass(frozen=True, slots=True)
class Actor:
    user_id: str
    token_id: str
    email: str
    display_name: str
    photo_url: str | None
    # The one organization a token made from an SSO session acts in; None for other tokens.
    organization_id: str | None = None
    # A site content token's published content (auth.site_token), read-only; None for API
    # tokens. Such a caller is nobody: no user, no membership, no token row.
    reads: SiteGrant | None = None


_OUT_OF_SCOPE = (
    "This token was made from an organization's single sign-on, and its account now belongs to "
    "other organizations too: it acts no more. Use an API token of the account's own"
)


async def authenticate(conn: AsyncConnection, token: str | None) -> Actor:
    """`token` is what auth.header read from the request (None: no Authorization header)."""
    if token is None:
        raise Unauthorized()
    if site_token.looks_like_one(token):
        return await _site_reader(conn, token)
    if not tokens.is_well_formed(token):
        raise Unauthorized("Invalid API token")
    hashed = tokens.hash_token(token)
    row = await repository.find_active_token(conn, hashed)
    if row is None or not tokens.same_hash(hashed, row["token_hash"]):
        raise Unauthorized("Invalid or revoked API token")
    if row["out_of_scope"]:
        raise Unauthorized(_OUT_OF_SCOPE)
    return Actor(
        user_id=row["user_id"],
        token_id=row["token_id"],
        email=row["email"],
        display_name=row["display_name"],
        photo_url=row["photo_url"],
        organization_id=row["token_org"],
    )


async def _site_reader(conn: AsyncConnection, token: str) -> Actor:
    grant = await site_token.open_token(conn, token, utcnow())
    if grant is None or not await repository.site_grant_live(conn, grant):
        raise Unauthorized("Invalid or expired site token: resolve the published URL again")
    return Actor(
        user_id="",
        token_id="",
        email="",
        display_name="Visitor",
        photo_url=None,
        organization_id=grant.organization_id,
        reads=grant,
    )


async def still_authenticated(conn: AsyncConnection, token_id: str) -> None:
    """For work that authenticated earlier than it writes: the token must still be valid."""
    if not await repository.token_is_active(conn, token_id):
        raise Unauthorized("Invalid or revoked API token")


async def create_token(
    conn: AsyncConnection, user_id: str, *, organization_id: str | None = None
) -> str:
    """`organization_id`: the token acts only in that organization (made from an SSO session)."""
    token = tokens.generate()
    await repository.insert_token(
        conn,
        user_id=user_id,
        token_hash=tokens.hash_token(token),
        prefix=tokens.display_prefix(token),
        now=utcnow(),
        organization_id=organization_id,
    )
    return token


def require_unscoped(actor: Caller, org_id: str | None = None) -> None:
    """For what would give a token made by an organization's SSO reach beyond it: a new
    organization, joining another one."""
    if actor.organization_id is not None and actor.organization_id != org_id:
        raise Forbidden(
            "A token made from an organization's single sign-on acts only in that organization"
        )


async def revoke_token(conn: AsyncConnection, token: str) -> None:
    if not tokens.is_well_formed(token) or not await repository.revoke_token(
        conn, tokens.hash_token(token), utcnow()
    ):
        raise BadRequest("No active API token matches")
