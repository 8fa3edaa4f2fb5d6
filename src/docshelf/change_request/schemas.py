from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import StringConstraints

from docshelf.kit.schemas import Body, Out
from docshelf.user.schemas import UserOut

Status = Literal["draft", "open", "archived", "merged"]
Subject = Annotated[str, StringConstraints(max_length=100)]


class CreateChangeRequest(Body):
    subject: Subject | None = None


class UpdateChangeRequest(Body):
    subject: Subject | None = None
    # `merged` is reached only by merging.
    status: Literal["draft", "open", "archived"] | None = None


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
    comments: int
    outdated: bool
    urls: dict[str, str]


class ChangeRequestList(Out):
    items: list[ChangeRequestOut]
    count: int
    next: dict[str, Any] | None = None
