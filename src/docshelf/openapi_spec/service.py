"""OpenAPI specs of an organization. Writes only store the source and queue the processing job
(`openapi_spec.tasks`), dispatched once the request commits: a request never fetches or parses a
specification."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

from docshelf.authz.guard import not_found, require
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import openapi_spec_versions, openapi_specs
from docshelf.openapi_spec import policy, repository, tasks
from docshelf.openapi_spec.presenter import present_content, present_spec, present_version
from docshelf.openapi_spec.schemas import SLUG_PATTERN, CreateOpenAPISpec, Source
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess

_KEYS = (
    SortKey(openapi_specs.c.created_at, "created_at"),
    SortKey(openapi_specs.c.id, "id"),
)
_VERSION_KEYS = (SortKey(openapi_spec_versions.c.number, "number"),)
_GUESTS = "Guests cannot view OpenAPI specs"
_EDITORS = "Only members who can create content can {} OpenAPI specs"
_SLUG = re.compile(SLUG_PATTERN)


async def _access(ctx: Ctx, org_id: str) -> OrgAccess:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_view(access), _GUESTS)
    return access


async def _visible(ctx: Ctx, org_id: str, slug: str) -> tuple[OrgAccess, sa.RowMapping]:
    access = await _access(ctx, org_id)
    row = await repository.get_by_slug(ctx.conn, org_id, slug)
    if row is None:
        not_found("OpenAPI spec")
    return access, row


def _source(source: Source) -> tuple[str | None, str | None]:
    return source.url, source.text


async def list_specs(ctx: Ctx, org_id: str, params: PageParams) -> dict[str, Any]:
    access = await _access(ctx, org_id)
    page = await paginate(ctx.conn, repository.in_organization(org_id), keys=_KEYS, params=params)
    return page.render(lambda row: present_spec(row, access, ctx.base_url))


async def _create(ctx: Ctx, org_id: str, slug: str, source: Source) -> None:
    url, text = _source(source)
    spec_id = new_id()
    await repository.insert(
        ctx.conn,
        spec_id=spec_id,
        org_id=org_id,
        slug=slug,
        source_url=url,
        source_text=text,
        now=utcnow(),
    )
    await tasks.queue_processing(ctx.conn, spec_id, 1, org_id)


async def create_spec(ctx: Ctx, org_id: str, body: CreateOpenAPISpec) -> dict[str, Any]:
    access = await _access(ctx, org_id)
    require(policy.can_edit(access), _EDITORS.format("create"))
    if await repository.get_by_slug(ctx.conn, org_id, body.slug) is not None:
        raise Conflict(f"An OpenAPI spec with the slug '{body.slug}' already exists")
    await _create(ctx, org_id, body.slug, body.source)
    return await get_spec(ctx, org_id, body.slug)


async def get_spec(ctx: Ctx, org_id: str, slug: str) -> dict[str, Any]:
    access, row = await _visible(ctx, org_id, slug)
    return present_spec(row, access, ctx.base_url)


async def put_spec(ctx: Ctx, org_id: str, slug: str, source: Source) -> tuple[dict[str, Any], bool]:
    """Creates the spec or replaces its source; either way it is processed again. True when
    it was created."""
    access = await _access(ctx, org_id)
    require(policy.can_edit(access), _EDITORS.format("create or update"))
    row = await repository.get_by_slug(ctx.conn, org_id, slug)
    if row is None:
        # Checked here, not by the route, so that a caller outside the organization gets the
        # organization's 404 whatever slug they send.
        if len(slug) > 100 or not _SLUG.match(slug):
            raise BadRequest(
                f"Invalid path parameter 'specSlug': must be 1 to 100 lower-case letters, digits "
                f"and single hyphens ({SLUG_PATTERN})"
            )
        await _create(ctx, org_id, slug, source)
    else:
        url, text = _source(source)
        generation = await repository.set_source(
            ctx.conn, row["id"], source_url=url, source_text=text, now=utcnow()
        )
        await tasks.queue_processing(ctx.conn, row["id"], generation, org_id)
    return await get_spec(ctx, org_id, slug), row is None


async def delete_spec(ctx: Ctx, org_id: str, slug: str) -> None:
    access, row = await _visible(ctx, org_id, slug)
    require(policy.can_edit(access), _EDITORS.format("delete"))
    await repository.delete(ctx.conn, row["id"])


async def list_versions(ctx: Ctx, org_id: str, slug: str, params: PageParams) -> dict[str, Any]:
    _, spec = await _visible(ctx, org_id, slug)
    page = await paginate(
        ctx.conn,
        repository.versions_of(spec["id"]),
        keys=_VERSION_KEYS,
        params=params,
        descending=True,
    )
    return page.render(lambda v: present_version(v, ctx.base_url, org_id, slug))


async def _version(ctx: Ctx, org_id: str, slug: str, version_id: str | None) -> sa.RowMapping:
    """The version named, or the latest one for None."""
    _, spec = await _visible(ctx, org_id, slug)
    if version_id is None:
        version = await repository.latest_version(ctx.conn, spec["id"])
    else:
        version = await repository.get_version(ctx.conn, spec["id"], version_id)
    if version is None:
        not_found("OpenAPI spec version")
    return version


async def get_version(ctx: Ctx, org_id: str, slug: str, version_id: str | None) -> dict[str, Any]:
    version = await _version(ctx, org_id, slug, version_id)
    return present_version(version, ctx.base_url, org_id, slug)


async def get_content(ctx: Ctx, org_id: str, slug: str, version_id: str | None) -> dict[str, Any]:
    version = await _version(ctx, org_id, slug, version_id)
    data = await repository.content(ctx.conn, version["spec_id"], version["digest"])
    return present_content(version, data, ctx.base_url, org_id, slug)
