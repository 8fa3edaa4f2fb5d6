from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from docshelf.kit.schemas import Body, Out
from docshelf.user.schemas import UserOut

Status = Literal["draft", "open", "archived", "merged"]
Subject = Annotated[str, StringConstraints(max_length=100)]


class UrlRef(Body):
    kind: Literal["url"]
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)]


class LinkInput(Body):
    """GitBook's ChangeRequestLinkInput: an external link; `id` names one already served."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=32)] | None = None
    ref: UrlRef
    title: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None


Links = Annotated[list[LinkInput], Field(max_length=10)]


class CreateChangeRequest(Body):
    subject: Subject | None = None
    # A GitBook JSONDocument, stored as markdown (document/model.py).
    description: dict[str, Any] | None = None
    links: Links | None = None
    # GitBook's space templates; Docshelf has none (the service answers 400 naming it).
    template: dict[str, Any] | None = None


class UpdateChangeRequest(Body):
    subject: Subject | None = None
    # `merged` is reached only by merging.
    status: Literal["draft", "open", "archived"] | None = None
    description: dict[str, Any] | None = None
    links: Links | None = None


class ChangeRequestOut(Out):
    object: Literal["change-request"]
    id: str
    number: int
    status: Status
    subject: str
    createdBy: UserOut
    createdAt: str
    updatedAt: str
    revision: str
    revisionInitial: str
    revisionMergedAncestor: str | None = None
    revisionMerged: str | None = None
    mergedBy: UserOut | None = None
    mergedAt: str | None = None
    description: dict[str, Any] | None = None
    links: list[dict[str, Any]] | None = None
    comments: int
    outdated: bool
    urls: dict[str, str]


class ChangeRequestList(Out):
    items: list[ChangeRequestOut]
    count: int
    next: dict[str, Any] | None = None
