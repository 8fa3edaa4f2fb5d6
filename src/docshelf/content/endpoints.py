from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import Depends, Query, Request
from starlette.responses import Response, StreamingResponse

from docshelf.auth.context import Context, StagedContext
from docshelf.change_request.schemas import ChangeRequestOut
from docshelf.content import service
from docshelf.content.downloads import served_type
from docshelf.content.schemas import (
    ChangesOut,
    ContentChanges,
    ContentUpdateOut,
    FileList,
    FileOut,
    MergeOut,
    PageOut,
    PagesOut,
    ReusableContentOut,
    RevisionOut,
)
from docshelf.content.service import Where
from docshelf.kit.http import JSON, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router, reads_published, staged

router = domain_router(tags=["content"])
public_router = domain_router(tags=["content"])

# Accepted for GitBook clients; every revision is returned whole (no git metadata or computed
# content exists to omit).
Metadata = Annotated[bool, Query()]
Computed = Annotated[bool, Query()]
Format = Annotated[Literal["markdown", "document"], Query()]
Refs = Annotated[Literal["relative", "stable"], Query(alias="format.markdown.refs")]
# GitBook's `dereferenced`: `true` or `reusable-contents` inline the reusable contents a page
# includes (the only references Docshelf can expand).
Dereferenced = Annotated[bool | Literal["reusable-contents"], Query()]
# GitBook's `evaluated`: Docshelf's documents hold no expressions to evaluate, so each value
# gives the document as stored; accepted so that GitBook's renderer can ask.
Evaluated = Annotated[bool | Literal["deterministic-only"], Query()]


async def _main() -> Where:
    return Where()


async def _change_request(changeRequestId: str) -> Where:
    return Where(change_request=changeRequestId)


async def _revision(revisionId: str) -> Where:
    return Where(revision=revisionId)


def _reads(
    base: str, where_of: Callable[..., Awaitable[Where]], what: str, *, published: bool
) -> None:
    """The same six reads for main content, a change request's content and a revision.
    `published`: a site content token may read them (a change request is never published)."""
    At = Annotated[Where, Depends(where_of)]

    def mark(endpoint: Callable[..., Any]) -> Callable[..., Any]:
        return reads_published(endpoint) if published else endpoint

    @router.get(base, response_model=RevisionOut, summary=f"The revision of {what}")
    @mark
    async def get_revision(
        spaceId: str, where: At, ctx: Context, metadata: Metadata = True, computed: Computed = True
    ) -> JSON:
        return ok(await service.get_revision(ctx, spaceId, where))

    @router.get(base + "/pages", response_model=PagesOut, summary=f"The pages of {what}")
    @mark
    async def list_pages(
        spaceId: str, where: At, ctx: Context, metadata: Metadata = True, computed: Computed = True
    ) -> JSON:
        return ok(await service.list_pages(ctx, spaceId, where))

    @router.get(base + "/files", response_model=FileList, summary=f"The files of {what}")
    @mark
    async def list_files(
        spaceId: str,
        where: At,
        ctx: Context,
        paging: Paging,
        metadata: Metadata = True,
        computed: Computed = True,
    ) -> JSON:
        return ok(await service.list_files(ctx, spaceId, where, paging))

    @router.get(base + "/files/{fileId}", response_model=FileOut, summary=f"A file of {what}")
    @mark
    async def get_file(
        spaceId: str,
        fileId: str,
        where: At,
        ctx: Context,
        metadata: Metadata = True,
        computed: Computed = True,
    ) -> JSON:
        return ok(await service.get_file(ctx, spaceId, where, fileId))

    @router.get(base + "/page/{pageId}", response_model=PageOut, summary=f"A page of {what}")
    @mark
    async def get_page(
        spaceId: str,
        pageId: str,
        where: At,
        ctx: Context,
        format: Format = "document",
        refs: Refs = "relative",
        dereferenced: Dereferenced = False,
        metadata: Metadata = True,
        computed: Computed = True,
    ) -> JSON:
        return ok(
            await service.get_page(
                ctx, spaceId, where, pageId, format, refs, dereferenced=bool(dereferenced)
            )
        )

    @router.get(
        base + "/path/{pagePath:path}",
        response_model=PageOut,
        summary=f"A page of {what}, by its path",
    )
    @mark
    async def get_page_by_path(
        spaceId: str,
        pagePath: str,
        where: At,
        ctx: Context,
        format: Format = "document",
        refs: Refs = "relative",
        dereferenced: Dereferenced = False,
        metadata: Metadata = True,
        computed: Computed = True,
    ) -> JSON:
        return ok(
            await service.get_page_by_path(
                ctx, spaceId, where, pagePath, format, refs, dereferenced=bool(dereferenced)
            )
        )

    @router.get(
        base + "/reusable-contents/{reusableContentId}",
        response_model=ReusableContentOut,
        summary=f"A reusable content of {what}",
    )
    @mark
    async def get_reusable_content(
        spaceId: str,
        reusableContentId: str,
        where: At,
        ctx: Context,
        metadata: Metadata = True,
        computed: Computed = True,
    ) -> JSON:
        return ok(await service.get_reusable(ctx, spaceId, where, reusableContentId))


SPACE = "/spaces/{spaceId}"
CR = SPACE + "/change-requests/{changeRequestId}"
REVISION = SPACE + "/revisions/{revisionId}"

