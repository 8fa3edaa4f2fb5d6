from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth.site_token import SiteGrant, key_print
from docshelf.kit.ids import new_id
from docshelf.kit.sql import Row
from docshelf.models import (
    api_tokens,
    members,
    site_share_links,
    site_spaces,
    sites,
    spaces,
    users,
)

# A token made from an SSO session (organization_id set) acts only while its account belongs to
# no other organization: an identity provider never mints reach beyond its organization. The
# EXISTS runs for those tokens alone (CASE), on the members table's primary key.
_out_of_scope = sa.case(
    (api_tokens.c.organization_id.is_(None), sa.false()),
    else_=sa.exists().where(
        members.c.user_id == api_tokens.c.user_id,
        members.c.organization_id != api_tokens.c.organization_id,
    ),
)

# Every authenticated request runs it.
_BY_HASH = (
    sa.select(
        api_tokens.c.id.label("token_id"),
        api_tokens.c.token_hash,
        users.c.id.label("user_id"),
        users.c.email,
        users.c.display_name,
        users.c.photo_url,
        api_tokens.c.organization_id.label("token_org"),
        _out_of_scope.label("out_of_scope"),
    )
    .join(users, users.c.id == api_tokens.c.user_id)
    .where(api_tokens.c.token_hash == sa.bindparam("h"), api_tokens.c.revoked_at.is_(None))
)


async def find_active_token(conn: AsyncConnection, token_hash: str) -> Row | None:
    return (await conn.execute(_BY_HASH, {"h": token_hash})).mappings().first()


async def token_is_active(conn: AsyncConnection, token_id: str) -> bool:
    stmt = sa.select(_out_of_scope).where(
        api_tokens.c.id == token_id, api_tokens.c.revoked_at.is_(None)
    )
    row = (await conn.execute(stmt)).first()
    return row is not None and not row[0]


async def insert_token(
    conn: AsyncConnection,
    *,
    user_id: str,
    token_hash: str,
    prefix: str,
    now: datetime,
    organization_id: str | None = None,
) -> str:
    token_id = new_id()
    await conn.execute(
        sa.insert(api_tokens).values(
            id=token_id,
            user_id=user_id,
            token_hash=token_hash,
            display_prefix=prefix,
            created_at=now,
            organization_id=organization_id,
        )
    )
    return token_id


async def revoke_token(conn: AsyncConnection, token_hash: str, now: datetime) -> bool:
    result = await conn.execute(
        sa.update(api_tokens)
        .where(api_tokens.c.token_hash == token_hash, api_tokens.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return result.rowcount > 0


async def site_grant_live(conn: AsyncConnection, grant: SiteGrant) -> bool:
    """Whether the site still shows what a site content token opened: published, with the
    visibility it had, the site space still showing the same live space, every space the token
    names still shown by the site and still the organization's, the share link still active,
    the visitor key the same (auth.site_token)."""
    still_shown = (
        sa.select(sa.func.count(sa.distinct(site_spaces.c.space_id)))
        .join(spaces, spaces.c.id == site_spaces.c.space_id)
        .where(
            site_spaces.c.site_id == grant.site_id,
            site_spaces.c.space_id.in_(sorted(grant.spaces)),
            spaces.c.organization_id == grant.organization_id,
            spaces.c.deleted_at.is_(None),
        )
        .scalar_subquery()
    )
    stmt = (
        sa.select(sites.c.visitor_key)
        .join(site_spaces, site_spaces.c.site_id == sites.c.id)
        .join(spaces, spaces.c.id == site_spaces.c.space_id)
        .where(
            sites.c.id == grant.site_id,
            sites.c.organization_id == grant.organization_id,
            sites.c.published.is_(True),
            sites.c.visibility == grant.visibility,
            site_spaces.c.id == grant.site_space_id,
            site_spaces.c.space_id == grant.space_id,
            spaces.c.deleted_at.is_(None),
            still_shown == len(grant.spaces),
        )
    )
    if grant.share_link_id is not None:
        stmt = stmt.where(
            sa.exists().where(
                site_share_links.c.id == grant.share_link_id,
                site_share_links.c.site_id == grant.site_id,
                site_share_links.c.active.is_(True),
            )
        )
    elif grant.visibility == "share-link":
        return False
    row = (await conn.execute(stmt)).first()
    if row is None:
        return False
    if grant.visibility == "visitor-auth":
        return grant.visitor_key_print is not None and grant.visitor_key_print == key_print(row[0])
    return True
