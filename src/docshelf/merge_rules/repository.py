from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import members


async def members_among(
    conn: AsyncConnection, org_id: str, user_ids: Collection[str]
) -> dict[str, str]:
    """Which of `user_ids` are members of the organization, with their roles."""
    rows = await conn.execute(
        sa.select(members.c.user_id, members.c.role).where(
            members.c.organization_id == org_id, members.c.user_id.in_(list(user_ids))
        )
    )
    return {r.user_id: r.role for r in rows}
