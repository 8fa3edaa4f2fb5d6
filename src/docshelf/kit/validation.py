"""Turns Pydantic/FastAPI validation errors into one sentence that names the field and the rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_LOCATIONS = {
    "body": "body field",
    "query": "query parameter",
    "path": "path parameter",
    "header": "header",
}


def _field(loc: Sequence[Any]) -> tuple[str, str]:
    where = str(loc[0]) if loc else "body"
    parts = [
        str(p) for p in loc[1:] if not (isinstance(p, str) and p.startswith("function-after["))
    ]
    return _LOCATIONS.get(where, where), ".".join(parts)


def describe_validation_error(errors: Sequence[Any]) -> str:
    first = errors[0]
    kind = first.get("type", "")
    loc = first.get("loc", ())
    where, field = _field(loc)
    if kind == "json_invalid":
        return "Malformed JSON body: " + str(first.get("ctx", {}).get("error", "cannot parse"))
    if kind == "missing" and not field:
        return "Request body is required"
    if kind == "extra_forbidden":
        return f"Unknown {where} '{field}'"
    if kind == "missing":
        return f"Missing required {where} '{field}'"
    message = str(first.get("msg", "is invalid"))
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if field:
        return f"Invalid {where} '{field}': {message}"
    return f"Invalid {where}: {message}"
