"""Download links for file bytes: a signed, expiring token in the path, served by the API itself.

The token names the space and the blob and carries the file's name and type, signed with a key
kept in the database (every process signs alike). It is unguessable without the key and stops
working when it expires. Serving it also checks, in one query on two primary keys, that the
space exists, is not deleted and still references the blob: deleting or purging a space stops
its links at once, not when they expire.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content.snapshot import Record
from docshelf.kit import instance
from docshelf.kit.clock import utcnow
from docshelf.kit.errors import Forbidden, NotFound
from docshelf.models import space_blobs, spaces

TTL = timedelta(hours=1)
_KEY = "file_download_secret"
_AUDIENCE = "docshelf-file"


async def signer(conn: AsyncConnection, base_url: str, space_id: str) -> Any:
    """A function giving each file record of the space its download URL."""
    secret = await instance.get_or_create(conn, _KEY, lambda: secrets.token_urlsafe(48))
    expires = int((utcnow() + TTL).timestamp())

    # PyJWT (and the cryptography it loads) only where a link is signed or opened.
    import jwt

    def url(rec: Record) -> str:
        claims = {
            "aud": _AUDIENCE,
            "s": space_id,
            "b": rec["blob"],
            "n": rec["name"],
            "t": rec["contentType"],
            "exp": expires,
        }
        return f"{base_url}/v1/downloads/{jwt.encode(claims, secret, algorithm='HS256')}"

    return url


async def open_token(conn: AsyncConnection, token: str) -> dict[str, Any]:
    import jwt

    secret = await instance.get_or_create(conn, _KEY, lambda: secrets.token_urlsafe(48))
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            audience=_AUDIENCE,
            options={"verify_exp": False, "require": ["exp", "aud"]},
        )
    except jwt.PyJWTError:
        raise NotFound("Download link not found") from None
    if claims["exp"] < utcnow().timestamp():
        raise Forbidden("This download link has expired; read the file again for a fresh link")
    held = await conn.execute(
        sa.select(space_blobs.c.blob_key)
        .join(spaces, spaces.c.id == space_blobs.c.space_id)
        .where(
            space_blobs.c.space_id == claims["s"],
            space_blobs.c.blob_key == claims["b"],
            spaces.c.deleted_at.is_(None),
        )
    )
    if held.first() is None:
        raise NotFound("Download link not found")
    return claims
