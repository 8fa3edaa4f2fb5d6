from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import StringConstraints

from docshelf.kit.schemas import Body, Out

Name = Annotated[str, StringConstraints(max_length=50)]


class CreateShareLink(Body):
    name: Name


class UpdateShareLink(Body):
    active: bool | None = None
    name: Name | None = None


class ShareLinkOut(Out):
    object: Literal["share-link"]
    id: str
    createdAt: str
    name: str
    active: bool
    urls: dict[str, str]


class ShareLinkList(Out):
    items: list[ShareLinkOut]
    count: int
    next: dict[str, Any] | None = None
