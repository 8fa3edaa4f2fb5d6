"""Comments and replies on a space's main content or inside a change request (a *thread*).

Access: the space as the caller sees it (404 unless they may read it), then the change request
(404 if missing), then the comment; the policy functions decide what the caller may do (403).
Writes that carry text are staged (kit.routing.staged): a text too costly to parse on the event
loop is parsed in a worker process before the write transaction opens."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from docshelf.authz.guard import not_found, require
from docshelf.change_request import repository as cr_repository
from docshelf.comment import policy, repository
from docshelf.comment.presenter import (
    group_reactions,
    group_repliers,
    present_comment,
    present_page,
    present_reply,
)
from docshelf.comment.schemas import MAX_EMOJI, PostComment, PostReply, UpdateComment, UpdateReply
from docshelf.content import repository as content_repository
from docshelf.content.tree.snapshot import Snapshot
from docshelf.document import markdown as md
from docshelf.document import parsing
from docshelf.events import event, outbox
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx, Staged
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.member import repository as member_repository
from docshelf.member.presenter import present_member
from docshelf.models import comment_replies, comments, members
from docshelf.space import policy as space_policy
from docshelf.space.policy import SpaceAccess

JSON = dict[str, Any]

_COMMENT_KEYS = (SortKey(comments.c.posted_at, "posted_at"), SortKey(comments.c.id, "id"))
_REPLY_KEYS = (
    SortKey(comment_replies.c.posted_at, "posted_at"),
    SortKey(comment_replies.c.id, "id"),
)
_COMMENTER_KEYS = (SortKey(members.c.user_id, "user_id"),)

_CANNOT_POST = "You cannot comment in this space"
_CANNOT_EDIT = "Only its author or an admin of the space can change this"
_CANNOT_RESOLVE = "Only editors of the space can resolve comments"


@dataclass(frozen=True, slots=True)
class Where:
    """A thread as the path names it: main of a space, or a change request by id or number."""

    space_id: str
    change_request: str | None = None


@dataclass(frozen=True, slots=True)
class Thread:
    space: SpaceAccess
    change_request: sa.RowMapping | None

    @property
    def role(self) -> str | None:
        return self.space.role

    @property
    def space_id(self) -> str:
        return str(self.space.row["id"])

    @property
    def cr_id(self) -> str | None:
        return None if self.change_request is None else str(self.change_request["id"])

    @property
    def head(self) -> str:
        """The revision comments are posted on and judged against: main's head or the change
        request's."""
        row = self.change_request if self.change_request is not None else self.space.row
        return str(row["revision_id"])


async def _thread(ctx: Ctx, where: Where) -> Thread:
    space = await space_policy.load(ctx, where.space_id)
    cr = None
    if where.change_request is not None:
        cr = await cr_repository.get(ctx.conn, where.space_id, where.change_request)
        if cr is None:
            not_found("Change request")
    return Thread(space, cr)


async def _comment(ctx: Ctx, thread: Thread, comment_id: str) -> sa.RowMapping:
    row = await repository.get(ctx.conn, thread.space_id, thread.cr_id, comment_id)
    if row is None:
        not_found("Comment")
    return row


async def _reply(ctx: Ctx, comment: sa.RowMapping, reply_id: str) -> sa.RowMapping:
    row = await repository.get_reply(ctx.conn, comment["id"], reply_id)
    if row is None:
        not_found("Comment reply")
    return row


async def _snapshot(ctx: Ctx, space_id: str, revision_id: str) -> Snapshot | None:
    row = await content_repository.get(ctx.conn, space_id, revision_id)
    return None if row is None else content_repository.snapshot(ctx.conn, row)


def _check_text(text: str) -> None:
    """The limits of a page body, through the same parse (document.markdown)."""
    problem = md.check(text)
    if problem is not None:
        # The bounds are a page body's; the sentence names what was sent.
        problem = problem.replace("a page holds", "a comment holds")
        raise BadRequest(f"Invalid body field 'body': {problem}")


async def _parse_first(
    st: Staged, where: Where, text: str | None, check: Callable[[Ctx, Thread], Awaitable[None]]
) -> None:
    """A costly text is parsed in the offload pool before the write opens, once the caller is
    known to be allowed (a refused caller makes us parse nothing); the write then finds the
    parse in the memo. Small texts are parsed inline, in the write."""
    if text is None or not md.costly(text):
        return
    async with st.read() as ctx:
        await check(ctx, await _thread(ctx, where))
    await parsing.warm([text])


# -- presenting ------------------------------------------------------------------------------------


