from typing import Annotated

from fastapi import Query

from docshelf.auth.context import StagedContext
from docshelf.content.service import Where
from docshelf.kit.http import JSON, ok
from docshelf.kit.routing import domain_router, staged
from docshelf.pdf import service
from docshelf.pdf.schemas import PdfOut

router = domain_router(tags=["pdf"])

Only = Annotated[bool | None, Query(description="Export only the page given by `page`.")]
PageId = Annotated[
    str | None,
    Query(description="Export this page (with its sub-pages unless `only`).", max_length=64),
]
_DESCRIPTION = (
    "Renders the pages as a PDF (cover, table of contents, one page per sheet) and answers a "
    "signed download URL valid for 1 hour. A repeated request for unchanged content reuses "
    "the PDF already rendered."
)


@router.get(
    "/spaces/{spaceId}/pdf",
    response_model=PdfOut,
    summary="A URL of the space's content as PDF",
    description=_DESCRIPTION,
)
@staged
async def space_pdf(
    spaceId: str, st: StagedContext, only: Only = None, page: PageId = None
) -> JSON:
    return ok(await service.export(st, spaceId, Where(), only=only, page=page))


@router.get(
    "/spaces/{spaceId}/change-requests/{changeRequestId}/pdf",
    response_model=PdfOut,
    summary="A URL of a change request's content as PDF",
    description=_DESCRIPTION,
)
@staged
async def change_request_pdf(
    spaceId: str,
    changeRequestId: str,
    st: StagedContext,
    only: Only = None,
    page: PageId = None,
) -> JSON:
    where = Where(change_request=changeRequestId)
    return ok(await service.export(st, spaceId, where, only=only, page=page))
