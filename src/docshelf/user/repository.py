from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import members, users

USER_COLUMNS = (users.c.id, users.c.email, users.c.display_name, users.c.photo_url)


_MINE = sa.select(members.c.organization_id).where(
    members.c.user_id == sa.bindparam("viewer_id"), members.c.role.is_not(None)
)
_VISIBLE = sa.select(*USER_COLUMNS).where(
    users.c.id == sa.bindparam("user_id"),
    sa.or_(
        users.c.id == sa.bindparam("viewer_id"),
        sa.exists().where(members.c.user_id == users.c.id, members.c.organization_id.in_(_MINE)),
    ),
)


async def get_visible(conn: AsyncConnection, viewer_id: str, user_id: str) -> sa.RowMapping | None:
    """A user is visible to themselves and to the full members (non-guests) of any organization
    they belong to: exactly who the member routes show them to (member.policy.can_view_member),
    so a guest reads no one else's e-mail here either."""
    values = {"viewer_id": viewer_id, "user_id": user_id}
    return (await conn.execute(_VISIBLE, values)).mappings().first()


async def get_by_email(conn: AsyncConnection, email: str) -> sa.RowMapping | None:
    stmt = sa.select(*USER_COLUMNS).where(users.c.email == email.strip().lower())
    return (await conn.execute(stmt)).mappings().first()


async def get_by_id(conn: AsyncConnection, user_id: str) -> sa.RowMapping | None:
    stmt = sa.select(*USER_COLUMNS).where(users.c.id == user_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert(
    conn: AsyncConnection, *, user_id: str, email: str, display_name: str, now: datetime
) -> None:
    await conn.execute(
        sa.insert(users).values(id=user_id, email=email, display_name=display_name, created_at=now)
    )


async def count(conn: AsyncConnection) -> int:
    return int((await conn.execute(sa.select(sa.func.count()).select_from(users))).scalar_one())