async def _pages(ctx: Ctx, thread: Thread, rows: Sequence[sa.RowMapping]) -> dict[str, JSON]:
    """Each comment's target page as the thread's head has it, `outdated` when the page's text
    is not the one commented on; a page the head no longer has is shown as it was where the
    comment was posted, outdated: a comment is never lost with its page."""
    wanted = {r["target_page"] for r in rows if r["target_page"] is not None}
    if not wanted:
        return {}
    head = await _snapshot(ctx, thread.space_id, thread.head)
    current = await head.pages(wanted) if head is not None else {}
    paths = {pid: await head.path(pid) for pid in current} if head is not None else {}
    # Pages the head no longer has, read once per revision they were commented in.
    gone: dict[str, set[str]] = {}
    for row in rows:
        pid = row["target_page"]
        if pid is not None and pid not in current:
            gone.setdefault(row["target_revision"], set()).add(pid)
    earlier: dict[str, tuple[dict[str, JSON], dict[str, str]]] = {}
    for revision, pids in gone.items():
        snap = await _snapshot(ctx, thread.space_id, revision)
        found = await snap.pages(pids) if snap is not None else {}
        earlier[revision] = (found, {pid: await snap.path(pid) for pid in found} if snap else {})
    out: dict[str, JSON] = {}
    for row in rows:
        pid = row["target_page"]
        if pid is None:
            continue
        rec = current.get(pid)
        if rec is not None:
            out[row["id"]] = present_page(
                rec, paths[pid], rec.get("markdown") != row["target_page_text"]
            )
            continue
        found, found_paths = earlier[row["target_revision"]]
        out[row["id"]] = present_page(found.get(pid) or {"id": pid}, found_paths.get(pid, ""), True)
    return out


async def _present_comments(
    ctx: Ctx, thread: Thread, rows: Sequence[sa.RowMapping], fmt: str | None
) -> list[JSON]:
    """One statement each for the page's reactions and replies, whatever the page size."""
    ids = [r["id"] for r in rows]
    reactions = group_reactions(await repository.reactions(ctx.conn, ids), ctx.base_url)
    replies = group_repliers(await repository.repliers(ctx.conn, ids), ctx.base_url)
    pages = await _pages(ctx, thread, rows)
    if fmt == "document":
        await parsing.warm([r["markdown"] for r in rows])
    return [
        present_comment(
            r,
            role=thread.role,
            caller=ctx.actor.user_id,
            reactions=reactions.get(r["id"], []),
            replies=replies.get(r["id"], (0, [])),
            page=pages.get(r["id"]),
            fmt=fmt,
            base_url=ctx.base_url,
        )
        for r in rows
    ]


async def _present_replies(
    ctx: Ctx, thread: Thread, comment: sa.RowMapping, rows: Sequence[sa.RowMapping], fmt: str | None
) -> list[JSON]:
    reactions = group_reactions(
        await repository.reactions(ctx.conn, [r["id"] for r in rows]), ctx.base_url
    )
    if fmt == "document":
        await parsing.warm([r["markdown"] for r in rows])
    return [
        present_reply(
            r,
            comment,
            role=thread.role,
            caller=ctx.actor.user_id,
            reactions=reactions.get(r["id"], []),
            fmt=fmt,
            base_url=ctx.base_url,
        )
        for r in rows
    ]


async def _one_comment(ctx: Ctx, thread: Thread, comment_id: str, fmt: str | None) -> JSON:
    return (await _present_comments(ctx, thread, [await _comment(ctx, thread, comment_id)], fmt))[0]


# -- comments --------------------------------------------------------------------------------------


async def list_comments(
    ctx: Ctx,
    where: Where,
    params: PageParams,
    *,
    status: str,
    order: str,
    fmt: str | None,
    target_page: str | None,
    authors: list[str] | None,
) -> JSON:
    thread = await _thread(ctx, where)
    stmt, values = repository.listing(
        thread.space_id,
        thread.cr_id,
        status=None if status == "all" else status,
        target_page=target_page,
        authors=sorted(set(authors or ())),
    )
    page = await paginate(
        ctx.conn,
        stmt,
        keys=_COMMENT_KEYS,
        params=params,
        descending=order == "desc",
        values=values,
    )
    return page.with_items(await _present_comments(ctx, thread, page.rows, fmt))


async def get_comment(ctx: Ctx, where: Where, comment_id: str, fmt: str | None) -> JSON:
    thread = await _thread(ctx, where)
    return await _one_comment(ctx, thread, comment_id, fmt)