_reads(SPACE + "/content", _main, "the space's main content", published=True)
_reads(CR + "/content", _change_request, "a change request", published=False)
_reads(REVISION, _revision, "a revision", published=True)


@router.get(
    REVISION + "/page/{pageId}/meta-links",
    response_model=dict[str, Any],
    summary="The canonical and alternate links of a page in a revision",
)
@reads_published
async def get_page_meta_links(spaceId: str, revisionId: str, pageId: str, ctx: Context) -> JSON:
    return ok(await service.get_page_meta_links(ctx, spaceId, Where(revision=revisionId), pageId))


@router.get(
    REVISION + "/page/{pageId}/document",
    response_model=dict[str, Any],
    summary="The body of a page in a revision, as a JSON document",
)
@reads_published
async def get_page_document(
    spaceId: str,
    revisionId: str,
    pageId: str,
    ctx: Context,
    evaluated: Evaluated = False,
    dereferenced: Dereferenced = False,
) -> JSON:
    return ok(
        await service.get_page_document(
            ctx, spaceId, Where(revision=revisionId), pageId, dereferenced=bool(dereferenced)
        )
    )


@router.get(
    REVISION + "/reusable-contents/{reusableContentId}/document",
    response_model=dict[str, Any],
    summary="The body of a reusable content in a revision, as a JSON document",
)
@reads_published
async def get_reusable_content_document(
    spaceId: str,
    revisionId: str,
    reusableContentId: str,
    ctx: Context,
    evaluated: Evaluated = False,
    dereferenced: Dereferenced = False,
) -> JSON:
    # Nothing to evaluate or dereference: a reusable content includes no other.
    return ok(
        await service.get_reusable_document(
            ctx, spaceId, Where(revision=revisionId), reusableContentId
        )
    )


@router.post(
    SPACE + "/content",
    response_model=ContentUpdateOut,
    summary="Edit main content directly (Docshelf extension)",
    description=(
        "Applies the same body as a change request content update straight to the space's "
        "main content, as one new revision; only for spaces whose editMode is `live`. "
        "Answers `{revision, changes, insertedFiles?}`."
    ),
)
@staged
async def write_live(spaceId: str, body: ContentChanges, st: StagedContext) -> JSON:
    return ok(await service.write_live(st, spaceId, body))


@router.post(
    CR + "/content",
    # compat=true (the default, as GitBook) answers the change request; compat=false answers
    # GitBook's ChangeRequestContentUpdate.
    response_model=ChangeRequestOut | ContentUpdateOut,
    summary="Edit the content of a change request",
)
@staged
async def write_change_request(
    spaceId: str,
    changeRequestId: str,
    body: ContentChanges,
    st: StagedContext,
    compat: bool = True,
) -> JSON:
    return ok(await service.write_change_request(st, spaceId, changeRequestId, body, compat=compat))


@router.post(CR + "/merge", response_model=MergeOut, summary="Merge a change request")
async def merge(spaceId: str, changeRequestId: str, ctx: Context) -> JSON:
    return ok(await service.merge(ctx, spaceId, changeRequestId))


@router.post(
    CR + "/update", response_model=MergeOut, summary="Pull main content into a change request"
)
async def update(spaceId: str, changeRequestId: str, ctx: Context) -> JSON:
    return ok(await service.update(ctx, spaceId, changeRequestId))


@router.get(CR + "/changes", response_model=ChangesOut, summary="What a change request changes")
async def change_request_changes(
    spaceId: str,
    changeRequestId: str,
    ctx: Context,
    limit: Annotated[int, Query(ge=0, le=1000)] = 10,
) -> JSON:
    return ok(await service.changes(ctx, spaceId, Where(change_request=changeRequestId), limit))


@router.get(REVISION + "/changes", response_model=ChangesOut, summary="What a revision changes")
async def revision_changes(
    spaceId: str,
    revisionId: str,
    ctx: Context,
    limit: Annotated[int, Query(ge=0, le=1000)] = 10,
    metadata: Metadata = True,
    computed: Computed = True,
) -> JSON:
    return ok(await service.changes(ctx, spaceId, Where(revision=revisionId), limit))


# HEAD too: clients and proxies ask a file's type and size before fetching it.
@public_router.head("/downloads/{token}", response_class=Response, include_in_schema=False)
@public_router.get(
    "/downloads/{token}",
    summary="A file's bytes, through a signed link (Docshelf extension; an export's expires)",
    response_class=Response,
)
@staged
async def download(token: str, request: Request) -> Response:
    # Staged: no connection is held while the blob store opens the file (an S3 round trip).
    blob, content_type, name = await service.download(
        request.app.state.engine, request.app.state.blobs, token
    )
    media_type, inline = served_type(content_type)
    disposition = "inline" if inline else "attachment"
    headers = {
        "Content-Length": str(blob.size),
        "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(name, safe='')}",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox; default-src 'none'",
        "Cache-Control": "private, max-age=300",
    }
    if request.method == "HEAD":
        await blob.discard()
        return Response(media_type=media_type, headers=headers)
    # Streamed chunk by chunk: a download holds one chunk in memory, whatever the file's size.
    return StreamingResponse(blob.chunks, media_type=media_type, headers=headers)
