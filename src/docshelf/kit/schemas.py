"""Base for request bodies: unknown fields are refused, so a typo is a 400, not a silent no-op;
control characters are refused in every text a body carries, and so is nesting past MAX_NESTING."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationInfo, field_validator

from docshelf.kit.validation import (
    CONTROLS_REFUSED,
    MAX_NESTING,
    NESTING_REFUSED,
    has_controls,
)

Role = Literal["admin", "create", "review", "edit", "comment", "read"]
TeamRole = Literal["owner", "member"]
# The id of a space, collection, user or team named in a body.
EntityId = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
]


def _refusal(value: Any, multiline: bool) -> str | None:
    """Why a field's value is refused, or None. Nested models are Bodies too and check their own
    fields; this walks plain containers (lists, free-form dicts and their keys), without
    recursion: a body nested a few hundred levels deep is refused, never a RecursionError."""
    stack: list[tuple[Any, bool, int]] = [(value, multiline, 0)]
    while stack:
        item, lines, depth = stack.pop()
        if isinstance(item, str):
            if has_controls(item, multiline=lines):
                return CONTROLS_REFUSED
        elif isinstance(item, list | tuple | dict):
            if depth >= MAX_NESTING:
                return NESTING_REFUSED
            if isinstance(item, dict):
                stack.extend((k, False, depth + 1) for k in item)
                stack.extend((v, lines, depth + 1) for v in item.values())
            else:
                stack.extend((v, lines, depth + 1) for v in item)
    return None


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    # Fields holding multi-line text, where tab, newline and carriage return are allowed. Every
    # other text (ids, slugs, titles, e-mails...) takes no control character at all, so a new
    # field is safe by default. Matched by name so that every body shares one rule.
    multiline_fields: ClassVar[frozenset[str]] = frozenset({"markdown", "description", "document"})

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        refusal = _refusal(value, info.field_name in cls.multiline_fields)
        if refusal is not None:
            raise ValueError(refusal)
        return value


class Out(BaseModel):
    """Response models document the OpenAPI output; responses are built by presenters."""

    model_config = ConfigDict(extra="allow")
