"""Sections, section groups and site spaces: every write locks the site row first (policy.load
with `lock`), so the structure's invariants hold under concurrent writers on both engines:

- a site with sections has exactly one default section; each section (or the root of a site
  without sections) has exactly one default site space; deleting a default hands it to the
  first remaining sibling (`ordering.next_default`);
- paths are URL-safe and unique among siblings (sections of the site; site spaces of one
  section or of the root);
- a section always shows at least one site space: adding a section adds its first one, and
  the first section of a site that showed site spaces at its root takes them in;
- moves place an item before/after a sibling, or at the end, writing one row unless a gap
  closed (`ordering.positions_for`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.guard import not_found, require
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict, NotFound
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import site_section_groups, site_sections, site_spaces
from docshelf.organization import policy as org_policy
from docshelf.site import ordering, policy, published, repository
from docshelf.site.conditions import validate_condition
from docshelf.site.policy import SiteAccess
from docshelf.site.presenter import Row, SiteView, public_base
from docshelf.site.schemas import (
    AddSectionToGroup,
    CreateGroup,
    CreateSection,
    CreateSiteSpace,
    MoveGroup,
    MoveSection,
    MoveSiteSpace,
    UpdateGroup,
    UpdateSection,
    UpdateSiteSpace,
)
from docshelf.space import policy as space_policy

_POSITION_KEYS = (SortKey(site_sections.c.position, "position"), SortKey(site_sections.c.id, "id"))
_GROUP_KEYS = (
    SortKey(site_section_groups.c.position, "position"),
    SortKey(site_section_groups.c.id, "id"),
)
_SITE_SPACE_KEYS = (
    SortKey(site_spaces.c.section_key, "section_key"),
    SortKey(site_spaces.c.position, "position"),
    SortKey(site_spaces.c.id, "id"),
)


# -- loading and presenting --


async def view(ctx: Ctx, access: SiteAccess, share_key: str | None = None) -> SiteView:
    scope = await org_policy.content_scope(ctx, access.org)
    return await published.site_view(
        ctx.conn, access.site, scope, ctx.base_url, public_base(ctx), share_key
    )


async def fresh_view(ctx: Ctx, org_id: str, site_id: str, share_key: str | None = None) -> SiteView:
    return await view(ctx, await policy.load(ctx, org_id, site_id), share_key)


async def edit(ctx: Ctx, org_id: str, site_id: str, *, lock: bool = True) -> SiteAccess:
    """The site, for a caller who may edit it, locked unless the caller locks it later (after
    locking a space: see `usable_space`)."""
    access = await policy.load(ctx, org_id, site_id, lock=lock)
    require(policy.can_edit(access.org), "You cannot edit this site")
    return access


def _find(rows: Sequence[Row], item_id: str) -> Row | None:
    return next((r for r in rows if r["id"] == item_id), None)


async def usable_space(ctx: Ctx, org_id: str, space_id: str, field: str) -> Row:
    """A live space of the organization the caller can see, else a 400 naming the field.

    The space row is then held `FOR SHARE` (PostgreSQL) until commit, so a concurrent deletion
    or transfer either commits first (and the space is refused here) or waits for this site
    space to commit (and then detaches it). Callers take it before the site lock: deleting a
    space locks the space, then the sites showing it, in that order too."""
    try:
        access = await space_policy.load(ctx, space_id)
    except NotFound:
        access = None
    if access is None or access.org_id != org_id:
        raise BadRequest(f"Invalid body field '{field}': space '{space_id}' not found")
    if not await repository.hold_live_space(ctx.conn, space_id, org_id):
        raise BadRequest(f"Invalid body field '{field}': space '{space_id}' not found")
    return access.row


# -- order --


def top_level(
    sections: list[sa.RowMapping], groups: list[sa.RowMapping]
) -> tuple[list[str], dict[str, int], dict[str, str]]:
    """Ungrouped sections and groups share one order: ids in order, positions, kinds."""
    items = [(s, "section") for s in sections if s["group_id"] is None]
    items += [(g, "group") for g in groups]
    items.sort(key=lambda t: (t[0]["position"], t[0]["id"]))
    return (
        [r["id"] for r, _ in items],
        {r["id"]: int(r["position"]) for r, _ in items},
        {r["id"]: kind for r, kind in items},
    )


def section_order(sections: list[sa.RowMapping], groups: list[sa.RowMapping]) -> list[str]:
    """Every section as the structure shows them (groups expanded in place)."""
    order, _, kinds = top_level(sections, groups)
    out: list[str] = []
    for item in order:
        if kinds[item] == "section":
            out.append(item)
        else:
            out += [s["id"] for s in sections if s["group_id"] == item]
    return out


def _end(positions: dict[str, int]) -> int:
    return max(positions.values()) + ordering.GAP if positions else 0


async def _move(
    ctx: Ctx,
    order: list[str],
    current: dict[str, int],
    kinds: dict[str, str],
    item: str,
    anchors: tuple[str | None, str | None],
    allowed: set[str],
) -> None:
    before, after = anchors
    for anchor in (before, after):
        if anchor is not None and anchor != item and kinds.get(anchor) not in allowed:
            raise BadRequest(f"Invalid body field 'position': '{anchor}' is not a sibling")
    new_order = ordering.place(order, item, before=before, after=after)
    await repository.set_positions(
        ctx.conn, kinds, ordering.positions_for(new_order, item, current)
    )


# -- site spaces (internal) --


def _siblings(rows: list[sa.RowMapping], section_key: str) -> list[sa.RowMapping]:
    return [r for r in rows if r["section_key"] == section_key]


async def add_site_space(ctx: Ctx, site_id: str, section_id: str | None, space: Row) -> str:
    rows = await repository.all_site_spaces(ctx.conn, site_id)
    siblings = _siblings(rows, section_id or "")
    if any(r["space_id"] == space["id"] for r in siblings):
        raise Conflict("This space is already shown there on the site")
    site_space_id = new_id()
    await repository.insert_site_space(
        ctx.conn,
        {
            "id": site_space_id,
            "site_id": site_id,
            "section_id": section_id,
            "section_key": section_id or "",
            "space_id": space["id"],
            "path": ordering.path_from(space["title"], {r["path"] for r in siblings}, "space"),
            "condition": None,
            "is_default": not siblings,
            "position": _end({r["id"]: int(r["position"]) for r in siblings}),
            "created_at": utcnow(),
        },
    )
    return site_space_id


async def remove_site_space(ctx_conn: AsyncConnection, site_id: str, row: sa.RowMapping) -> None:
    """Removes a site space; the default passes to the first remaining sibling, and a section
    left without any goes too (its default passing on likewise)."""
    rows = await repository.all_site_spaces(ctx_conn, site_id)
    siblings = _siblings(rows, row["section_key"])
    default = next((r["id"] for r in siblings if r["is_default"]), None)
    successor = ordering.next_default([r["id"] for r in siblings], row["id"], default)
    await repository.delete_site_space(ctx_conn, row["id"])
    if successor is not None and successor != default:
        await repository.update_site_space(ctx_conn, successor, {"is_default": True})
    if row["section_id"] is not None and len(siblings) == 1:
        await remove_section(ctx_conn, site_id, row["section_id"])


async def remove_section(conn: AsyncConnection, site_id: str, section_id: str) -> None:
    sections = await repository.sections(conn, site_id)
    groups = await repository.groups(conn, site_id)
    default = next((s["id"] for s in sections if s["is_default"]), None)
    successor = ordering.next_default(section_order(sections, groups), section_id, default)
    await repository.delete_section(conn, section_id)
    if successor is not None and successor != default:
        await repository.update_section(conn, successor, {"is_default": True})


# -- sections --


async def list_sections(
    ctx: Ctx, org_id: str, site_id: str, params: PageParams, share_key: str | None = None
) -> dict[str, Any]:
    access = await policy.load(ctx, org_id, site_id)
    page = await paginate(
        ctx.conn, repository.sections_of(site_id), keys=_POSITION_KEYS, params=params
    )
    shown = await view(ctx, access, share_key)
    return page.render(shown.section)


def _section_title(title: str) -> str:
    title = title.strip()[:128]
    return title if len(title) >= 2 else "Section"


async def _wrap_root(ctx: Ctx, site: sa.RowMapping) -> None:
    """The site's first section takes in the site spaces shown at its root, as its default."""
    root = _siblings(await repository.all_site_spaces(ctx.conn, site["id"]), "")
    if not root:
        return
    section_id = new_id()
    await repository.insert_section(
        ctx.conn,
        {
            "id": section_id,
            "site_id": site["id"],
            "group_id": None,
            "title": _section_title(site["title"]),
            "path": ordering.path_from(site["title"], set(), "docs"),
            "description": None,
            "icon": None,
            "condition": None,
            "is_default": True,
            "position": 0,
            "created_at": utcnow(),
        },
    )
    await ctx.conn.execute(
        sa.update(site_spaces)
        .where(site_spaces.c.site_id == site["id"], site_spaces.c.section_key == "")
        .values(section_id=section_id, section_key=section_id)
    )


