"""The audit log: a Docshelf extension read from the domain events (GitBook 0.202 has a
compliance log of its own at /audit-events, with another shape)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from docshelf.audit import service
from docshelf.audit.schemas import AuditEventList
from docshelf.auth.context import Context
from docshelf.kit.http import JSON, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router

router = domain_router(tags=["audit log"])
Filter = Annotated[str | None, Query(max_length=64)]


@router.get(
    "/orgs/{organizationId}/audit-log",
    response_model=AuditEventList,
    summary="The organization's audit log, newest first",
)
async def list_audit_log(
    organizationId: str,
    ctx: Context,
    paging: Paging,
    actor: Filter = None,
    space: Filter = None,
    type: Filter = None,
) -> JSON:
    return ok(
        await service.list_audit_log(
            ctx, organizationId, paging, actor=actor, space=space, type=type
        )
    )
