"""Download links for file bytes: a signed token in the path, served by the API itself.

The token names the space and the blob and carries the file's name and type, signed with a key
kept in the database (every process signs alike), so it is unguessable without the key. A
file's link has no expiry, like the revision that lists it: the same file gives the same link,
which a client may keep as long as it keeps the revision (GitBook's renderer keeps revisions
indefinitely, so an expiring link broke its images). Serving it checks, in one query on two
primary keys, that the space exists, is not deleted and still references the blob: deleting or
purging a space stops its links at once. An export's link (a rendered PDF, `export_url`)
expires after TTL and is checked against the space's kept exports instead of its files.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content.tree.snapshot import Record
from docshelf.kit import instance
from docshelf.kit.clock import utcnow
from docshelf.kit.errors import Forbidden, NotFound
from docshelf.models import pdf_exports, space_blobs, spaces

TTL = timedelta(hours=1)
_KEY = "file_download_secret"
_AUDIENCE = "docshelf-file"


async def signer(conn: AsyncConnection, base_url: str, space_id: str) -> Any:
    """A function giving each file record of the space its download URL."""
    secret = await instance.get_or_create(conn, _KEY, lambda: secrets.token_urlsafe(48))

    # PyJWT (and the cryptography it loads) only where a link is signed or opened.
    import jwt

    def url(rec: Record) -> str:
        claims = {
            "aud": _AUDIENCE,
            "s": space_id,
            "b": rec["blob"],
            "n": rec["name"],
            "t": rec["contentType"],
        }
        return f"{base_url}/v1/downloads/{jwt.encode(claims, secret, algorithm='HS256')}"

    return url


async def export_url(
    conn: AsyncConnection, base_url: str, space_id: str, blob: str, name: str, content_type: str
) -> str:
    """A download link for a rendered export of the space (pdf/), valid for TTL."""
    import jwt

    secret = await instance.get_or_create(conn, _KEY, lambda: secrets.token_urlsafe(48))
    claims = {
        "aud": _AUDIENCE,
        "s": space_id,
        "b": blob,
        "n": name,
        "t": content_type,
        "x": 1,
        "exp": int((utcnow() + TTL).timestamp()),
    }
    return f"{base_url}/v1/downloads/{jwt.encode(claims, secret, algorithm='HS256')}"


async def open_token(conn: AsyncConnection, token: str) -> dict[str, Any]:
    import jwt

    secret = await instance.get_or_create(conn, _KEY, lambda: secrets.token_urlsafe(48))
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            audience=_AUDIENCE,
            options={"verify_exp": False, "require": ["aud"]},
        )
    except jwt.PyJWTError:
        raise NotFound("Download link not found") from None
    if claims.get("x") == 1 and not isinstance(claims.get("exp"), int):
        raise NotFound("Download link not found")
    if "exp" in claims and claims["exp"] < utcnow().timestamp():
        raise Forbidden("This download link has expired; read the file again for a fresh link")
    table = pdf_exports if claims.get("x") == 1 else space_blobs
    held = await conn.execute(
        sa.select(table.c.blob_key)
        .join(spaces, spaces.c.id == table.c.space_id)
        .where(
            table.c.space_id == claims["s"],
            table.c.blob_key == claims["b"],
            spaces.c.deleted_at.is_(None),
        )
        .limit(1)
    )
    if held.first() is None:
        raise NotFound("Download link not found")
    return claims


# Raster images are the only user files shown inline. Other kinds keep their type, as
# downloads, only where no browser runs or applies them: a page of ours could load a file
# labelled JavaScript or CSS as its own script or style whatever the Content-Disposition, and
# HTML, SVG or XML could run as a page. Anything not known to be inert is opaque bytes.
_INLINE = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"})
_INERT = frozenset(
    {
        "application/pdf",
        "application/zip",
        "application/gzip",
        "application/json",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint",
        "text/plain",
        "text/csv",
        "text/markdown",
    }
)
_INERT_FAMILIES = (
    "audio/",
    "video/",
    "application/vnd.openxmlformats-officedocument.",
    "application/vnd.oasis.opendocument.",
)


def served_type(content_type: str | None) -> tuple[str, bool]:
    """(the Content-Type to send for a user's file, whether it is shown inline). Parameters
    such as `; charset=utf-8` do not change what the type is."""
    bare = (content_type or "").split(";", 1)[0].strip().lower()
    if bare in _INLINE:
        return bare, True
    if bare in _INERT or bare.startswith(_INERT_FAMILIES):
        return bare, False
    return "application/octet-stream", False
