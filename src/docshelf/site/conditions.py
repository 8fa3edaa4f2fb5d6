"""Visitor conditions on sections, site spaces and pages. `validate_condition` is the one hook
every save calls: the condition must parse in `kit.expressions`' grammar (a syntax error is a
400 when saved); `shows` decides, for a visitor's claims, whether an item is shown."""

from __future__ import annotations

from docshelf.kit import expressions
from docshelf.kit.errors import BadRequest

MAX_LENGTH = expressions.MAX_LENGTH


def problem(text: str) -> str | None:
    """Why `text` is not a condition, or None: shared by the services and the body schemas."""
    if not 1 <= len(text) <= MAX_LENGTH:
        return f"must be 1 to {MAX_LENGTH} characters long"
    try:
        expressions.check(text)
    except expressions.ExpressionError as exc:
        return str(exc)
    return None


def validate_condition(text: str, field: str = "condition") -> None:
    reason = problem(text)
    if reason is not None:
        raise BadRequest(f"Invalid body field '{field}': {reason}")


# The decision lives with the grammar (kit.expressions): content reads make it too.
shows = expressions.shows
