from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.authz.guard import not_found, require
from docshelf.authz.roles import at_least
from docshelf.custom_field import repository
from docshelf.custom_field.presenter import present_custom_field
from docshelf.custom_field.schemas import (
    CreateCustomField,
    UpdateCustomField,
    UpdateSpaceCustomFields,
)
from docshelf.custom_field.values import SELECT_TYPES, options_in, validate_value
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import custom_fields
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess
from docshelf.space import policy as space_policy

_KEYS = (SortKey(custom_fields.c.created_at, "created_at"), SortKey(custom_fields.c.id, "id"))


async def _visible_org(ctx: Ctx, org_id: str) -> OrgAccess:
    access = await org_policy.load(ctx, org_id)
    require(org_policy.can_view_setting(access), "Guests cannot view custom fields")
    return access


async def _visible_field(
    ctx: Ctx, org_id: str, name: str, *, lock: bool = False
) -> tuple[OrgAccess, sa.RowMapping]:
    access = await _visible_org(ctx, org_id)
    row = await repository.get(ctx.conn, org_id, name, lock=lock)
    if row is None:
        not_found("Custom field")
    return access, row


def _check_options_fit(field_type: str, options: list[str] | None) -> None:
    """Options are the choices of a select field and mean nothing to any other type."""
    if field_type in SELECT_TYPES and options is None:
        raise BadRequest(f"Invalid body field 'options': required for {field_type} fields")
    if field_type not in SELECT_TYPES and options is not None:
        raise BadRequest(
            "Invalid body field 'options': only select:single and select:multi fields have "
            f"options, not {field_type}"
        )


async def list_fields(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    access = await _visible_org(ctx, org_id)
    page = await paginate(ctx.conn, repository.in_organization(org_id), keys=_KEYS, params=params)
    return page.render(lambda row: present_custom_field(row, access, ctx.base_url))


async def create_field(ctx: Ctx, org_id: str, body: CreateCustomField) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(
        org_policy.can_change_setting(access), "Only organization admins can create custom fields"
    )
    _check_options_fit(body.type, body.options)
    created = await repository.insert(
        ctx.conn,
        field_id=new_id(),
        org_id=org_id,
        name=body.name,
        type=body.type,
        title=body.title,
        description=body.description,
        placeholder=body.placeholder,
        options=body.options,
        now=utcnow(),
    )
    if not created:
        raise Conflict(f"A custom field named '{body.name}' already exists")
    return await get_field(ctx, org_id, body.name)


async def get_field(ctx: Ctx, org_id: str, name: str) -> dict[str, Any]:
    access, row = await _visible_field(ctx, org_id, name)
    return present_custom_field(row, access, ctx.base_url)


async def update_field(ctx: Ctx, org_id: str, name: str, body: UpdateCustomField) -> dict[str, Any]:
    # Locked: spaces' values are checked against the options below and must not change meanwhile.
    access, row = await _visible_field(ctx, org_id, name, lock=True)
    require(
        org_policy.can_change_setting(access), "Only organization admins can change custom fields"
    )
    given = body.model_fields_set
    values: dict[str, Any] = {
        attr: getattr(body, attr)
        for attr in ("title", "description", "placeholder")
        if attr in given
    }
    if "options" in given:
        if body.options is None:
            raise BadRequest("Invalid body field 'options': must not be null")
        _check_options_fit(row["type"], body.options)
        dropped = set(row["options"] or ()) - set(body.options)
        if dropped:
            used: set[str] = set()
            for value in await repository.stored_values(ctx.conn, row["id"]):
                used |= options_in(row["type"], value)
            # Refused rather than silently rewriting spaces' values: the caller decides.
            if in_use := sorted(used & dropped):
                raise Conflict(f"Options in use by spaces: {', '.join(in_use)}")
        values["options"] = body.options
    if values:
        values["updated_at"] = utcnow()
        await repository.update(ctx.conn, row["id"], values)
    return await get_field(ctx, org_id, name)


async def delete_field(ctx: Ctx, org_id: str, name: str) -> None:
    access, row = await _visible_field(ctx, org_id, name)
    require(
        org_policy.can_change_setting(access), "Only organization admins can delete custom fields"
    )
    await repository.delete(ctx.conn, row["id"])


async def space_values(ctx: Ctx, space_id: str) -> list[dict[str, Any]]:
    space = await space_policy.load(ctx, space_id)
    access = await org_policy.load(ctx, space.org_id)
    rows = await repository.values_for_space(ctx.conn, space.org_id, space_id)
    out = []
    for row in rows:
        item: dict[str, Any] = {"customField": present_custom_field(row, access, ctx.base_url)}
        if row["value"] is not None:
            item["value"] = row["value"]
        out.append(item)
    return out


async def update_space_values(ctx: Ctx, space_id: str, body: UpdateSpaceCustomFields) -> None:
    """All values are checked before any is written: one bad value changes nothing."""
    space = await space_policy.load(ctx, space_id)
    require(at_least(space.role, "edit"), "You cannot edit this space's custom fields")
    fields = {
        r["name"]: r
        for r in await repository.values_for_space(ctx.conn, space.org_id, space_id, lock=True)
    }
    unknown = sorted(set(body.values) - set(fields))
    if unknown:
        raise BadRequest(
            f"Invalid body field 'values': unknown custom fields: {', '.join(unknown)}"
        )
    checked: dict[str, Any] = {}
    for name, given in body.values.items():
        field = fields[name]
        checked[field["id"]] = (
            None
            if given.value is None
            else validate_value(
                field["type"], field["options"], given.value, field=f"values.{name}.value"
            )
        )
    await repository.set_values(ctx.conn, space_id, checked)
