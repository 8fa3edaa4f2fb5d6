from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.models import events


def in_organization(
    org_id: str, *, actor: str | None, space: str | None, type: str | None
) -> sa.Select[Any]:
    stmt = sa.select(events).where(events.c.organization_id == org_id)
    if actor is not None:
        stmt = stmt.where(events.c.actor_id == actor)
    if space is not None:
        stmt = stmt.where(events.c.space_id == space)
    if type is not None:
        stmt = stmt.where(events.c.type == type)
    return stmt
