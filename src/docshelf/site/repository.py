"""Every statement on sites and their structure (sections, section groups, site spaces)."""

from __future__ import annotations

import functools
import hmac
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.sql import Row, contains_pattern, like_ci
from docshelf.models import (
    organizations,
    site_section_groups,
    site_sections,
    site_share_links,
    site_spaces,
    sites,
    spaces,
)

_ss = site_spaces.alias("variant")
_other = site_spaces.alias("other_variant")
_default_section = (
    sa.select(site_sections.c.id)
    .where(site_sections.c.site_id == sites.c.id, site_sections.c.is_default)
    # Nested in the default-space subquery: correlated to the outer site explicitly, which
    # SQLAlchemy does not do past the immediately enclosing SELECT.
    .correlate(sites)
    .scalar_subquery()
)

SITE_COLUMNS = (
    *sites.c,
    organizations.c.hostname.label("org_hostname"),
    sa.select(sa.func.count())
    .select_from(site_spaces)
    .where(site_spaces.c.site_id == sites.c.id)
    .scalar_subquery()
    .label("site_space_count"),
    sa.exists().where(site_sections.c.site_id == sites.c.id).label("has_sections"),
    # Several variants under one parent (a section, or the root): a multi-variant site.
    sa.exists()
    .where(
        _ss.c.site_id == sites.c.id,
        _other.c.site_id == sites.c.id,
        _other.c.section_key == _ss.c.section_key,
        _other.c.id != _ss.c.id,
    )
    .label("multivariant"),
    sa.select(site_spaces.c.space_id)
    .where(
        site_spaces.c.site_id == sites.c.id,
        site_spaces.c.is_default,
        site_spaces.c.section_key == sa.func.coalesce(_default_section, ""),
    )
    .limit(1)
    .scalar_subquery()
    .label("default_space_id"),
)


def _site_select() -> sa.Select[Any]:
    return sa.select(*SITE_COLUMNS).join(
        organizations, organizations.c.id == sites.c.organization_id
    )


