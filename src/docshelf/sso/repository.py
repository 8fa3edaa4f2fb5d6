from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import (
    saml_assertions,
    saml_link_codes,
    saml_providers,
    saml_requests,
    sso_identities,
    teams,
    user_sessions,
)

# Expired rows are removed a batch at a time by the writes that add rows of the same kind, so
# each table stays near what is live without a job, and no write pays for a large backlog.
_SWEEP_BATCH = 100


def in_organization(org_id: str) -> sa.Select[Any]:
    return sa.select(saml_providers).where(saml_providers.c.organization_id == org_id)


def _active() -> sa.ColumnElement[bool]:
    return sa.and_(
        saml_providers.c.entity_id.is_not(None),
        saml_providers.c.entity_id != "",
        saml_providers.c.sso_url.is_not(None),
        saml_providers.c.sso_url != "",
        saml_providers.c.certificate.is_not(None),
        saml_providers.c.certificate != "",
    )


async def get(conn: AsyncConnection, org_id: str, provider_id: str) -> sa.RowMapping | None:
    stmt = in_organization(org_id).where(saml_providers.c.id == provider_id)
    return (await conn.execute(stmt)).mappings().first()


async def exists(conn: AsyncConnection, provider_id: str) -> bool:
    stmt = sa.select(saml_providers.c.id).where(saml_providers.c.id == provider_id)
    return (await conn.execute(stmt)).first() is not None


async def get_active(conn: AsyncConnection, provider_id: str) -> sa.RowMapping | None:
    stmt = sa.select(saml_providers).where(saml_providers.c.id == provider_id, _active())
    return (await conn.execute(stmt)).mappings().first()


async def active_in_organization(conn: AsyncConnection, org_id: str) -> list[sa.RowMapping]:
    stmt = (
        in_organization(org_id)
        .where(_active())
        .order_by(saml_providers.c.created_at, saml_providers.c.id)
    )
    return list((await conn.execute(stmt)).mappings())


async def team_in_organization(conn: AsyncConnection, org_id: str, team_id: str) -> bool:
    stmt = sa.select(teams.c.id).where(teams.c.id == team_id, teams.c.organization_id == org_id)
    return (await conn.execute(stmt)).first() is not None


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(saml_providers).values(**values))


async def update(conn: AsyncConnection, provider_id: str, values: dict[str, Any]) -> None:
    if values:
        await conn.execute(
            sa.update(saml_providers).where(saml_providers.c.id == provider_id).values(**values)
        )


async def delete(conn: AsyncConnection, provider_id: str) -> None:
    await conn.execute(sa.delete(saml_providers).where(saml_providers.c.id == provider_id))


# -- the service provider's state --


async def _sweep(
    conn: AsyncConnection, table: sa.Table, key: sa.Column[Any], now: datetime
) -> None:
    expired = sa.select(key).where(table.c.expires_at < now).limit(_SWEEP_BATCH)
    await conn.execute(sa.delete(table).where(key.in_(expired.scalar_subquery())))


async def remember_request(
    conn: AsyncConnection,
    request_id: str,
    provider_id: str,
    expires_at: datetime,
    now: datetime,
    *,
    browser_hash: str,
    next_path: str,
    link_user_id: str | None,
) -> None:
    await _sweep(conn, saml_requests, saml_requests.c.id, now)
    await conn.execute(
        sa.insert(saml_requests).values(
            id=request_id,
            provider_id=provider_id,
            expires_at=expires_at,
            browser_hash=browser_hash,
            next_path=next_path,
            link_user_id=link_user_id,
        )
    )


