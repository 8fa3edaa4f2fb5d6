from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import (
    members,
    organization_email_domains,
    organizations,
    team_members,
    verified_email_domains,
)

ORG_COLUMNS = tuple(organizations.c)


def owns_team_column() -> sa.Label[bool]:
    """Whether the joined member owns a team of the organization."""
    return (
        sa.exists()
        .where(
            team_members.c.organization_id == members.c.organization_id,
            team_members.c.user_id == members.c.user_id,
            team_members.c.role == "owner",
        )
        .label("owns_team")
    )


# Organizations the caller (`user_id`) belongs to, with their role in each: built once.
READABLE = sa.select(*ORG_COLUMNS, members.c.role.label("caller_role"), owns_team_column()).join(
    members,
    sa.and_(
        members.c.organization_id == organizations.c.id,
        members.c.user_id == sa.bindparam("user_id"),
    ),
)


async def insert(conn: AsyncConnection, values: dict[str, Any], *, owner_id: str) -> None:
    """The organization, born with its owner as its first admin."""
    await conn.execute(sa.insert(organizations).values(**values))
    await _set_domains(conn, values["id"], values.get("email_domains") or [])
    await conn.execute(
        sa.insert(members).values(
            organization_id=values["id"],
            user_id=owner_id,
            role="admin",
            joined_at=values["created_at"],
        )
    )


async def update(conn: AsyncConnection, org_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        sa.update(organizations).where(organizations.c.id == org_id).values(**values)
    )
    if "email_domains" in values:
        await _set_domains(conn, org_id, values["email_domains"] or [])


async def _set_domains(conn: AsyncConnection, org_id: str, domains: list[str]) -> None:
    """Keeps organization_email_domains equal to the organization's list, in the same
    transaction, so the look-up by domain is one indexed read."""
    table = organization_email_domains
    await conn.execute(sa.delete(table).where(table.c.organization_id == org_id))
    if domains:
        await conn.execute(
            sa.insert(table),
            [{"domain": d, "organization_id": org_id} for d in sorted(set(domains))],
        )


async def hostname_taken(conn: AsyncConnection, hostname: str, except_org: str) -> bool:
    stmt = sa.select(organizations.c.id).where(
        organizations.c.hostname == hostname, organizations.c.id != except_org
    )
    return (await conn.execute(stmt)).first() is not None


async def get(conn: AsyncConnection, org_id: str) -> sa.RowMapping | None:
    stmt = sa.select(*ORG_COLUMNS).where(organizations.c.id == org_id)
    return (await conn.execute(stmt)).mappings().first()


async def by_hostname(conn: AsyncConnection, hostname: str) -> sa.RowMapping | None:
    stmt = sa.select(*ORG_COLUMNS).where(organizations.c.hostname == hostname)
    return (await conn.execute(stmt)).mappings().first()


async def with_email_domain(
    conn: AsyncConnection, domain: str, user_id: str
) -> list[sa.RowMapping]:
    """Organizations listing `domain` among their e-mail domains, with the caller's role if any:
    one indexed read of organization_email_domains."""
    stmt = (
        sa.select(
            *ORG_COLUMNS,
            members.c.role.label("caller_role"),
            members.c.user_id.label("member_id"),
            owns_team_column(),
        )
        .join(
            organization_email_domains,
            sa.and_(
                organization_email_domains.c.organization_id == organizations.c.id,
                organization_email_domains.c.domain == domain,
            ),
        )
        .outerjoin(
            members,
            sa.and_(members.c.organization_id == organizations.c.id, members.c.user_id == user_id),
        )
        .order_by(organizations.c.created_at, organizations.c.id)
    )
    return list((await conn.execute(stmt)).mappings().all())


# -- e-mail domains the install's operator verified (README, "Single sign-on") -----------------


async def lists_email_domain(conn: AsyncConnection, org_id: str, domain: str) -> bool:
    stmt = sa.select(organization_email_domains.c.domain).where(
        organization_email_domains.c.organization_id == org_id,
        organization_email_domains.c.domain == domain,
    )
    return (await conn.execute(stmt)).first() is not None


async def domain_owner(conn: AsyncConnection, domain: str) -> str | None:
    """The organization that verified the e-mail domain, if any."""
    stmt = sa.select(verified_email_domains.c.organization_id).where(
        verified_email_domains.c.domain == domain
    )
    return (await conn.execute(stmt)).scalar_one_or_none()


async def verify_domain(conn: AsyncConnection, org_id: str, domain: str, now: datetime) -> None:
    await conn.execute(
        sa.insert(verified_email_domains).values(
            domain=domain, organization_id=org_id, verified_at=now
        )
    )


async def unverify_domain(conn: AsyncConnection, org_id: str, domain: str) -> bool:
    result = await conn.execute(
        sa.delete(verified_email_domains).where(
            verified_email_domains.c.organization_id == org_id,
            verified_email_domains.c.domain == domain,
        )
    )
    return result.rowcount > 0


async def verified_domains(conn: AsyncConnection, org_id: str) -> list[str]:
    stmt = (
        sa.select(verified_email_domains.c.domain)
        .where(verified_email_domains.c.organization_id == org_id)
        .order_by(verified_email_domains.c.domain)
    )
    return list((await conn.execute(stmt)).scalars())
