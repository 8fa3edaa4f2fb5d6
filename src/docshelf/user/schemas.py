from __future__ import annotations

from typing import Literal

from docshelf.kit.schemas import Out


class UserUrls(Out):
    location: str


class UserOut(Out):
    object: Literal["user"]
    id: str
    displayName: str
    email: str | None = None
    photoURL: str | None = None
    urls: UserUrls
