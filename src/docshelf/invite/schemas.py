from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from docshelf.kit.schemas import Body, Out, Role


class CreateInvite(Body):
    role: Role | None


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
    role: Role | None
    redundant: bool


class InviteList(Out):
    items: list[InviteOut]
    count: int
    next: dict[str, str] | None = None
