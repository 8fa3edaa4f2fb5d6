from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.clock import utcnow
from docshelf.kit.db import upsert_insert
from docshelf.models import custom_field_values, custom_fields


def in_organization(org_id: str) -> sa.Select[Any]:
    return sa.select(custom_fields).where(custom_fields.c.organization_id == org_id)


async def get(
    conn: AsyncConnection, org_id: str, name: str, *, lock: bool = False
) -> sa.RowMapping | None:
    stmt = in_organization(org_id).where(custom_fields.c.name == name)
    if lock:
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).mappings().first()


async def insert(
    conn: AsyncConnection,
    *,
    field_id: str,
    org_id: str,
    name: str,
    type: str,
    title: str | None,
    description: str | None,
    placeholder: str | None,
    options: list[str] | None,
    now: datetime,
) -> bool:
    """False when the organization already has a field of that name. The unique constraint
    decides, so two concurrent creations cannot both succeed nor fail with a 500."""
    stmt = (
        upsert_insert(conn, custom_fields)
        .values(
            id=field_id,
            organization_id=org_id,
            name=name,
            type=type,
            title=title,
            description=description,
            placeholder=placeholder,
            # SQL NULL, not a JSON null, for "no options".
            options=options if options is not None else sa.null(),
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing()
    )
    return bool((await conn.execute(stmt)).rowcount == 1)


async def update(conn: AsyncConnection, field_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        sa.update(custom_fields).where(custom_fields.c.id == field_id).values(values)
    )


async def delete(conn: AsyncConnection, field_id: str) -> None:
    # Its values go with it through the foreign key's ON DELETE CASCADE.
    await conn.execute(sa.delete(custom_fields).where(custom_fields.c.id == field_id))


async def stored_values(conn: AsyncConnection, field_id: str) -> list[Any]:
    stmt = sa.select(custom_field_values.c.value).where(custom_field_values.c.field_id == field_id)
    return list((await conn.execute(stmt)).scalars())


async def values_for_space(
    conn: AsyncConnection, org_id: str, space_id: str, *, lock: bool = False
) -> list[sa.RowMapping]:
    """Every field of the organization, oldest first, with the space's value under `value` (None
    when unset). `lock` takes a share lock on the fields (PostgreSQL) so that a value validated
    against a field's options cannot be written while the options change."""
    stmt = (
        sa.select(custom_fields, custom_field_values.c.value.label("value"))
        .select_from(custom_fields)
        .outerjoin(
            custom_field_values,
            sa.and_(
                custom_field_values.c.field_id == custom_fields.c.id,
                custom_field_values.c.space_id == space_id,
            ),
        )
        .where(custom_fields.c.organization_id == org_id)
        .order_by(custom_fields.c.created_at, custom_fields.c.id)
    )
    if lock:
        stmt = stmt.with_for_update(read=True, of=custom_fields)
    return list((await conn.execute(stmt)).mappings().all())


async def set_values(
    conn: AsyncConnection,
    space_id: str,
    values: dict[str, Any],
    *,
    now: datetime | None = None,
) -> None:
    """Sets the space's value of each field id given; None removes the value. Values must already
    be validated (`values.validate_value`) against fields of the space's organization."""
    now = now or utcnow()
    removed = [field_id for field_id, value in values.items() if value is None]
    if removed:
        await conn.execute(
            sa.delete(custom_field_values).where(
                custom_field_values.c.space_id == space_id,
                custom_field_values.c.field_id.in_(removed),
            )
        )
    rows = [
        {"space_id": space_id, "field_id": field_id, "value": value, "updated_at": now}
        for field_id, value in values.items()
        if value is not None
    ]
    if rows:
        stmt = upsert_insert(conn, custom_field_values)
        stmt = stmt.on_conflict_do_update(
            index_elements=[custom_field_values.c.space_id, custom_field_values.c.field_id],
            set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
        )
        await conn.execute(stmt, rows)
