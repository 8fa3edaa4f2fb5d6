"""The one reading of the Authorization header. The rate limiter (app.EdgeMiddleware) and
authentication (auth.context) both take the token from here, so they can never disagree on
which header, or which bytes of it, name the caller."""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableMapping
from typing import Any

from docshelf.auth import site_token, tokens
from docshelf.kit.errors import BadRequest, Unauthorized

# Only ASCII spaces around and after the scheme: anything Python's str.strip() would also eat
# (no-break space, NEL, tabs...) is refused rather than silently trimmed.
_BEARER = re.compile(rb"\A *[Bb][Ee][Aa][Rr][Ee][Rr] +([\x21-\x7e]+) *\Z")
_MALFORMED = "Malformed Authorization header: expected 'Bearer <token>'"
_STATE_KEY = "bearer_token"


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The well-formed API token (or site content token: auth.site_token) of a raw ASGI
    header list, or None without the header.
    Two Authorization headers are a 400; any other shape than `Bearer <token>` a 401."""
    values = [value for name, value in headers if name.lower() == b"authorization"]
    if not values:
        return None
    if len(values) > 1:
        raise BadRequest("Duplicate Authorization header: send exactly one")
    match = _BEARER.match(values[0])
    if match is None:
        raise Unauthorized(_MALFORMED)
    token = match.group(1).decode("ascii")
    if not (tokens.is_well_formed(token) or site_token.looks_like_one(token)):
        raise Unauthorized("Invalid API token")
    return token


def scope_bearer_token(scope: MutableMapping[str, Any]) -> str | None:
    """`bearer_token` of the request, read once and kept in the request's state."""
    state = scope.setdefault("state", {})
    if _STATE_KEY not in state:
        state[_STATE_KEY] = bearer_token(scope["headers"])
    token: str | None = state[_STATE_KEY]
    return token