async def consume_request(
    conn: AsyncConnection, request_id: str, provider_id: str, now: datetime
) -> sa.RowMapping | None:
    """The request, removed, when it was ours, for this provider, unanswered and not expired."""
    row = (
        (
            await conn.execute(
                sa.select(saml_requests).where(
                    saml_requests.c.id == request_id,
                    saml_requests.c.provider_id == provider_id,
                    saml_requests.c.expires_at >= now,
                )
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    result = await conn.execute(sa.delete(saml_requests).where(saml_requests.c.id == request_id))
    # Two answers to one request at once: the delete lets one of them through.
    return row if result.rowcount == 1 else None


async def assertion_used(conn: AsyncConnection, provider_id: str, assertion_id: str) -> bool:
    stmt = sa.select(saml_assertions.c.assertion_id).where(
        saml_assertions.c.provider_id == provider_id,
        saml_assertions.c.assertion_id == assertion_id,
    )
    return (await conn.execute(stmt)).first() is not None


async def record_assertion(
    conn: AsyncConnection, provider_id: str, assertion_id: str, expires_at: datetime, now: datetime
) -> None:
    # Two concurrent uses of one assertion: the primary key lets one insert win (the other
    # gets the app's 409 for a unique violation).
    # Swept by expiry across providers: the primary key starts with the provider.
    expired = (
        sa.select(saml_assertions.c.provider_id, saml_assertions.c.assertion_id)
        .where(saml_assertions.c.expires_at < now)
        .limit(_SWEEP_BATCH)
    )
    for row in list(await conn.execute(expired)):
        await conn.execute(
            sa.delete(saml_assertions).where(
                saml_assertions.c.provider_id == row.provider_id,
                saml_assertions.c.assertion_id == row.assertion_id,
            )
        )
    await conn.execute(
        sa.insert(saml_assertions).values(
            provider_id=provider_id, assertion_id=assertion_id, expires_at=expires_at
        )
    )


async def insert_session(
    conn: AsyncConnection,
    *,
    session_id: str,
    user_id: str,
    provider_id: str,
    session_hash: str,
    now: datetime,
    expires_at: datetime,
) -> None:
    await _sweep(conn, user_sessions, user_sessions.c.id, now)
    await conn.execute(
        sa.insert(user_sessions).values(
            id=session_id,
            user_id=user_id,
            provider_id=provider_id,
            session_hash=session_hash,
            created_at=now,
            expires_at=expires_at,
        )
    )


async def session_user(
    conn: AsyncConnection, session_hash: str, now: datetime
) -> tuple[str, str] | None:
    """(user id, organization id of the provider that opened the session), or None."""
    stmt = (
        sa.select(user_sessions.c.user_id, saml_providers.c.organization_id)
        .join(saml_providers, saml_providers.c.id == user_sessions.c.provider_id)
        .where(user_sessions.c.session_hash == session_hash, user_sessions.c.expires_at > now)
    )
    row = (await conn.execute(stmt)).first()
    return None if row is None else (str(row.user_id), str(row.organization_id))


async def delete_session(conn: AsyncConnection, session_hash: str) -> None:
    await conn.execute(sa.delete(user_sessions).where(user_sessions.c.session_hash == session_hash))


# -- identities ---------------------------------------------------------------------------------


async def identity_user(conn: AsyncConnection, provider_id: str, subject: str) -> str | None:
    stmt = sa.select(sso_identities.c.user_id).where(
        sso_identities.c.provider_id == provider_id, sso_identities.c.subject == subject
    )
    return (await conn.execute(stmt)).scalar_one_or_none()


async def link_identity(
    conn: AsyncConnection, provider_id: str, subject: str, user_id: str, now: datetime
) -> None:
    """Points the provider's subject at the account (a subject linked elsewhere moves)."""
    await conn.execute(
        sa.delete(sso_identities).where(
            sso_identities.c.provider_id == provider_id, sso_identities.c.subject == subject
        )
    )
    await conn.execute(
        sa.insert(sso_identities).values(
            provider_id=provider_id, subject=subject, user_id=user_id, created_at=now
        )
    )


async def insert_link_code(
    conn: AsyncConnection,
    *,
    code_hash: str,
    provider_id: str,
    user_id: str,
    expires_at: datetime,
    now: datetime,
) -> None:
    await _sweep(conn, saml_link_codes, saml_link_codes.c.code_hash, now)
    await conn.execute(
        sa.insert(saml_link_codes).values(
            code_hash=code_hash, provider_id=provider_id, user_id=user_id, expires_at=expires_at
        )
    )


async def link_code_user(
    conn: AsyncConnection, code_hash: str, provider_id: str, now: datetime
) -> str | None:
    """The user who asked for a live code, leaving it in place."""
    stmt = sa.select(saml_link_codes.c.user_id).where(
        saml_link_codes.c.code_hash == code_hash,
        saml_link_codes.c.provider_id == provider_id,
        saml_link_codes.c.expires_at >= now,
    )
    user_id = (await conn.execute(stmt)).scalar_one_or_none()
    return None if user_id is None else str(user_id)


async def consume_link_code(
    conn: AsyncConnection, code_hash: str, provider_id: str, now: datetime
) -> str | None:
    """The user who asked for the code, once: the code is removed."""
    user_id = await link_code_user(conn, code_hash, provider_id, now)
    if user_id is None:
        return None
    result = await conn.execute(
        sa.delete(saml_link_codes).where(saml_link_codes.c.code_hash == code_hash)
    )
    return user_id if result.rowcount == 1 else None