def in_organization(
    org_id: str, *, space: str | None, title: str | None, published: bool | None
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """An organization's sites, filtered by a space they publish, a substring of their title
    and whether they are published, with the statement's parameters: built once per kind of
    filter."""
    values = {
        "org_id": org_id,
        "space": space,
        "needle": contains_pattern(title or ""),
        "published": published,
    }
    return _in_organization(space is not None, title is not None, published is not None), values


@functools.lru_cache(maxsize=8)
def _in_organization(by_space: bool, titled: bool, by_published: bool) -> sa.Select[Any]:
    stmt = _site_select().where(sites.c.organization_id == sa.bindparam("org_id"))
    if by_space:
        stmt = stmt.where(
            sa.exists().where(
                site_spaces.c.site_id == sites.c.id,
                site_spaces.c.space_id == sa.bindparam("space"),
            )
        )
    if titled:
        stmt = stmt.where(like_ci(sites.c.title, "needle"))
    if by_published:
        stmt = stmt.where(sites.c.published == sa.bindparam("published", type_=sa.Boolean))
    return stmt


# Every route of a site reads it: built once, with its cache key.
_SITE = _site_select().where(
    sites.c.id == sa.bindparam("site_id"), sites.c.organization_id == sa.bindparam("org_id")
)


async def get_site(
    conn: AsyncConnection, site_id: str, org_id: str, *, lock: bool = False
) -> sa.RowMapping | None:
    if lock:
        # The row lock alone (the presented row is read again after the write).
        await conn.execute(sa.select(sites.c.id).where(sites.c.id == site_id).with_for_update())
    values = {"site_id": site_id, "org_id": org_id}
    return (await conn.execute(_SITE, values)).mappings().first()


async def insert_site(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(sites).values(**values))


async def update_site(conn: AsyncConnection, site_id: str, values: dict[str, Any]) -> None:
    await conn.execute(sa.update(sites).where(sites.c.id == site_id).values(**values))


async def delete_site(conn: AsyncConnection, site_id: str) -> None:
    # Site spaces go first: they reference sections, whose deletion would cascade anyway.
    await conn.execute(sa.delete(site_spaces).where(site_spaces.c.site_id == site_id))
    await conn.execute(sa.delete(sites).where(sites.c.id == site_id))


async def basename_taken(conn: AsyncConnection, org_id: str, basename: str, site_id: str) -> bool:
    stmt = sa.select(sites.c.id).where(
        sites.c.organization_id == org_id, sites.c.basename == basename, sites.c.id != site_id
    )
    return (await conn.execute(stmt)).first() is not None


async def hostname_taken(conn: AsyncConnection, hostname: str, site_id: str) -> bool:
    stmt = sa.select(sites.c.id).where(sites.c.hostname == hostname, sites.c.id != site_id)
    return (await conn.execute(stmt)).first() is not None


async def lock_basename(conn: AsyncConnection, org_id: str) -> None:
    """Serialises basename changes within an organization (PostgreSQL): two sites cannot take
    one basename at once, checked before the unique constraint would fail."""
    await conn.execute(
        sa.select(organizations.c.id).where(organizations.c.id == org_id).with_for_update()
    )


# -- the structure version --
#
# Readers keep a site's sections and groups between requests under `sites.structure_version`
# (site/published.py), so every statement below that writes sections, groups or site spaces
# bumps it in the same transaction, before the rows change (a deletion would lose the site id).


async def _bump(conn: AsyncConnection, table: sa.Table, row_id: str) -> None:
    site_id = sa.select(table.c.site_id).where(table.c.id == row_id).scalar_subquery()
    await bump_structure(conn, site_id)


async def bump_structure(conn: AsyncConnection, site_id: str | sa.ScalarSelect[Any]) -> None:
    await conn.execute(
        sa.update(sites)
        .where(sites.c.id == site_id)
        .values(structure_version=sites.c.structure_version + 1)
    )


# -- sections and groups --


def sections_of(site_id: str | sa.BindParameter[str]) -> sa.Select[Any]:
    return sa.select(site_sections).where(site_sections.c.site_id == site_id)


# A site's structure (its sections, groups, site spaces and their spaces) is read by most of
# its routes and by every published page: these statements are built once, with their cache
# keys.
_SECTIONS = sections_of(sa.bindparam("site_id")).order_by(
    site_sections.c.position, site_sections.c.id
)


async def sections(conn: AsyncConnection, site_id: str) -> list[sa.RowMapping]:
    return list((await conn.execute(_SECTIONS, {"site_id": site_id})).mappings().all())


async def get_section(conn: AsyncConnection, site_id: str, section_id: str) -> sa.RowMapping | None:
    stmt = sections_of(site_id).where(site_sections.c.id == section_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert_section(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await bump_structure(conn, values["site_id"])
    await conn.execute(sa.insert(site_sections).values(**values))


async def update_section(conn: AsyncConnection, section_id: str, values: dict[str, Any]) -> None:
    await _bump(conn, site_sections, section_id)
    await conn.execute(
        sa.update(site_sections).where(site_sections.c.id == section_id).values(**values)
    )


async def delete_section(conn: AsyncConnection, section_id: str) -> None:
    await _bump(conn, site_sections, section_id)
    await conn.execute(sa.delete(site_spaces).where(site_spaces.c.section_id == section_id))
    await conn.execute(sa.delete(site_sections).where(site_sections.c.id == section_id))


def groups_of(site_id: str | sa.BindParameter[str]) -> sa.Select[Any]:
    return sa.select(site_section_groups).where(site_section_groups.c.site_id == site_id)


_GROUPS = groups_of(sa.bindparam("site_id")).order_by(
    site_section_groups.c.position, site_section_groups.c.id
)


async def groups(conn: AsyncConnection, site_id: str) -> list[sa.RowMapping]:
    return list((await conn.execute(_GROUPS, {"site_id": site_id})).mappings().all())


async def get_group(conn: AsyncConnection, site_id: str, group_id: str) -> sa.RowMapping | None:
    stmt = groups_of(site_id).where(site_section_groups.c.id == group_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert_group(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await bump_structure(conn, values["site_id"])
    await conn.execute(sa.insert(site_section_groups).values(**values))


async def update_group(conn: AsyncConnection, group_id: str, values: dict[str, Any]) -> None:
    await _bump(conn, site_section_groups, group_id)
    await conn.execute(
        sa.update(site_section_groups).where(site_section_groups.c.id == group_id).values(**values)
    )


async def delete_group(conn: AsyncConnection, group_id: str) -> None:
    await _bump(conn, site_section_groups, group_id)
    await conn.execute(sa.delete(site_section_groups).where(site_section_groups.c.id == group_id))


async def set_positions(conn: AsyncConnection, kinds: dict[str, str], new: dict[str, int]) -> None:
    """Writes positions of sections and groups (`kinds`: id -> 'section' | 'group') or of site
    spaces ('site-space'), one set-based statement per table and 500 rows."""
    tables = {"section": site_sections, "group": site_section_groups, "site-space": site_spaces}
    for kind, table in tables.items():
        rows = [(i, p) for i, p in new.items() if kinds.get(i) == kind]
        if rows:
            await _bump(conn, table, rows[0][0])
        for start in range(0, len(rows), 500):
            chunk = dict(rows[start : start + 500])
            value: sa.ColumnElement[int] | int = (
                next(iter(chunk.values())) if len(chunk) == 1 else sa.case(chunk, value=table.c.id)
            )
            await conn.execute(
                sa.update(table).where(table.c.id.in_(list(chunk))).values(position=value)
            )


# -- site spaces --


def site_spaces_of(site_id: str | sa.BindParameter[str]) -> sa.Select[Any]:
    return sa.select(site_spaces).where(site_spaces.c.site_id == site_id)


def site_spaces_listing(
    site_id: str, *, default: bool | None
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """A site's site spaces, filtered by whether each is the default, with the statement's
    parameters."""
    return _SITE_SPACES_BY_DEFAULT if default is not None else _SITE_SPACES_OF, {
        "site_id": site_id,
        "default": default,
    }


_SITE_SPACES_OF = site_spaces_of(sa.bindparam("site_id"))
_SITE_SPACES_BY_DEFAULT = _SITE_SPACES_OF.where(
    site_spaces.c.is_default == sa.bindparam("default", type_=sa.Boolean)
)
_SITE_SPACES = site_spaces_of(sa.bindparam("site_id")).order_by(
    site_spaces.c.position, site_spaces.c.id
)


async def all_site_spaces(conn: AsyncConnection, site_id: str) -> list[sa.RowMapping]:
    return list((await conn.execute(_SITE_SPACES, {"site_id": site_id})).mappings().all())


async def get_site_space(
    conn: AsyncConnection, site_id: str, site_space_id: str
) -> sa.RowMapping | None:
    stmt = site_spaces_of(site_id).where(site_spaces.c.id == site_space_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert_site_space(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await bump_structure(conn, values["site_id"])
    await conn.execute(sa.insert(site_spaces).values(**values))


async def update_site_space(
    conn: AsyncConnection, site_space_id: str, values: dict[str, Any]
) -> None:
    await _bump(conn, site_spaces, site_space_id)
    await conn.execute(
        sa.update(site_spaces).where(site_spaces.c.id == site_space_id).values(**values)
    )


async def delete_site_space(conn: AsyncConnection, site_space_id: str) -> None:
    await _bump(conn, site_spaces, site_space_id)
    await conn.execute(sa.delete(site_spaces).where(site_spaces.c.id == site_space_id))


_SPACE_PREFIX = "space__"
_SITE_SPACES_AND_SPACES = (
    sa.select(site_spaces, *(c.label(_SPACE_PREFIX + c.name) for c in spaces.c))
    .select_from(site_spaces.outerjoin(spaces, spaces.c.id == site_spaces.c.space_id))
    .where(site_spaces.c.site_id == sa.bindparam("site_id"))
    .order_by(site_spaces.c.position, site_spaces.c.id)
)
_SITE_SPACE_NAMES = tuple(c.name for c in site_spaces.c)
_SPACE_NAMES = tuple((_SPACE_PREFIX + c.name, c.name) for c in spaces.c)


async def site_spaces_and_spaces(
    conn: AsyncConnection, site_id: str
) -> tuple[list[Row], dict[str, Row]]:
    """A site's site spaces in order (all_site_spaces) and the spaces they show, by id: one
    statement, whatever their number (every read of a site's structure needs both)."""
    listed: list[Row] = []
    shown: dict[str, Row] = {}
    for row in (await conn.execute(_SITE_SPACES_AND_SPACES, {"site_id": site_id})).mappings():
        listed.append({name: row[name] for name in _SITE_SPACE_NAMES})
        if row[_SPACE_PREFIX + "id"] is not None:
            shown[row[_SPACE_PREFIX + "id"]] = {name: row[label] for label, name in _SPACE_NAMES}
    return listed, shown


async def sites_showing(conn: AsyncConnection, space_ids: Sequence[str]) -> list[str]:
    stmt = (
        sa.select(site_spaces.c.site_id)
        .where(site_spaces.c.space_id.in_(list(space_ids)))
        .distinct()
        .order_by(site_spaces.c.site_id)
    )
    return list((await conn.execute(stmt)).scalars())


async def lock_site(conn: AsyncConnection, site_id: str) -> None:
    await conn.execute(sa.select(sites.c.id).where(sites.c.id == site_id).with_for_update())


async def hold_live_space(conn: AsyncConnection, space_id: str, org_id: str) -> bool:
    """Share-locks the space row (PostgreSQL) and tells whether it is still a live space of
    the organization, as committed now."""
    stmt = (
        sa.select(spaces.c.organization_id, spaces.c.deleted_at)
        .where(spaces.c.id == space_id)
        .with_for_update(read=True)
    )
    row = (await conn.execute(stmt)).first()
    return row is not None and row.organization_id == org_id and row.deleted_at is None


# A site as published now, in one statement: the site row with its organization's hostname, and
# every site space joined to its space (site.published.load splits the rows by these names).
_CURRENT_SITE_COLUMNS = (*sites.c, organizations.c.hostname.label("org_hostname"))
_CURRENT_SS_COLUMNS = tuple(c.label(f"ss_{c.name}") for c in site_spaces.c)
_CURRENT_SPACE_COLUMNS = tuple(c.label(f"sp_{c.name}") for c in spaces.c)
CURRENT_SITE_NAMES = (*(c.name for c in sites.c), "org_hostname")
CURRENT_SS_NAMES = tuple((c.name, f"ss_{c.name}") for c in site_spaces.c)
CURRENT_SPACE_NAMES = tuple((c.name, f"sp_{c.name}") for c in spaces.c)
_CURRENT = (
    sa.select(*_CURRENT_SITE_COLUMNS, *_CURRENT_SS_COLUMNS, *_CURRENT_SPACE_COLUMNS)
    .select_from(
        sites.join(organizations, organizations.c.id == sites.c.organization_id)
        .outerjoin(site_spaces, site_spaces.c.site_id == sites.c.id)
        .outerjoin(spaces, spaces.c.id == site_spaces.c.space_id)
    )
    .order_by(sites.c.id, site_spaces.c.position, site_spaces.c.id)
)
# Built once with bound parameters: SQLAlchemy memoizes a statement object's cache key, which
# for this many columns costs more to compute than SQLite takes to run the statement.
_BY_HOSTNAME = _CURRENT.where(sites.c.hostname == sa.bindparam("hostname"))
_BY_SEGMENTS = _CURRENT.where(
    sa.or_(
        organizations.c.hostname == sa.bindparam("org"),
        organizations.c.id == sa.bindparam("org"),
    ),
    sa.or_(sites.c.basename == sa.bindparam("site"), sites.c.id == sa.bindparam("site")),
)


async def current_by_hostname(conn: AsyncConnection, hostname: str) -> Sequence[sa.RowMapping]:
    return (await conn.execute(_BY_HOSTNAME, {"hostname": hostname})).mappings().all()


async def current_by_segments(
    conn: AsyncConnection, org_segment: str, site_segment: str
) -> Sequence[sa.RowMapping]:
    """Sites whose organization hostname or id is `org_segment` and whose basename or id is
    `site_segment` (more than one when a basename equals another site's id)."""
    params = {"org": org_segment, "site": site_segment}
    return (await conn.execute(_BY_SEGMENTS, params)).mappings().all()


async def active_share_link(
    conn: AsyncConnection, site_id: str, secret: str
) -> sa.RowMapping | None:
    """The active share link of the site with this secret, for visitors' share keys: an
    inactive or deleted link opens nothing."""
    # Read here, not through share_link's repository: share links belong to sites, and the
    # published look-up must not import the package that manages them.
    stmt = sa.select(site_share_links).where(
        site_share_links.c.site_id == site_id,
        site_share_links.c.secret == secret,
        site_share_links.c.active.is_(True),
    )
    row = (await conn.execute(stmt)).mappings().first()
    # The index found it; the comparison that decides is constant-time all the same.
    if row is None or not hmac.compare_digest(row["secret"].encode(), secret.encode()):
        return None
    return row
