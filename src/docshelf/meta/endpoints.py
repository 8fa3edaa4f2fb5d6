from __future__ import annotations

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, ok
from docshelf.kit.routing import domain_router
from docshelf.meta import service
from docshelf.meta.schemas import ApiInformation

router = domain_router(tags=["api"])


@router.get("/", response_model=ApiInformation, summary="API version and build")
async def get_api_information(ctx: Context) -> JSON:
    return ok(service.api_information())
