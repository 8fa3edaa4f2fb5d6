"""Turns Pydantic/FastAPI validation errors into one sentence that names the field and the rule."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from starlette.routing import compile_path

_LOCATIONS = {
    "body": "body field",
    "query": "query parameter",
    "path": "path parameter",
    "header": "header",
}


def _field(loc: Sequence[Any]) -> tuple[str, str]:
    where = str(loc[0]) if loc else "body"
    # Pydantic names the member of a union, or the validator, that refused a value
    # (`literal['admin',...]`, `function-after[...]`): never part of the field's name. A key
    # of a free-form object may hold brackets too, so only these forms are taken out.
    parts = [str(p) for p in loc[1:] if not (isinstance(p, str) and _SCHEMA_TAG.match(p))]
    return _LOCATIONS.get(where, where), ".".join(parts)


_SCHEMA_TAG = re.compile(r"^(?:literal|function-(?:after|before|wrap|plain))\[.*\]$", re.S)
# What pydantic says a literal expects: single-quoted strings, ", " between, " or " last.
_EXPECTED = re.compile(r"'[^'\\]*'(?:, '[^'\\]*')*(?: or '[^'\\]*')?")
_QUOTED = re.compile(r"'[^'\\]*'")


def _one_of(errors: Sequence[Any], loc: tuple[str, str]) -> str | None:
    """For a value that matched none of a union's literal members: every value allowed (None
    when they are not all plain strings, and pydantic's own message stands)."""
    same = [e for e in errors if _field(e.get("loc", ())) == loc]
    if len(same) < 2 or any(e.get("type") != "literal_error" for e in same):
        return None
    expected = [str(e.get("ctx", {}).get("expected", "")) for e in same]
    if not all(_EXPECTED.fullmatch(x) for x in expected):
        return None
    values: list[str] = list(dict.fromkeys(v for x in expected for v in _QUOTED.findall(x)))
    if len(values) < 2:
        return None
    return "Input should be " + ", ".join(values[:-1]) + " or " + values[-1]


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
    message = _one_of(errors, (where, field)) or str(first.get("msg", "is invalid"))
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if field:
        return f"Invalid {where} '{field}': {message}"
    return f"Invalid {where}: {message}"


# C0 controls and DEL. PostgreSQL text cannot hold NUL at all (SQLite would store it), and the
# others have no business in ids, names or query values; tab, newline and carriage return stay
# allowed in multi-line text (markdown, descriptions).
# Unpaired surrogates (JSON escapes can carry them) are refused with the controls: no database or
# UTF-8 encoder can store them.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")
_CONTROLS_BUT_LINES = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
CONTROLS_REFUSED = "control characters are not allowed"
# Lists and objects within one field of a body. A valid document nests its deepest blocks ~150
# levels (document.model.MAX_DOCUMENT_DEPTH, two levels a block); orjson, which writes what is
# stored and answered, stops at 255.
MAX_NESTING = 200
NESTING_REFUSED = f"lists and objects nest at most {MAX_NESTING} levels deep"


def content_type_error(content_type: str | None, errors: Sequence[Any], body: Any) -> str | None:
    """The message for a body that failed validation because it was not sent as JSON (FastAPI
    reads a body as JSON only under a JSON Content-Type: `curl -d` sends a form's), or None.
    Only bodies that failed are concerned, so no request that succeeds is refused."""
    if not errors or not isinstance(body, bytes | str) or not body:
        return None
    loc = errors[0].get("loc", ())
    if not loc or loc[0] != "body":
        return None
    media = (content_type or "").partition(";")[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return None
    fix = "send the JSON body with the header 'Content-Type: application/json'"
    if not media:
        return f"Missing Content-Type header: {fix}"
    return f"Content-Type '{media}' is not accepted for this body: {fix}"


def has_controls(text: str, *, multiline: bool = False) -> bool:
    return (_CONTROLS_BUT_LINES if multiline else _CONTROLS).search(text) is not None


@functools.lru_cache(maxsize=1024)
def _template_regex(template: str) -> re.Pattern[str]:
    return compile_path(template)[0]


def request_line_error(
    scope: MutableMapping[str, Any], templates: Callable[[], Iterable[str]]
) -> str | None:
    """The 400 message for control characters in the (percent-decoded) path or query string of
    an ASGI request, naming the parameter (found by matching the app's path `templates()`); None
    when there are none. Checked at the edge, so no route, present or future, ever passes such
    a value to the database."""
    path: str = scope.get("path", "")
    if has_controls(path):
        for template in templates():
            match = _template_regex(template).match(path)
            if match is None:
                continue
            for name, value in match.groupdict().items():
                if has_controls(value):
                    return f"Invalid path parameter '{name}': {CONTROLS_REFUSED}"
        return f"Invalid path: {CONTROLS_REFUSED}"
    query: bytes = scope.get("query_string", b"")
    if query:
        # Decoded exactly as Starlette's QueryParams will decode it for the endpoint.
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if has_controls(name):
                return f"Invalid query string: {CONTROLS_REFUSED}"
            if has_controls(value):
                return f"Invalid query parameter '{name}': {CONTROLS_REFUSED}"
    return None
