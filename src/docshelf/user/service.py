from __future__ import annotations

import re
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.guard import not_found
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict
from docshelf.kit.ids import new_id
from docshelf.user import repository
from docshelf.user.presenter import present_user

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def me(ctx: Ctx) -> dict[str, Any]:
    a = ctx.actor
    row = {
        "id": a.user_id,
        "email": a.email,
        "display_name": a.display_name,
        "photo_url": a.photo_url,
    }
    return present_user(row, ctx.base_url)


async def get_user(ctx: Ctx, user_id: str) -> dict[str, Any]:
    row = await repository.get_visible(ctx.conn, ctx.actor.user_id, user_id)
    if row is None:
        not_found("User")
    return present_user(row, ctx.base_url)


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    if not _EMAIL.match(email) or len(email) > 320:
        raise BadRequest(f"Invalid e-mail address: {email!r}")
    return email


async def create_user(conn: AsyncConnection, *, email: str, name: str | None = None) -> str:
    email = normalize_email(email)
    if await repository.get_by_email(conn, email) is not None:
        raise Conflict(f"A user with e-mail {email} already exists")
    user_id = new_id()
    display = (name or email.split("@")[0]).strip()[:255] or email
    await repository.insert(conn, user_id=user_id, email=email, display_name=display, now=utcnow())
    return user_id


async def require_by_email(conn: AsyncConnection, email: str) -> str:
    row = await repository.get_by_email(conn, email)
    if row is None:
        raise BadRequest(f"No user with e-mail {email.strip().lower()}")
    return str(row["id"])
