from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from docshelf.kit.schemas import Body, Out

FieldName = Annotated[
    str, StringConstraints(min_length=1, max_length=50, pattern=r"^[a-z_\-0-9]+$")
]
FieldType = Literal["text", "number", "boolean", "tags", "select:multi", "select:single"]
FieldTitle = Annotated[str, StringConstraints(max_length=100)]
FieldDescription = Annotated[str, StringConstraints(max_length=200)]
FieldPlaceholder = Annotated[str, StringConstraints(max_length=100)]
Option = Annotated[str, StringConstraints(min_length=1, max_length=40)]


def _distinct(options: list[str]) -> list[str]:
    # Stored values are matched to options by their text: two equal options would be one.
    repeated = sorted({o for o in options if options.count(o) > 1})
    if repeated:
        raise ValueError(f"repeated options: {', '.join(repeated)}")
    return options


Options = Annotated[list[Option], Field(min_length=1, max_length=50), AfterValidator(_distinct)]


class CreateCustomField(Body):
    name: FieldName
    type: FieldType
    title: FieldTitle | None = None
    description: FieldDescription | None = None
    placeholder: FieldPlaceholder | None = None
    options: Options | None = None


class UpdateCustomField(Body):
    """null clears title, description or placeholder; options may change but not go away."""

    title: FieldTitle | None = None
    description: FieldDescription | None = None
    placeholder: FieldPlaceholder | None = None
    options: Options | None = None


class CustomFieldUrls(Out):
    location: str


class CustomFieldOut(Out):
    id: str
    name: str
    type: FieldType
    title: str
    description: str
    placeholder: str
    options: list[str] | None = None
    createdAt: str
    updatedAt: str
    urls: CustomFieldUrls
    permissions: dict[str, bool]


class CustomFieldList(Out):
    items: list[CustomFieldOut]
    count: int
    next: dict[str, str] | None = None


class FieldValue(Body):
    # Checked against the field's type by values.validate_value; null removes the value.
    value: str | bool | int | float | list[str] | None


class UpdateSpaceCustomFields(Body):
    values: Annotated[dict[str, FieldValue], Field(max_length=100)]


class SpaceCustomFieldOut(Out):
    customField: dict[str, object]
    value: str | bool | int | float | list[str] | None = None