async def create_section(
    ctx: Ctx, org_id: str, site_id: str, body: CreateSection
) -> dict[str, Any]:
    access = await edit(ctx, org_id, site_id, lock=False)
    space = await usable_space(ctx, org_id, body.spaceId, "spaceId")
    await repository.lock_site(ctx.conn, site_id)
    sections = await repository.sections(ctx.conn, site_id)
    if not sections:
        await _wrap_root(ctx, access.site)
        sections = await repository.sections(ctx.conn, site_id)
    groups = await repository.groups(ctx.conn, site_id)
    _, positions, _ = top_level(sections, groups)
    title = body.title or _section_title(space["title"])
    section_id = new_id()
    await repository.insert_section(
        ctx.conn,
        {
            "id": section_id,
            "site_id": site_id,
            "group_id": None,
            "title": title,
            "path": ordering.path_from(title, {s["path"] for s in sections}, "section"),
            "description": None,
            "icon": None,
            "condition": None,
            "is_default": not sections,
            "position": _end(positions),
            "created_at": utcnow(),
        },
    )
    await add_site_space(ctx, site_id, section_id, space)
    return await get_section(ctx, org_id, site_id, section_id)


async def get_section(ctx: Ctx, org_id: str, site_id: str, section_id: str) -> dict[str, Any]:
    shown = await fresh_view(ctx, org_id, site_id)
    row = _find(shown.sections, section_id)
    if row is None:
        not_found("Site section")
    return shown.section(row)


