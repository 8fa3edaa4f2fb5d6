from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from docshelf.authz.guard import require
from docshelf.events import event, outbox
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import sites
from docshelf.site import ordering, policy, repository, structure, visitor
from docshelf.site.policy import SiteAccess
from docshelf.site.presenter import present_site, public_base
from docshelf.site.schemas import CreateSite, UpdateSite
from docshelf.space import service as space_service
from docshelf.space.schemas import CreateSpace

DEFAULT_TITLE = "Untitled site"
_KEYS = (SortKey(sites.c.created_at, "created_at"), SortKey(sites.c.id, "id"))


def _present(ctx: Ctx, access: SiteAccess) -> dict[str, Any]:
    return present_site(access.site, access.org, ctx.base_url, public_base(ctx))


async def list_sites(
    ctx: Ctx,
    org_id: str,
    params: PageParams,
    *,
    space: str | None,
    title: str | None,
    published: bool | None,
) -> dict[str, Any]:
    org = await policy.load_org(ctx, org_id)
    stmt, values = repository.in_organization(org_id, space=space, title=title, published=published)
    page = await paginate(ctx.conn, stmt, keys=_KEYS, params=params, values=values)
    public = public_base(ctx)
    return page.render(lambda row: present_site(row, org, ctx.base_url, public))


async def create(ctx: Ctx, org_id: str, body: CreateSite) -> dict[str, Any]:
    org = await policy.load_org(ctx, org_id)
    require(policy.can_edit(org), "You cannot create sites in this organization")
    title = body.title or DEFAULT_TITLE
    if isinstance(body.spaces, list):
        # Checked before anything is written: a bad id changes nothing.
        chosen = [
            await structure.usable_space(ctx, org_id, space_id, "spaces")
            for space_id in dict.fromkeys(body.spaces)
        ]
    elif body.spaces is not None:
        # "empty" and "sample" (GitBook up to 0.137) both ask for a new space to start from.
        created = await space_service.create(ctx, org_id, CreateSpace(title=title[:50]))
        chosen = [await structure.usable_space(ctx, org_id, created["id"], "spaces")]
    else:
        chosen = []
    now = utcnow()
    site_id = new_id()
    await repository.insert_site(
        ctx.conn,
        {
            "id": site_id,
            "organization_id": org_id,
            "type": body.type,
            "title": title,
            "visibility": body.visibility,
            "published": False,
            "basename": None,
            "proxy": None,
            "adaptive_content": False,
            "visitor_key": visitor.new_key(),
            "visitor_key_at": now,
            "created_at": now,
            "updated_at": now,
        },
    )
    for space in chosen:
        await structure.add_site_space(ctx, site_id, None, space)
    return await get(ctx, org_id, site_id)


async def get(ctx: Ctx, org_id: str, site_id: str) -> dict[str, Any]:
    return _present(ctx, await policy.load(ctx, org_id, site_id))


async def _admin(ctx: Ctx, org_id: str, site_id: str) -> SiteAccess:
    access = await policy.load(ctx, org_id, site_id, lock=True)
    require(policy.can_admin(access.org), "Only organization admins can do this to a site")
    return access


_ADMIN_FIELDS = ("visibility", "basename", "adaptiveContent", "proxy", "hostname")


