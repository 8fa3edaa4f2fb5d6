from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth import repository, tokens
from docshelf.kit.clock import utcnow
from docshelf.kit.errors import BadRequest, Unauthorized


@dataclass(frozen=True, slots=True)
class Actor:
    user_id: str
    token_id: str
    email: str
    display_name: str
    photo_url: str | None


async def authenticate(conn: AsyncConnection, token: str | None) -> Actor:
    """`token` is what auth.header read from the request (None: no Authorization header)."""
    if token is None:
        raise Unauthorized()
    if not tokens.is_well_formed(token):
        raise Unauthorized("Invalid API token")
    hashed = tokens.hash_token(token)
    row = await repository.find_active_token(conn, hashed)
    if row is None or not tokens.same_hash(hashed, row["token_hash"]):
        raise Unauthorized("Invalid or revoked API token")
    return Actor(
        user_id=row["user_id"],
        token_id=row["token_id"],
        email=row["email"],
        display_name=row["display_name"],
        photo_url=row["photo_url"],
    )


async def still_authenticated(conn: AsyncConnection, token_id: str) -> None:
    """For work that authenticated earlier than it writes: the token must still be valid."""
    if not await repository.token_is_active(conn, token_id):
        raise Unauthorized("Invalid or revoked API token")


async def create_token(conn: AsyncConnection, user_id: str) -> str:
    token = tokens.generate()
    await repository.insert_token(
        conn,
        user_id=user_id,
        token_hash=tokens.hash_token(token),
        prefix=tokens.display_prefix(token),
        now=utcnow(),
    )
    return token


async def revoke_token(conn: AsyncConnection, token: str) -> None:
    if not tokens.is_well_formed(token) or not await repository.revoke_token(
        conn, tokens.hash_token(token), utcnow()
    ):
        raise BadRequest("No active API token matches")
