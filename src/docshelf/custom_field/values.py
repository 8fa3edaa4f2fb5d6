"""What a space may store in a custom field of each type. Pure: no I/O, so the rules can be tested
exhaustively and applied wherever values arrive."""

from __future__ import annotations

import math
from typing import Final

from docshelf.kit.errors import BadRequest

FIELD_TYPES: Final = ("text", "number", "boolean", "tags", "select:multi", "select:single")
SELECT_TYPES: Final = frozenset({"select:single", "select:multi"})
# GitBook's CustomFieldValue: strings, alone or in a list, are at most 256 characters.
MAX_TEXT: Final = 256


def _bad(field: str, rule: str) -> BadRequest:
    return BadRequest(f"Invalid body field '{field}': {rule}")


def _strings(value: object, field: str, rule: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(field, rule)
    return list(value)


def validate_value(
    field_type: str, options: list[str] | None, value: object, *, field: str = "value"
) -> object:
    """The value to store for a field of `field_type`, or BadRequest naming `field` (the caller
    passes where the value sat in its body, e.g. `values.audience.value`)."""
    if field_type == "text":
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            raise _bad(field, f"must be a string of at most {MAX_TEXT} characters")
        return value
    if field_type == "number":
        # bool is an int subclass in Python, but true is not a number on the wire.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _bad(field, "must be a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise _bad(field, "must be a finite number")
        return value
    if field_type == "boolean":
        if not isinstance(value, bool):
            raise _bad(field, "must be a boolean")
        return value
    if field_type == "tags":
        rule = f"must be a list of strings of at most {MAX_TEXT} characters"
        tags = _strings(value, field, rule)
        if any(len(t) > MAX_TEXT for t in tags):
            raise _bad(field, rule)
        # Tags are a set to the reader: a repeated tag says nothing more, so it is dropped.
        return list(dict.fromkeys(tags))
    allowed = options or []
    if field_type == "select:single":
        if not isinstance(value, str) or value not in allowed:
            raise _bad(field, f"must be one of the options: {', '.join(allowed)}")
        return value
    if field_type == "select:multi":
        chosen = _strings(value, field, "must be a list of options")
        unknown = [v for v in chosen if v not in allowed]
        if unknown:
            raise _bad(field, f"not among the options: {', '.join(dict.fromkeys(unknown))}")
        repeated = sorted({v for v in chosen if chosen.count(v) > 1})
        if repeated:
            raise _bad(field, f"options chosen more than once: {', '.join(repeated)}")
        return chosen
    raise ValueError(f"unknown custom field type {field_type!r}")


def options_in(field_type: str, value: object) -> set[str]:
    """The options a stored value of a select field uses."""
    if field_type == "select:single" and isinstance(value, str):
        return {value}
    if field_type == "select:multi" and isinstance(value, list):
        return {v for v in value if isinstance(v, str)}
    return set()
