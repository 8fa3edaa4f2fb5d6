"""Bodies and documented outputs of reviews, requested reviewers, contributors, and GitBook's
merge rules (`MergeRule`, `MergeRules*Configuration` in its 0.202 description)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from docshelf.kit.schemas import Body, Out
from docshelf.review.rules import PLAIN_RULES, USER_RULES
from docshelf.user.schemas import UserOut

ReviewStatus = Literal["changes-requested", "approved"]
UserId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Users = Annotated[list[UserId], Field(min_length=1, max_length=50)]
# GitBook's rule kinds that need an AI agent, a change request description or its expression
# language; refused with a sentence naming them rather than accepted and ignored.
UNSUPPORTED_RULES = ("require_agent_review", "require_change_request_description", "custom")


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


class MergeRule(Body):
    rule: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    users: Users | None = None

    @model_validator(mode="after")
    def _known_shape(self) -> MergeRule:
        if self.rule in UNSUPPORTED_RULES:
            raise ValueError(f"merge rule '{self.rule}' is not supported")
        if self.rule in USER_RULES:
            if self.users is None:
                raise ValueError(f"merge rule '{self.rule}' needs 'users'")
        elif self.rule in PLAIN_RULES:
            if self.users is not None:
                raise ValueError(f"merge rule '{self.rule}' takes no 'users'")
        else:
            raise ValueError(f"unknown merge rule '{self.rule}'")
        return self


class _MergeRules(Body):
    type: str
    rules: Annotated[list[MergeRule], Field(max_length=20)] | None = None

    @model_validator(mode="after")
    def _rules_with_rules(self) -> _MergeRules:
        kind = self.type
        if kind == "rules" and self.rules is None:
            raise ValueError("'rules' is required when type is 'rules'")
        if kind != "rules" and self.rules is not None:
            raise ValueError(f"'rules' is only given when type is 'rules', not '{kind}'")
        seen = [r.rule for r in self.rules or []]
        twice = next((r for i, r in enumerate(seen) if r in seen[:i]), None)
        if twice is not None:
            raise ValueError(f"merge rule '{twice}' is given twice")
        return self

    def stored(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class OrganizationMergeRules(_MergeRules):
    """MergeRulesStandaloneConfiguration: an organization has nothing to inherit from."""

    type: Literal["none", "rules"]


class SpaceMergeRules(_MergeRules):
    """MergeRulesSpaceConfiguration."""

    type: Literal["inherit", "none", "rules"]


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
