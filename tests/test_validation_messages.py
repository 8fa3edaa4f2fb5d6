"""The sentence a refused body gets (kit.validation), table-driven over pydantic's own errors."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from docshelf.kit.validation import describe_validation_error


class _Body(BaseModel):
    level: Literal["admin", "read"] | Literal["inherit"] | None = None
    roles: dict[str, Literal["owner", "member"]] = {}
    quoted: Literal["it's", "b"] | Literal["c"] | None = None
    mixed: Literal["a"] | Literal[1, 2] | None = None


CASES: dict[str, tuple[dict[str, Any], str]] = {
    "a union of literals names every value once": (
        {"level": "boss"},
        "Invalid body field 'level': Input should be 'admin', 'read' or 'inherit'",
    ),
    "a free-form key keeps its brackets": (
        {"roles": {"a[1]": "x"}},
        "Invalid body field 'roles.a[1]': Input should be 'owner' or 'member'",
    ),
    "values pydantic quotes otherwise: its first message stands": (
        {"quoted": "no"},
        "Invalid body field 'quoted': Input should be \"it's\" or 'b'",
    ),
    "literals that are not strings: its first message stands": (
        {"mixed": "no"},
        "Invalid body field 'mixed': Input should be 'a'",
    ),
}


@pytest.mark.parametrize(("body", "message"), CASES.values(), ids=CASES.keys())
def test_message(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        _Body.model_validate(body)
    errors = [{**e, "loc": ("body", *e["loc"])} for e in raised.value.errors()]
    assert describe_validation_error(errors) == message