async def post_comment(st: Staged, where: Where, body: PostComment) -> JSON:
    text = body.body.markdown or ""

    async def check(ctx: Ctx, thread: Thread) -> None:
        require(policy.can_post(thread.role), _CANNOT_POST)

    await _parse_first(st, where, text, check)
    async with st.write() as ctx:
        thread = await _thread(ctx, where)
        await check(ctx, thread)
        _check_text(text)
        page_text: str | None = None
        if body.page is not None:
            head = await _snapshot(ctx, thread.space_id, thread.head)
            rec = await head.page(body.page) if head is not None else None
            if rec is None:
                content = "change request's" if thread.cr_id else "space's"
                raise BadRequest(
                    f"Invalid body field 'page': no page {body.page!r} in the {content} content"
                )
            page_text = rec.get("markdown")
        comment_id = new_id()
        await repository.insert(
            ctx.conn,
            {
                "id": comment_id,
                "space_id": thread.space_id,
                "change_request_id": thread.cr_id,
                "posted_by": ctx.actor.user_id,
                "posted_at": utcnow(),
                "markdown": text,
                "status": "open",
                "target_revision": thread.head,
                "target_page": body.page,
                "target_page_text": page_text,
                "target_node": body.node,
            },
        )
        data: dict[str, Any] = {"commentId": comment_id}
        if thread.cr_id is not None:
            data["changeRequestId"] = thread.cr_id
        if body.page is not None:
            data["pageId"] = body.page
        await outbox.emit(ctx, event.COMMENT_CREATED, space=thread.space_id, data=data)
        return await _one_comment(ctx, thread, comment_id, None)


def _given(body: UpdateComment | UpdateReply) -> None:
    for name in body.model_fields_set:
        if getattr(body, name) is None:
            raise BadRequest(f"Invalid body field '{name}': must not be null")
    added, removed = set(body.addedReactions or ()), set(body.removedReactions or ())
    if added & removed:
        raise BadRequest(
            "Invalid body field 'removedReactions': "
            f"{' '.join(sorted(added & removed))} is also in addedReactions"
        )


def _require_update(
    role: str | None, row: sa.RowMapping, caller: str, body: UpdateComment | UpdateReply
) -> None:
    author = row["posted_by"] == caller
    if body.body is not None:
        require(policy.can_edit(role, author=author), _CANNOT_EDIT)
    if isinstance(body, UpdateComment) and body.resolved is not None:
        require(policy.can_resolve(role), _CANNOT_RESOLVE)
    if body.addedReactions or body.removedReactions:
        require(policy.can_post(role), "You cannot react in this space")


async def _react(
    ctx: Ctx, comment_id: str, subject_id: str, body: UpdateComment | UpdateReply
) -> None:
    now = utcnow()
    await repository.remove_reactions(
        ctx.conn,
        subject_id=subject_id,
        user_id=ctx.actor.user_id,
        emojis=set(body.removedReactions or ()),
    )
    added = set(body.addedReactions or ())
    await repository.add_reactions(
        ctx.conn,
        comment_id=comment_id,
        subject_id=subject_id,
        user_id=ctx.actor.user_id,
        emojis=added,
        now=now,
    )
    # Raised after the insert: the whole request rolls back, so nothing is kept.
    if added and await repository.distinct_emojis(ctx.conn, subject_id) > MAX_EMOJI:
        raise BadRequest(
            f"Invalid body field 'addedReactions': at most {MAX_EMOJI} different emoji per comment"
        )


async def update_comment(st: Staged, where: Where, comment_id: str, body: UpdateComment) -> JSON:
    _given(body)
    text = body.body.markdown if body.body is not None else None

    async def check(ctx: Ctx, thread: Thread) -> None:
        row = await _comment(ctx, thread, comment_id)
        _require_update(thread.role, row, ctx.actor.user_id, body)

    await _parse_first(st, where, text, check)
    async with st.write() as ctx:
        thread = await _thread(ctx, where)
        row = await _comment(ctx, thread, comment_id)
        _require_update(thread.role, row, ctx.actor.user_id, body)
        now = utcnow()
        if text is not None:
            _check_text(text)
            await repository.set_text(ctx.conn, comments, row["id"], text, now)
        if body.resolved is not None:
            await repository.set_resolved(ctx.conn, row, body.resolved, ctx.actor.user_id, now)
        await _react(ctx, row["id"], row["id"], body)
        return await _one_comment(ctx, thread, comment_id, None)


async def delete_comment(ctx: Ctx, where: Where, comment_id: str) -> None:
    thread = await _thread(ctx, where)
    row = await _comment(ctx, thread, comment_id)
    require(
        policy.can_delete(thread.role, author=row["posted_by"] == ctx.actor.user_id), _CANNOT_EDIT
    )
    await repository.delete(ctx.conn, row)


# -- replies ---------------------------------------------------------------------------------------


