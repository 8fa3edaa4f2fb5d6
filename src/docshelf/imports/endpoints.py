from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from docshelf.auth.context import StagedContext
from docshelf.imports import service
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


class SkippedResource(Out):
    path: str = Field(description="The entry of the source, or the target a SUMMARY.md names")
    reason: str = Field(description="Why it was not imported (or only as an empty page)")
    kind: Literal["skipped", "unresolved", "approximated"] = Field(
        description=(
            "skipped: left out (the reason names the limit when one left it out); unresolved: "
            "an include, table-of-contents entry or link that leads nowhere; approximated: "
            "imported as something close to it"
        )
    )


class SkippedCounts(Out):
    skipped: int
    unresolved: int
    approximated: int


class ImportResult(Out):
    revision: str
    importedResources: int = Field(
        description="Files of the source imported, as a page (markdown) or a file (image)"
    )
    totalResources: int = Field(
        description="Files of the source, SUMMARY.md aside: each is imported or in `skipped`"
    )
    skipped: list[SkippedResource] = Field(
        description=(
            "Docshelf extension: every file of the source left out (hidden folders count as "
            "one entry), every SUMMARY.md entry not imported as written and every local link "
            "that leads to nothing of the import, with the reason"
        )
    )
    skippedCounts: SkippedCounts = Field(description="Docshelf extension: `skipped` by kind")
    detected: Literal["markdown", "html", "docx", "mkdocs", "docusaurus", "gitbook", "folder"] = (
        Field(
            description=(
                "Docshelf extension (GitBook's ContentImportRun has no such field): what the "
                "source was read as; an archive is an mkdocs, Docusaurus or GitBook project, "
                "or a plain folder of markdown"
            )
        )
    )


@router.post(
    "/spaces/{spaceId}/content/import",
    response_model=ImportResult,
    status_code=201,
    summary="Import content from a URL into a new revision of main",
    description=(
        "Sources: markdown (one page), zip (an mkdocs, Docusaurus or GitBook project, or a "
        "folder of markdown files and images), html (one page), docx (a page per top-level "
        "heading). The URL is fetched through the "
        "SSRF-guarded fetcher. Imports of more than 200 resources are applied by a background "
        "job; the answer then names the revision the job creates. `skipped` lists what was "
        "left out and why: a page over a content limit or deeper than 50 levels is left out "
        "and the rest imported, and a link to nothing of the import is reported."
    ),
)
@staged
async def import_content(spaceId: str, body: ImportContent, st: StagedContext) -> JSON:
    result = await service.import_content(st, spaceId, body.url, body.source)
    location = f"{st.base_url}/v1/spaces/{spaceId}/revisions/{result['revision']}"
    return ok(result, 201, headers={"Location": location})
