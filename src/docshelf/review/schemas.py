"""Bodies and documented outputs of reviews, requested reviewers, contributors, and GitBook's
merge rules' reviews."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import StringConstraints

from docshelf.kit.schemas import Body, Out
from docshelf.merge_rules.schemas import Users
from docshelf.user.schemas import UserOut

ReviewStatus = Literal["changes-requested", "approved"]


class CommentBody(Body):
    """GitBook's Document: `{markdown}`, `{document}` (kept as the markdown it maps to), `{}`."""

    markdown: Annotated[str, StringConstraints(max_length=64 * 1024)] | None = None
    document: dict[str, Any] | None = None


class SubmitReview(Body):
    status: ReviewStatus
    comment: CommentBody | None = None


class RequestReviewers(Body):
    users: Users
    subject: Annotated[str, StringConstraints(max_length=100)] | None = None


class CommentOut(Out):
    object: Literal["comment"]
    id: str
    postedBy: UserOut
    postedAt: str
    body: dict[str, Any]
    target: dict[str, Any]
    urls: dict[str, str]
    permissions: dict[str, bool]


class ReviewOut(Out):
    object: Literal["change-request-review"]
    id: str
    revision: str
    reviewer: UserOut
    requestedBy: UserOut | None = None
    status: ReviewStatus
    outdated: bool
    comment: CommentOut | None = None
    createdAt: str
    updatedAt: str
    urls: dict[str, str]


class ReviewList(Out):
    items: list[ReviewOut]
    count: int
    next: dict[str, Any] | None = None


class RequestedReviewerOut(Out):
    object: Literal["change-request-requested-reviewer"]
    kind: Literal["user"]
    user: UserOut
    revision: str
    requestedBy: UserOut
    createdAt: str


class RequestedReviewerList(Out):
    items: list[RequestedReviewerOut]
    count: int
    next: dict[str, Any] | None = None


class RequestedReviewers(Out):
    users: list[RequestedReviewerOut]


class ContributorOut(Out):
    updatedAt: str
    count: int
    user: UserOut
    actionType: Literal["edit", "comment"]


class ContributorList(Out):
    items: list[ContributorOut]
    count: int
    next: dict[str, Any] | None = None
