"""Visitor conditions on sections and site spaces. `validate_condition` is the one hook every
save calls; for now it bounds the length, and the expression evaluator (visitor claims,
adaptive content) plugs in here so a syntax error becomes a 400 when the condition is saved."""

from __future__ import annotations

from docshelf.kit.errors import BadRequest

MAX_LENGTH = 1024


def validate_condition(text: str) -> None:
    if not 1 <= len(text) <= MAX_LENGTH:
        raise BadRequest(
            f"Invalid body field 'condition': must be 1 to {MAX_LENGTH} characters long"
        )
