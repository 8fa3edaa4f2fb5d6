"""Base for request bodies: unknown fields are refused, so a typo is a 400, not a silent no-op;
control characters are refused in every text a body carries."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationInfo, field_validator

from docshelf.kit.validation import CONTROLS_REFUSED, has_controls

Role = Literal["admin", "create", "review", "edit", "comment", "read"]
TeamRole = Literal["owner", "member"]
# The id of a space, collection, user or team named in a body.
EntityId = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
]


def _holds_controls(value: Any, multiline: bool) -> bool:
    # Nested models are Bodies too and check their own fields; this walks plain containers
    # (lists, free-form dicts and their keys).
    if isinstance(value, str):
        return has_controls(value, multiline=multiline)
    if isinstance(value, list | tuple):
        return any(_holds_controls(v, multiline) for v in value)
    if isinstance(value, dict):
        return any(
            _holds_controls(k, False) or _holds_controls(v, multiline) for k, v in value.items()
        )
    return False


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    # Fields holding multi-line text, where tab, newline and carriage return are allowed. Every
    # other text (ids, slugs, titles, e-mails...) takes no control character at all, so a new
    # field is safe by default. Matched by name so that every body shares one rule.
    multiline_fields: ClassVar[frozenset[str]] = frozenset({"markdown", "description", "document"})

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        if _holds_controls(value, info.field_name in cls.multiline_fields):
            raise ValueError(CONTROLS_REFUSED)
        return value


class Out(BaseModel):
    """Response models document the OpenAPI output; responses are built by presenters."""

    model_config = ConfigDict(extra="allow")
