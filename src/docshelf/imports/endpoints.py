from typing import Annotated, Literal

from pydantic import StringConstraints

from docshelf.imports import service
from docshelf.kit.context import StagedContext
from docshelf.kit.http import JSON, ok
from docshelf.kit.routing import domain_router, staged
from docshelf.kit.schemas import Body, Out

router = domain_router(tags=["content"])

# GitBook's ImportContentSource; the service says which of them Docshelf supports.
Source = Literal[
    "website",
    "docx",
    "markdown",
    "html",
    "zip",
    "confluence",
    "github-wiki",
    "notion",
    "google-docs",
]


class ImportContent(Body):
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)]
    source: Source


class ImportResult(Out):
    revision: str
    importedResources: int
    totalResources: int


@router.post(
    "/spaces/{spaceId}/content/import",
    response_model=ImportResult,
    status_code=201,
    summary="Import content from a URL into a new revision of main",
    description=(
        "Sources: markdown (one page), zip (markdown files and images, structured by SUMMARY.md "
        "or by folders and README.md files), html (one page). The URL is fetched through the "
        "SSRF-guarded fetcher. Imports of more than 200 resources are applied by a background "
        "job; the answer then names the revision the job creates."
    ),
)
@staged
async def import_content(spaceId: str, body: ImportContent, st: StagedContext) -> JSON:
    result = await service.import_content(st, spaceId, body.url, body.source)
    location = f"{st.base_url}/v1/spaces/{spaceId}/revisions/{result['revision']}"
    return ok(result, 201, headers={"Location": location})