async def update(ctx: Ctx, org_id: str, site_id: str, body: UpdateSite) -> dict[str, Any]:
    given = body.model_fields_set
    access = await structure.edit(ctx, org_id, site_id)
    if given & set(_ADMIN_FIELDS):
        require(policy.can_admin(access.org), "Only organization admins can change this")
    for name in ("title", "visibility", "basename", "adaptiveContent", "defaultSiteSpace"):
        if name in given and getattr(body, name) is None:
            raise BadRequest(f"Invalid body field '{name}': must not be null")
    if "defaultSiteSection" in given and body.defaultSiteSection is None:
        raise BadRequest("Invalid body field 'defaultSiteSection': must not be null")
    values: dict[str, Any] = {}
    if body.title is not None:
        values["title"] = body.title
    if body.visibility is not None:
        values["visibility"] = body.visibility
    if body.adaptiveContent is not None:
        values["adaptive_content"] = body.adaptiveContent.enabled
    if "proxy" in given:
        values["proxy"] = body.proxy
    if body.basename is not None and body.basename != access.site["basename"]:
        if not ordering.is_url_safe(body.basename):
            raise BadRequest(
                "Invalid body field 'basename': use lower-case letters, digits, '-', '_' or "
                "'.', starting and ending with a letter or digit"
            )
        await repository.lock_basename(ctx.conn, org_id)
        if await repository.basename_taken(ctx.conn, org_id, body.basename, site_id):
            raise Conflict(f"Another site of the organization has the basename '{body.basename}'")
        values["basename"] = body.basename
    if "hostname" in given and body.hostname != access.site["hostname"]:
        if body.hostname is not None:
            await _check_hostname(ctx, org_id, site_id, body.hostname)
        values["hostname"] = body.hostname
    if body.defaultSiteSection is not None:
        await structure.set_default_section(ctx, site_id, body.defaultSiteSection)
    if body.defaultSiteSpace is not None:
        target = await repository.get_site_space(ctx.conn, site_id, body.defaultSiteSpace)
        if target is None:
            raise BadRequest(
                f"Invalid body field 'defaultSiteSpace': site space '{body.defaultSiteSpace}' "
                "not found"
            )
        await structure.set_default_site_space(ctx, site_id, target)
        if target["section_id"] is not None:
            # The site's default space is its default section's: that section becomes it.
            await structure.set_default_section(ctx, site_id, target["section_id"])
    if values:
        values["updated_at"] = utcnow()
        await repository.update_site(ctx.conn, site_id, values)
    return await get(ctx, org_id, site_id)


async def _check_hostname(ctx: Ctx, org_id: str, site_id: str, hostname: str) -> None:
    """A custom hostname must not be Docshelf's own address (requests to it are the API's and
    the path-addressed sites') nor another site's. Two sites racing for one hostname: the
    unique index refuses the second (the app answers 409)."""
    own = {urlsplit(public_base(ctx)).hostname, urlsplit(ctx.base_url).hostname}
    if hostname in own:
        raise BadRequest(
            f"Invalid body field 'hostname': '{hostname}' is this server's own address"
        )
    settings = getattr(ctx.state, "settings", None)
    allowed = settings.custom_hostnames if settings is not None else ""
    if not policy.hostname_allowed(allowed, org_id, hostname):
        raise BadRequest(
            f"Invalid body field 'hostname': '{hostname}' is not a hostname this server lets "
            "the organization use (its operator lists them in DOCSHELF_CUSTOM_HOSTNAMES)"
        )
    if await repository.hostname_taken(ctx.conn, hostname, site_id):
        raise Conflict(f"Another site already uses the hostname '{hostname}'")


async def delete(ctx: Ctx, org_id: str, site_id: str) -> None:
    await _admin(ctx, org_id, site_id)
    await repository.delete_site(ctx.conn, site_id)


async def set_published(ctx: Ctx, org_id: str, site_id: str, published: bool) -> dict[str, Any]:
    access = await _admin(ctx, org_id, site_id)
    if published and not access.site["site_space_count"]:
        # Published with nothing in it, the site's address would answer 404 to every reader.
        raise BadRequest(
            "The site has no content to publish: add a space to it first "
            f"(POST /v1/orgs/{org_id}/sites/{site_id}/site-spaces)"
        )
    if access.site["published"] != published:
        await repository.update_site(
            ctx.conn, site_id, {"published": published, "updated_at": utcnow()}
        )
        kind = event.SITE_PUBLISHED if published else event.SITE_UNPUBLISHED
        await outbox.emit(ctx, kind, organization=org_id, data={"siteId": site_id})
    return await get(ctx, org_id, site_id)


async def structure_of(
    ctx: Ctx, org_id: str, site_id: str, share_key: str | None = None
) -> dict[str, Any]:
    shown = await structure.fresh_view(ctx, org_id, site_id, share_key)
    return shown.structure()