async def list_replies(
    ctx: Ctx, where: Where, comment_id: str, params: PageParams, fmt: str | None
) -> JSON:
    thread = await _thread(ctx, where)
    comment = await _comment(ctx, thread, comment_id)
    # Oldest first: a conversation reads in the order it was held.
    page = await paginate(
        ctx.conn,
        repository.REPLIES,
        keys=_REPLY_KEYS,
        params=params,
        values={"comment_id": comment["id"]},
    )
    return page.with_items(await _present_replies(ctx, thread, comment, page.rows, fmt))


async def _one_reply(
    ctx: Ctx, thread: Thread, comment: sa.RowMapping, reply_id: str, fmt: str | None
) -> JSON:
    row = await _reply(ctx, comment, reply_id)
    return (await _present_replies(ctx, thread, comment, [row], fmt))[0]


async def get_reply(
    ctx: Ctx, where: Where, comment_id: str, reply_id: str, fmt: str | None
) -> JSON:
    thread = await _thread(ctx, where)
    comment = await _comment(ctx, thread, comment_id)
    return await _one_reply(ctx, thread, comment, reply_id, fmt)


async def post_reply(
    st: Staged, where: Where, comment_id: str, body: PostReply, fmt: str | None
) -> JSON:
    text = body.body.markdown or ""

    async def check(ctx: Ctx, thread: Thread) -> None:
        await _comment(ctx, thread, comment_id)
        require(policy.can_post(thread.role), _CANNOT_POST)

    await _parse_first(st, where, text, check)
    async with st.write() as ctx:
        thread = await _thread(ctx, where)
        comment = await _comment(ctx, thread, comment_id)
        require(policy.can_post(thread.role), _CANNOT_POST)
        _check_text(text)
        reply_id = new_id()
        await repository.insert_reply(
            ctx.conn,
            {
                "id": reply_id,
                "comment_id": comment["id"],
                "posted_by": ctx.actor.user_id,
                "posted_at": utcnow(),
                "markdown": text,
            },
        )
        data = {"commentId": comment["id"], "replyId": reply_id}
        if thread.cr_id is not None:
            data["changeRequestId"] = thread.cr_id
        await outbox.emit(ctx, event.COMMENT_REPLY_CREATED, space=thread.space_id, data=data)
        return await _one_reply(ctx, thread, comment, reply_id, fmt)


async def update_reply(
    st: Staged, where: Where, comment_id: str, reply_id: str, body: UpdateReply
) -> JSON:
    _given(body)
    text = body.body.markdown if body.body is not None else None

    async def check(ctx: Ctx, thread: Thread) -> None:
        row = await _reply(ctx, await _comment(ctx, thread, comment_id), reply_id)
        _require_update(thread.role, row, ctx.actor.user_id, body)

    await _parse_first(st, where, text, check)
    async with st.write() as ctx:
        thread = await _thread(ctx, where)
        comment = await _comment(ctx, thread, comment_id)
        row = await _reply(ctx, comment, reply_id)
        _require_update(thread.role, row, ctx.actor.user_id, body)
        if text is not None:
            _check_text(text)
            await repository.set_text(ctx.conn, comment_replies, row["id"], text, utcnow())
        await _react(ctx, comment["id"], row["id"], body)
        return await _one_reply(ctx, thread, comment, reply_id, None)


async def delete_reply(ctx: Ctx, where: Where, comment_id: str, reply_id: str) -> None:
    thread = await _thread(ctx, where)
    comment = await _comment(ctx, thread, comment_id)
    row = await _reply(ctx, comment, reply_id)
    require(
        policy.can_delete(thread.role, author=row["posted_by"] == ctx.actor.user_id), _CANNOT_EDIT
    )
    await repository.delete_reply(ctx.conn, row["id"])


# -- commenters ------------------------------------------------------------------------------------


async def list_commenters(ctx: Ctx, where: Where, params: PageParams) -> JSON:
    """Members of the space's organization who posted a comment or a reply in the thread, as
    GitBook lists them (OrganizationMember); guests may not list members, here as elsewhere."""
    thread = await _thread(ctx, where)
    row = thread.space.row
    require(
        row["caller_member"] is not None and row["caller_role"] is not None,
        "Guests cannot list the organization's members",
    )
    stmt = member_repository.in_organization(row["organization_id"]).where(
        repository.commenters(thread.space_id, thread.cr_id)
    )
    page = await paginate(ctx.conn, stmt, keys=_COMMENTER_KEYS, params=params)
    body = page.render(lambda r: present_member(r, ctx.base_url))
    # GitBook 0.130 requires `total` beside `count` on this listing (0.202 dropped it).
    body["total"] = body["count"]
    return body
