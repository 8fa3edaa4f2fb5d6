from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from docshelf.kit.schemas import Body, EntityId, Out, Role


class CreateInvite(Body):
    """GitBook's three shapes in one body: `{role}` invites to the organization,
    `{level, space}` to a space and `{level, collection}` to a collection."""

    role: Role | None = None
    level: Role | None = None
    space: EntityId | None = None
    collection: EntityId | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> CreateInvite:
        given = self.model_fields_set
        if "space" in given or "collection" in given:
            if ("space" in given) == ("collection" in given) or "role" in given:
                raise ValueError("give {role}, {level, space} or {level, collection}")
            if self.level is None:
                raise ValueError("'level' is required with 'space' or 'collection'")
        elif "role" not in given or "level" in given:
            raise ValueError("give {role}, {level, space} or {level, collection}")
        return self


class UpdateInvite(Body):
    """GitBook accepts the role under `role` or `level`."""

    role: Role | None = None
    level: Role | None = None

    @model_validator(mode="after")
    def _one_of(self) -> UpdateInvite:
        given = self.model_fields_set & {"role", "level"}
        if len(given) != 1:
            raise ValueError("exactly one of 'role' or 'level' is required")
        return self

    @property
    def new_role(self) -> Role | None:
        return self.role if "role" in self.model_fields_set else self.level


class InviteOut(Out):
    object: Literal["invite"]
    id: str
    role: Role | None = None
    level: Role | None = None
    space: dict[str, Any] | None = None
    collection: dict[str, Any] | None = None
    redundant: bool


class InviteList(Out):
    items: list[InviteOut]
    count: int
    next: dict[str, str] | None = None
