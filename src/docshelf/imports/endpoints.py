from typing import Annotated, Literal

from fastapi import Query
from pydantic import Field, StringConstraints

from docshelf.auth.context import Context, StagedContext
from docshelf.imports import service
from docshelf.kit.http import JSON, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router, staged
from docshelf.kit.schemas import Body, Out

router = domain_router(tags=["content"])
runs_router = domain_router(tags=["imports"])

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


Detected = Literal["markdown", "html", "docx", "mkdocs", "docusaurus", "gitbook", "folder"]
# GitBook's ContentImportRun statuses; Docshelf never cancels a run, so never shows `cancelled`.
RunStatus = Literal["pending", "in-progress", "completed", "failed", "cancelled"]
# GitBook's listing filter: `active` is pending or in-progress.
RunFilter = Literal["active", "pending", "in-progress", "completed", "failed", "cancelled"]


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
    detected: Detected = Field(
        description=(
            "Docshelf extension (GitBook's ContentImportRun has no such field): what the "
            "source was read as; an archive is an mkdocs, Docusaurus or GitBook project, "
            "or a plain folder of markdown"
        )
    )


class ImportRunSource(Out):
    type: Literal["website"] = Field(
        description="GitBook's run source for content read from a URL, as every Docshelf import is"
    )
    url: str
    format: Source = Field(description="Docshelf extension: the import's `source`")


class ImportRunTarget(Out):
    space: str


class ImportRunUrls(Out):
    location: str


class ImportRunOut(Out):
    object: Literal["import-run"]
    id: str
    status: RunStatus
    reason: str | None = Field(None, description="Why it failed, when `status` is `failed`")
    createdAt: str
    updatedAt: str
    startedAt: str | None = Field(None, description="When the job first took it")
    completedAt: str | None = Field(None, description="When it was applied")
    source: ImportRunSource
    target: ImportRunTarget
    createdBy: str | None = None
    urls: ImportRunUrls
    revision: str = Field(
        description="Docshelf extension: the revision of main the import creates once applied"
    )
    totalResources: int = Field(description="Docshelf extension: files of the source")
    detected: Detected = Field(description="Docshelf extension: what the source was read as")
    importedResources: int | None = Field(
        None, description="Docshelf extension, once completed: files imported"
    )
    skipped: list[SkippedResource] | None = Field(
        None, description="Docshelf extension, once completed: what was left out and why"
    )
    skippedCounts: SkippedCounts | None = Field(
        None, description="Docshelf extension, once completed: `skipped` by kind"
    )


class ImportRunList(Out):
    items: list[ImportRunOut]
    count: int
    next: dict[str, str] | None = None


@router.post(
    "/spaces/{spaceId}/content/import",
    response_model=ImportResult,
    status_code=201,
    responses={
        202: {
            "model": ImportRunOut,
            "description": "Queued: applied by a job, whose run the Location names",
        }
    },
    summary="Import content from a URL into a new revision of main",
    description=(
        "Sources: markdown (one page), zip (an mkdocs, Docusaurus or GitBook project, or a "
        "folder of markdown files and images), html (one page), docx (a page per top-level "
        "heading). The URL is fetched through the "
        "SSRF-guarded fetcher. An import of at most 200 resources is applied before the answer "
        "(201, `Location` the new revision). A larger one is applied by a background job: the "
        "answer is then 202 with an import run (GitBook's ContentImportRun, status `pending`, "
        "`Location` the run), which `GET /org/{organizationId}/imports/{importRunId}` shows "
        "moving to `in-progress`, then `completed` (with `importedResources` and `skipped`) "
        "or `failed` (with `reason`). `skipped` lists what was left out and why: a page over a "
        "content limit or deeper than 50 levels is left out and the rest imported, and a link "
        "to nothing of the import is reported."
    ),
)
@staged
async def import_content(spaceId: str, body: ImportContent, st: StagedContext) -> JSON:
    outcome = await service.import_content(st, spaceId, body.url, body.source)
    if outcome.run is not None:
        return ok(outcome.run, 202, headers={"Location": outcome.run["urls"]["location"]})
    assert outcome.applied is not None
    location = f"{st.base_url}/v1/spaces/{spaceId}/revisions/{outcome.applied['revision']}"
    return ok(outcome.applied, 201, headers={"Location": location})


@runs_router.get(
    "/org/{organizationId}/imports",
    response_model=ImportRunList,
    summary="List the organization's import runs, most recent first",
    description=(
        "The runs of imports applied by a job, into spaces the caller can read. `status` "
        "`active` stands for `pending` and `in-progress`."
    ),
)
async def list_import_runs(
    organizationId: str,
    ctx: Context,
    paging: Paging,
    space: Annotated[str | None, Query(max_length=64)] = None,
    status: RunFilter | None = None,
) -> JSON:
    return ok(await service.list_runs(ctx, organizationId, paging, space=space, status=status))


@runs_router.get(
    "/org/{organizationId}/imports/{importRunId}",
    response_model=ImportRunOut,
    summary="An import run",
)
async def get_import_run(organizationId: str, importRunId: str, ctx: Context) -> JSON:
    return ok(await service.get_run(ctx, organizationId, importRunId))
