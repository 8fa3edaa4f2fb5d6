"""Reviews, requested reviewers and contributors of a change request, and the merge rules
that a merge must meet (checked by `content.service.merge` inside its transaction)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.authz.content import ContentScope
from docshelf.authz.guard import not_found, require
from docshelf.change_request import repository as cr_repository
from docshelf.document.model import document_to_markdown
from docshelf.events import event, outbox
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest, Conflict
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.merge_rules import repository as merge_rules_repository
from docshelf.merge_rules import rules
from docshelf.review import policy, repository
from docshelf.review.presenter import (
    Format,
    present_contributor,
    present_requested_reviewer,
    present_review,
)
from docshelf.review.schemas import RequestReviewers, SubmitReview
from docshelf.space import policy as space_policy
from docshelf.space.policy import SpaceAccess

_REVIEW_KEYS = (
    SortKey(repository.reviews.c.created_at, "created_at"),
    SortKey(repository.reviews.c.id, "id"),
)
_REQUEST_KEYS = (
    SortKey(repository.reviewers.c.created_at, "created_at"),
    SortKey(repository.reviewers.c.user_id, "user_id"),
)


async def _load(ctx: Ctx, space_id: str, ref: str) -> tuple[SpaceAccess, sa.RowMapping]:
    space = await space_policy.load(ctx, space_id)
    cr = await cr_repository.get(ctx.conn, space_id, ref)
    if cr is None:
        not_found("Change request")
    return space, cr


def _open(cr: sa.RowMapping, what: str) -> None:
    if cr["status"] == "merged":
        raise Conflict(f"A merged change request cannot {what}")
    if cr["status"] == "archived":
        raise Conflict(f"An archived change request cannot {what}; reopen it first")


async def list_reviews(
    ctx: Ctx, space_id: str, ref: str, params: PageParams, *, outdated: bool | None, fmt: Format
) -> dict[str, Any]:
    _, cr = await _load(ctx, space_id, ref)
    stmt = repository.reviews_of(cr["id"])
    if outdated is not None:
        stmt = stmt.where(repository.OUTDATED if outdated else sa.not_(repository.OUTDATED))
    # Most recent first, as change requests are listed.
    page = await paginate(ctx.conn, stmt, keys=_REVIEW_KEYS, params=params, descending=True)
    return page.render(lambda row: present_review(row, ctx.base_url, fmt))


async def get_review(
    ctx: Ctx, space_id: str, ref: str, review_id: str, fmt: Format
) -> dict[str, Any]:
    _, cr = await _load(ctx, space_id, ref)
    row = await repository.get_review(ctx.conn, cr["id"], review_id)
    if row is None:
        not_found("Review")
    return present_review(row, ctx.base_url, fmt)


async def submit(ctx: Ctx, space_id: str, ref: str, body: SubmitReview) -> dict[str, Any]:
    space, found = await _load(ctx, space_id, ref)
    me = ctx.actor.user_id
    request = await repository.requested(ctx.conn, found["id"], me)
    require(
        policy.can_review(space.role, requested=request is not None),
        "You cannot review change requests in this space",
    )
    comment = body.comment
    text = comment.markdown if comment is not None else None
    if comment is not None and comment.document is not None:
        if text is not None:
            raise BadRequest(
                "Invalid body field 'comment': give it as markdown or as a document, not both"
            )
        try:
            text = document_to_markdown(comment.document)
        except BadRequest as exc:
            raise BadRequest(f"Invalid body field 'comment.document': {exc.message}") from None
    # The change request's row holds still until commit: a merge judging its reviews waits for
    # this one, and the reviewer's earlier reviews are superseded exactly once.
    cr = await cr_repository.lock(ctx.conn, found["id"])
    _open(cr, "be reviewed")
    await repository.supersede(ctx.conn, cr["id"], [me])
    now = utcnow()
    review_id = new_id()
    await repository.insert_review(
        ctx.conn,
        {
            "id": review_id,
            "change_request_id": cr["id"],
            "reviewer_id": me,
            "requested_by": request["requested_by"] if request is not None else None,
            "status": body.status,
            "revision_id": cr["revision_id"],
            "comment_id": new_id() if text and text.strip() else None,
            "comment_markdown": text if text and text.strip() else None,
            "created_at": now,
            "updated_at": now,
        },
    )
    row = await repository.get_review(ctx.conn, cr["id"], review_id)
    assert row is not None
    await outbox.emit(
        ctx,
        event.CHANGE_REQUEST_REVIEW_SUBMITTED,
        space=space_id,
        data={
            "changeRequestId": cr["id"],
            "number": cr["number"],
            "reviewId": review_id,
            "status": body.status,
        },
    )
    return present_review(row, ctx.base_url)


async def list_requested(ctx: Ctx, space_id: str, ref: str, params: PageParams) -> dict[str, Any]:
    _, cr = await _load(ctx, space_id, ref)
    stmt = repository.reviewers_of(cr["id"])
    page = await paginate(ctx.conn, stmt, keys=_REQUEST_KEYS, params=params)
    return page.render(lambda row: present_requested_reviewer(row, ctx.base_url))


async def request_reviewers(
    ctx: Ctx, space_id: str, ref: str, body: RequestReviewers
) -> dict[str, Any]:
    space, found = await _load(ctx, space_id, ref)
    require(policy.can_request_reviewers(space.role), "You cannot request reviews in this space")
    wanted = list(dict.fromkeys(body.users))
    roles = await merge_rules_repository.members_among(ctx.conn, space.org_id, wanted)
    scopes = await ContentScope.near_members(ctx.conn, space.org_id, roles, space.row["parent_id"])
    for uid in wanted:
        role = scopes[uid].space_role(space.row) if uid in scopes else None
        if not policy.can_view_reviewer(role):
            # The same sentence for a stranger and a member without access: nothing leaks.
            raise BadRequest(f"Invalid body field 'users': user '{uid}' cannot read this space")
    if body.subject is not None and not body.subject.strip():
        raise BadRequest("Invalid body field 'subject': must not be blank")
    cr = await cr_repository.lock(ctx.conn, found["id"])
    _open(cr, "be reviewed")
    now = utcnow()
    if body.subject is not None:
        await cr_repository.update(
            ctx.conn, cr["id"], {"subject": body.subject.strip(), "updated_at": now}
        )
    # A new request asks for a new review: the ones they gave before are outdated.
    await repository.supersede(ctx.conn, cr["id"], wanted)
    await repository.put_requests(
        ctx.conn,
        cr["id"],
        wanted,
        requested_by=ctx.actor.user_id,
        revision_id=cr["revision_id"],
        now=now,
    )
    rows = await repository.requests_of(ctx.conn, cr["id"], wanted)
    by_user = {row["user_id"]: row for row in rows}
    return {"users": [present_requested_reviewer(by_user[u], ctx.base_url) for u in wanted]}


async def remove_requested(ctx: Ctx, space_id: str, ref: str, user_id: str) -> bool:
    """True when a request was removed (205), False when there was none (204)."""
    space, cr = await _load(ctx, space_id, ref)
    require(
        policy.can_remove_request(space.role, caller=ctx.actor.user_id, reviewer=user_id),
        "You cannot change the reviewers of this change request",
    )
    return await repository.remove_request(ctx.conn, cr["id"], user_id)


async def contributors(ctx: Ctx, space_id: str, ref: str) -> dict[str, Any]:
    _, cr = await _load(ctx, space_id, ref)
    rows = await repository.contributors(ctx.conn, cr["id"])
    # Latest contribution first; a change request has as many contributors as editors at most.
    ordered = sorted(rows, key=lambda r: (r["updated_at"], r["user_id"]), reverse=True)
    items = [present_contributor(r, ctx.base_url) for r in ordered]
    return {"items": items, "count": len(items)}


async def has_merge_rules(ctx: Ctx, space_id: str) -> bool:
    """Whether merges into the space's main must meet merge rules (its own or its
    organization's): a git push to main then opens a change request (gitsync/)."""
    space_rules, org_rules = await repository.merge_rules(ctx.conn, space_id)
    return bool(rules.effective(space_rules, org_rules))


async def enforce_merge_rules(ctx: Ctx, space_id: str, cr: sa.RowMapping, main_id: str) -> None:
    """Refuses (400, naming the rules) a merge that breaks the space's effective merge rules.
    Called with the space and the change request locked: the configuration and the reviews
    read here are the ones the merge commits with."""
    space_rules, org_rules = await repository.merge_rules(ctx.conn, space_id)
    effective = rules.effective(space_rules, org_rules)
    if not effective:
        return
    reviews = await repository.standing_reviews(ctx.conn, cr["id"])
    attempt = rules.Attempt(
        actor=ctx.actor.user_id,
        author=cr["created_by"],
        subject=cr["subject"],
        up_to_date=(cr["revision_merged_ancestor"] or cr["revision_initial"]) == main_id,
        reviews=tuple(
            rules.Review(r["reviewer_id"], r["status"], bool(r["outdated"])) for r in reviews
        ),
    )
    broken = rules.broken(effective, attempt)
    if broken:
        raise BadRequest(rules.refusal(broken))
