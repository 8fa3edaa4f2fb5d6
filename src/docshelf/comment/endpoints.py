"""Comment routes, mounted twice with the same operations: on a space's main content
(`/spaces/{spaceId}/…`) and inside a change request (`/spaces/{spaceId}/change-requests/
{changeRequestId}/…`). The change request's comment ids are named `changeRequestCommentId` and
`changeRequestCommentReplyId` in our description (GitBook names both `commentId`): the path is
the same; the names only keep the two families apart in the generated test matrices."""

# No `from __future__ import annotations`: the route signatures close over `where`, which
# FastAPI must see as a real object, not a string to resolve later.
from collections.abc import Awaitable, Callable
from typing import Annotated, Literal

from fastapi import Depends, Path, Query
from starlette.responses import Response

from docshelf.auth.context import Context, StagedContext
from docshelf.comment import service
from docshelf.comment.schemas import (
    CommentList,
    CommentOut,
    Format,
    PostComment,
    PostReply,
    ReplyList,
    ReplyOut,
    UpdateComment,
    UpdateReply,
)
from docshelf.comment.service import Where
from docshelf.kit.errors import BadRequest
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router, staged
from docshelf.member.schemas import MemberList

router = domain_router(tags=["comments"])

FormatQuery = Annotated[
    Format | None, Query(description="What `body` holds: `markdown` (default) or `document`")
]
MAX_AUTHORS = 100


async def in_space(spaceId: str) -> Where:
    return Where(spaceId)


async def in_change_request(spaceId: str, changeRequestId: str) -> Where:
    return Where(spaceId, changeRequestId)


def _authors(authors: list[str] | None) -> list[str] | None:
    if authors is not None and (
        len(authors) > MAX_AUTHORS or any(not 1 <= len(a) <= 64 for a in authors)
    ):
        raise BadRequest(
            f"Invalid query parameter 'authors': at most {MAX_AUTHORS} user ids of 1..64 characters"
        )
    return authors


def _mount(
    prefix: str, where_of: Callable[..., Awaitable[Where]], kind: str, comment: str, reply: str
) -> None:
    label = {"in_space": "on a space", "in_change_request": "in a change request"}[kind]
    W = Annotated[Where, Depends(where_of)]
    base = f"{prefix}/comments"
    one = f"{base}/{{{comment}}}"
    replies = f"{one}/replies"
    one_reply = f"{replies}/{{{reply}}}"
    C = Annotated[str, Path(alias=comment)]
    R = Annotated[str, Path(alias=reply)]

    @router.get(
        base, response_model=CommentList, summary=f"Comments {label}", name=f"list_comments_{kind}"
    )
    async def list_comments(
        where: W,
        ctx: Context,
        paging: Paging,
        order: Literal["asc", "desc"] = "desc",
        status: Literal["all", "open", "resolved"] = "all",
        format: FormatQuery = None,
        targetPage: Annotated[str | None, Query(max_length=100)] = None,
        authors: Annotated[list[str] | None, Query(description="User ids")] = None,
    ) -> JSON:
        return ok(
            await service.list_comments(
                ctx,
                where,
                paging,
                status=status,
                order=order,
                fmt=format,
                target_page=targetPage,
                authors=_authors(authors),
            )
        )

    @router.post(
        base,
        response_model=CommentOut,
        summary=f"Post a comment {label}",
        name=f"post_comment_{kind}",
    )
    @staged
    async def post_comment(where: W, body: PostComment, st: StagedContext) -> JSON:
        return ok(await service.post_comment(st, where, body))

    @router.get(
        one, response_model=CommentOut, summary=f"A comment {label}", name=f"get_comment_{kind}"
    )
    async def get_comment(where: W, commentId: C, ctx: Context, format: FormatQuery = None) -> JSON:
        return ok(await service.get_comment(ctx, where, commentId, format))

    @router.put(
        one,
        response_model=CommentOut,
        summary=f"Resolve, edit or react to a comment {label}",
        name=f"update_comment_{kind}",
    )
    @staged
    async def update_comment(
        where: W, commentId: C, body: UpdateComment, st: StagedContext
    ) -> JSON:
        return ok(await service.update_comment(st, where, commentId, body))

    @router.delete(
        one, status_code=205, summary=f"Delete a comment {label}", name=f"delete_comment_{kind}"
    )
    async def delete_comment(where: W, commentId: C, ctx: Context) -> Response:
        await service.delete_comment(ctx, where, commentId)
        return empty(205)

    @router.get(
        replies,
        response_model=ReplyList,
        summary=f"Replies to a comment {label}",
        name=f"list_replies_{kind}",
    )
    async def list_replies(
        where: W, commentId: C, ctx: Context, paging: Paging, format: FormatQuery = None
    ) -> JSON:
        return ok(await service.list_replies(ctx, where, commentId, paging, format))

    @router.post(
        replies,
        response_model=ReplyOut,
        summary=f"Reply to a comment {label}",
        name=f"post_reply_{kind}",
    )
    @staged
    async def post_reply(
        where: W, commentId: C, body: PostReply, st: StagedContext, format: FormatQuery = None
    ) -> JSON:
        return ok(await service.post_reply(st, where, commentId, body, format))

    @router.get(
        one_reply, response_model=ReplyOut, summary=f"A reply {label}", name=f"get_reply_{kind}"
    )
    async def get_reply(
        where: W, commentId: C, replyId: R, ctx: Context, format: FormatQuery = None
    ) -> JSON:
        return ok(await service.get_reply(ctx, where, commentId, replyId, format))

    @router.put(
        one_reply,
        response_model=ReplyOut,
        summary=f"Edit or react to a reply {label}",
        name=f"update_reply_{kind}",
    )
    @staged
    async def update_reply(
        where: W, commentId: C, replyId: R, body: UpdateReply, st: StagedContext
    ) -> JSON:
        return ok(await service.update_reply(st, where, commentId, replyId, body))

    @router.delete(
        one_reply, status_code=205, summary=f"Delete a reply {label}", name=f"delete_reply_{kind}"
    )
    async def delete_reply(where: W, commentId: C, replyId: R, ctx: Context) -> Response:
        await service.delete_reply(ctx, where, commentId, replyId)
        return empty(205)

    @router.get(
        f"{prefix}/commenters",
        response_model=MemberList,
        summary=f"Members who commented {label}",
        name=f"list_commenters_{kind}",
    )
    async def list_commenters(where: W, ctx: Context, paging: Paging) -> JSON:
        return ok(await service.list_commenters(ctx, where, paging))


_mount("/spaces/{spaceId}", in_space, "in_space", "commentId", "commentReplyId")
_mount(
    "/spaces/{spaceId}/change-requests/{changeRequestId}",
    in_change_request,
    "in_change_request",
    "changeRequestCommentId",
    "changeRequestCommentReplyId",
)
