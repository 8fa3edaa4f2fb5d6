from __future__ import annotations

from typing import Any

from docshelf.audit import policy, repository
from docshelf.audit.presenter import present_audit_event
from docshelf.authz.guard import require
from docshelf.events.event import TYPES
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import events
from docshelf.organization import policy as org_policy

_KEYS = (SortKey(events.c.created_at, "created_at"), SortKey(events.c.id, "id"))


async def list_audit_log(
    ctx: Ctx,
    org_id: str,
    params: PageParams,
    *,
    actor: str | None,
    space: str | None,
    type: str | None,
) -> dict[str, Any]:
    access = await org_policy.load(ctx, org_id)
    require(policy.can_read(access), "Only organization admins can read the audit log")
    if type is not None and type not in TYPES:
        raise BadRequest(f"Invalid query parameter 'type': unknown event type {type!r}")
    stmt = repository.in_organization(org_id, actor=actor, space=space, type=type)
    # Newest first, as a log is read.
    page = await paginate(ctx.conn, stmt, keys=_KEYS, params=params, descending=True)
    return page.render(present_audit_event)