async def _section(ctx: Ctx, site_id: str, section_id: str) -> sa.RowMapping:
    row = await repository.get_section(ctx.conn, site_id, section_id)
    if row is None:
        not_found("Site section")
    return row


def _check_path(path: str) -> None:
    if not ordering.is_url_safe(path):
        raise BadRequest(
            "Invalid body field 'path': use lower-case letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )


async def update_section(
    ctx: Ctx, org_id: str, site_id: str, section_id: str, body: UpdateSection
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    row = await _section(ctx, site_id, section_id)
    given = body.model_fields_set
    for name in ("title", "path", "defaultSiteSpace"):
        if name in given and getattr(body, name) is None:
            raise BadRequest(f"Invalid body field '{name}': must not be null")
    values: dict[str, Any] = {}
    if body.title is not None:
        values["title"] = body.title
    if body.path is not None and body.path != row["path"]:
        _check_path(body.path)
        others = await repository.sections(ctx.conn, site_id)
        if any(s["path"] == body.path for s in others):
            raise Conflict(f"Another section of the site has the path '{body.path}'")
        values["path"] = body.path
    if "condition" in given:
        if body.condition is not None:
            validate_condition(body.condition)
        values["condition"] = body.condition
    for name in ("icon", "description"):
        if name in given:
            values[name] = getattr(body, name)
    if body.defaultSiteSpace is not None:
        target = await repository.get_site_space(ctx.conn, site_id, body.defaultSiteSpace)
        if target is None or target["section_id"] != section_id:
            raise BadRequest(
                f"Invalid body field 'defaultSiteSpace': site space '{body.defaultSiteSpace}' "
                "is not in this section"
            )
        await set_default_site_space(ctx, site_id, target)
    if values:
        await repository.update_section(ctx.conn, section_id, values)
    if "siteSectionGroupId" in given:
        await _regroup(ctx, site_id, row, body.siteSectionGroupId)
    return await get_section(ctx, org_id, site_id, section_id)


async def _regroup(ctx: Ctx, site_id: str, row: sa.RowMapping, group_id: str | None) -> None:
    """Moves a section into a group (at its end) or, for None, to the top level (at its end),
    as GitBook 0.202's `siteSectionGroupId` does; where it already is, nothing moves."""
    if group_id == row["group_id"]:
        return
    if group_id is None:
        await _leave_group(ctx, site_id, [row["id"]])
        return
    if await repository.get_group(ctx.conn, site_id, group_id) is None:
        raise BadRequest(
            f"Invalid body field 'siteSectionGroupId': section group '{group_id}' not found"
        )
    await _join_group(ctx, site_id, group_id, [row["id"]])


async def set_default_site_space(ctx: Ctx, site_id: str, target: sa.RowMapping) -> None:
    if target["is_default"]:
        return
    # The old default first: the partial unique index allows one default at any moment.
    await ctx.conn.execute(
        sa.update(site_spaces)
        .where(
            site_spaces.c.site_id == site_id,
            site_spaces.c.section_key == target["section_key"],
            site_spaces.c.is_default,
        )
        .values(is_default=False)
    )
    await repository.update_site_space(ctx.conn, target["id"], {"is_default": True})


async def set_default_section(ctx: Ctx, site_id: str, section_id: str) -> None:
    target = await repository.get_section(ctx.conn, site_id, section_id)
    if target is None:
        raise BadRequest(
            f"Invalid body field 'defaultSiteSection': section '{section_id}' not found"
        )
    if target["is_default"]:
        return
    await ctx.conn.execute(
        sa.update(site_sections)
        .where(site_sections.c.site_id == site_id, site_sections.c.is_default)
        .values(is_default=False)
    )
    await repository.update_section(ctx.conn, section_id, {"is_default": True})


async def delete_section(ctx: Ctx, org_id: str, site_id: str, section_id: str) -> None:
    await edit(ctx, org_id, site_id)
    await _section(ctx, site_id, section_id)
    await remove_section(ctx.conn, site_id, section_id)


async def move_section(
    ctx: Ctx, org_id: str, site_id: str, section_id: str, body: MoveSection
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    row = await _section(ctx, site_id, section_id)
    sections = await repository.sections(ctx.conn, site_id)
    if row["group_id"] is None:
        order, current, kinds = top_level(sections, await repository.groups(ctx.conn, site_id))
    else:
        members = [s for s in sections if s["group_id"] == row["group_id"]]
        order = [s["id"] for s in members]
        current = {s["id"]: int(s["position"]) for s in members}
        kinds = dict.fromkeys(order, "section")
    await _move(ctx, order, current, kinds, section_id, body.anchors(), {"section"})
    return await get_section(ctx, org_id, site_id, section_id)


# -- section groups --


async def list_groups(ctx: Ctx, org_id: str, site_id: str, params: PageParams) -> dict[str, Any]:
    access = await policy.load(ctx, org_id, site_id)
    page = await paginate(ctx.conn, repository.groups_of(site_id), keys=_GROUP_KEYS, params=params)
    shown = await view(ctx, access)
    return page.render(shown.group)


async def get_group(ctx: Ctx, org_id: str, site_id: str, group_id: str) -> dict[str, Any]:
    shown = await fresh_view(ctx, org_id, site_id)
    row = _find(shown.groups, group_id)
    if row is None:
        not_found("Site section group")
    return shown.group(row)


async def _group(ctx: Ctx, site_id: str, group_id: str) -> sa.RowMapping:
    row = await repository.get_group(ctx.conn, site_id, group_id)
    if row is None:
        not_found("Site section group")
    return row


async def _join_group(ctx: Ctx, site_id: str, group_id: str, section_ids: list[str]) -> None:
    sections = await repository.sections(ctx.conn, site_id)
    members = {s["id"]: int(s["position"]) for s in sections if s["group_id"] == group_id}
    position = _end(members)
    for section_id in section_ids:
        if section_id in members:
            continue
        if _find(sections, section_id) is None:
            raise BadRequest(f"Invalid body field 'sections': section '{section_id}' not found")
        await repository.update_section(
            ctx.conn, section_id, {"group_id": group_id, "position": position}
        )
        members[section_id] = position
        position += ordering.GAP


async def _leave_group(ctx: Ctx, site_id: str, section_ids: list[str]) -> None:
    """The sections go back to the top level, at its end, in their order."""
    sections = await repository.sections(ctx.conn, site_id)
    _, positions, _ = top_level(sections, await repository.groups(ctx.conn, site_id))
    position = _end(positions)
    for section_id in section_ids:
        await repository.update_section(
            ctx.conn, section_id, {"group_id": None, "position": position}
        )
        position += ordering.GAP


async def create_group(ctx: Ctx, org_id: str, site_id: str, body: CreateGroup) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    sections = await repository.sections(ctx.conn, site_id)
    _, positions, _ = top_level(sections, await repository.groups(ctx.conn, site_id))
    group_id = new_id()
    await repository.insert_group(
        ctx.conn,
        {
            "id": group_id,
            "site_id": site_id,
            "title": body.title,
            "icon": body.icon,
            "position": _end(positions),
            "created_at": utcnow(),
        },
    )
    await _join_group(ctx, site_id, group_id, list(dict.fromkeys(body.sections or [])))
    return await get_group(ctx, org_id, site_id, group_id)


async def update_group(
    ctx: Ctx, org_id: str, site_id: str, group_id: str, body: UpdateGroup
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    await _group(ctx, site_id, group_id)
    given = body.model_fields_set
    if "title" in given and body.title is None:
        raise BadRequest("Invalid body field 'title': must not be null")
    values: dict[str, Any] = {}
    if body.title is not None:
        values["title"] = body.title
    if "icon" in given:
        values["icon"] = body.icon
    if values:
        await repository.update_group(ctx.conn, group_id, values)
    return await get_group(ctx, org_id, site_id, group_id)


async def delete_group(ctx: Ctx, org_id: str, site_id: str, group_id: str) -> None:
    """The group goes; its sections stay, back at the top level."""
    await edit(ctx, org_id, site_id)
    await _group(ctx, site_id, group_id)
    members = [
        s["id"] for s in await repository.sections(ctx.conn, site_id) if s["group_id"] == group_id
    ]
    await repository.delete_group(ctx.conn, group_id)
    await _leave_group(ctx, site_id, members)


async def add_to_group(
    ctx: Ctx, org_id: str, site_id: str, group_id: str, body: AddSectionToGroup
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    await _group(ctx, site_id, group_id)
    if await repository.get_section(ctx.conn, site_id, body.sectionId) is None:
        raise BadRequest(f"Invalid body field 'sectionId': section '{body.sectionId}' not found")
    await _join_group(ctx, site_id, group_id, [body.sectionId])
    return await get_group(ctx, org_id, site_id, group_id)


async def remove_from_group(
    ctx: Ctx, org_id: str, site_id: str, group_id: str, section_id: str
) -> None:
    await edit(ctx, org_id, site_id)
    await _group(ctx, site_id, group_id)
    row = await _section(ctx, site_id, section_id)
    if row["group_id"] != group_id:
        not_found("Site section")
    await _leave_group(ctx, site_id, [section_id])


async def move_group(
    ctx: Ctx, org_id: str, site_id: str, group_id: str, body: MoveGroup
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    await _group(ctx, site_id, group_id)
    sections = await repository.sections(ctx.conn, site_id)
    order, current, kinds = top_level(sections, await repository.groups(ctx.conn, site_id))
    await _move(ctx, order, current, kinds, group_id, body.anchors(), {"section", "group"})
    return await get_group(ctx, org_id, site_id, group_id)


# -- site spaces --


async def list_site_spaces(
    ctx: Ctx,
    org_id: str,
    site_id: str,
    params: PageParams,
    *,
    default: bool | None,
    share_key: str | None = None,
) -> dict[str, Any]:
    access = await policy.load(ctx, org_id, site_id)
    stmt, values = repository.site_spaces_listing(site_id, default=default)
    page = await paginate(ctx.conn, stmt, keys=_SITE_SPACE_KEYS, params=params, values=values)
    shown = await view(ctx, access, share_key)
    return page.render(shown.site_space)


async def get_site_space(ctx: Ctx, org_id: str, site_id: str, site_space_id: str) -> dict[str, Any]:
    shown = await fresh_view(ctx, org_id, site_id)
    row = _find(shown.site_spaces, site_space_id)
    if row is None:
        not_found("Site space")
    return shown.site_space(row)


async def _site_space(ctx: Ctx, site_id: str, site_space_id: str) -> sa.RowMapping:
    row = await repository.get_site_space(ctx.conn, site_id, site_space_id)
    if row is None:
        not_found("Site space")
    return row


async def create_site_space(
    ctx: Ctx, org_id: str, site_id: str, body: CreateSiteSpace
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id, lock=False)
    space = await usable_space(ctx, org_id, body.spaceId, "spaceId")
    await repository.lock_site(ctx.conn, site_id)
    sections = await repository.sections(ctx.conn, site_id)
    if body.sectionId is not None:
        if _find(sections, body.sectionId) is None:
            raise BadRequest(
                f"Invalid body field 'sectionId': section '{body.sectionId}' not found"
            )
        section_id: str | None = body.sectionId
    else:
        section_id = next((s["id"] for s in sections if s["is_default"]), None)
    site_space_id = await add_site_space(ctx, site_id, section_id, space)
    return await get_site_space(ctx, org_id, site_id, site_space_id)


async def update_site_space(
    ctx: Ctx, org_id: str, site_id: str, site_space_id: str, body: UpdateSiteSpace
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    row = await _site_space(ctx, site_id, site_space_id)
    given = body.model_fields_set
    if "path" in given and body.path is None:
        raise BadRequest("Invalid body field 'path': must not be null")
    values: dict[str, Any] = {}
    if body.path is not None and body.path != row["path"]:
        _check_path(body.path)
        siblings = _siblings(
            await repository.all_site_spaces(ctx.conn, site_id), row["section_key"]
        )
        if any(r["path"] == body.path for r in siblings):
            raise Conflict(f"Another site space beside this one has the path '{body.path}'")
        values["path"] = body.path
    if "condition" in given:
        if body.condition is not None:
            validate_condition(body.condition)
        values["condition"] = body.condition
    if "hidden" in given:
        if body.hidden is None:
            raise BadRequest("Invalid body field 'hidden': must not be null")
        if body.hidden != row["hidden"]:
            values["hidden"] = body.hidden
    if values:
        await repository.update_site_space(ctx.conn, site_space_id, values)
    return await get_site_space(ctx, org_id, site_id, site_space_id)


async def delete_site_space(ctx: Ctx, org_id: str, site_id: str, site_space_id: str) -> None:
    await edit(ctx, org_id, site_id)
    row = await _site_space(ctx, site_id, site_space_id)
    if row["section_id"] is not None:
        siblings = _siblings(
            await repository.all_site_spaces(ctx.conn, site_id), row["section_key"]
        )
        if len(siblings) == 1:
            raise Conflict("A section shows at least one site space: delete the section instead")
    await remove_site_space(ctx.conn, site_id, row)


async def move_site_space(
    ctx: Ctx, org_id: str, site_id: str, site_space_id: str, body: MoveSiteSpace
) -> dict[str, Any]:
    await edit(ctx, org_id, site_id)
    row = await _site_space(ctx, site_id, site_space_id)
    siblings = _siblings(await repository.all_site_spaces(ctx.conn, site_id), row["section_key"])
    order = [r["id"] for r in siblings]
    current = {r["id"]: int(r["position"]) for r in siblings}
    kinds = dict.fromkeys(order, "site-space")
    await _move(ctx, order, current, kinds, site_space_id, body.anchors(), {"site-space"})
    return await get_site_space(ctx, org_id, site_id, site_space_id)
