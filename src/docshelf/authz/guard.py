"""The choke point: callers who may not see a thing get the same 404 as for a missing thing;
callers who may see it but not act get 403."""

from __future__ import annotations

from typing import NoReturn

from docshelf.kit.errors import Forbidden, NotFound


def not_found(kind: str) -> NoReturn:
    raise NotFound(f"{kind} not found")


def require(allowed: bool, message: str) -> None:
    if not allowed:
        raise Forbidden(message)
