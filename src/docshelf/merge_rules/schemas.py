"""GitBook's merge rules as bodies: `MergeRule` and `MergeRules*Configuration` (its 0.202
description), set on organizations and spaces."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from docshelf.kit.schemas import Body
from docshelf.merge_rules.rules import PLAIN_RULES, USER_RULES

UserId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Users = Annotated[list[UserId], Field(min_length=1, max_length=50)]
# GitBook's rule kinds that need an AI agent, a change request description or its expression
# language; refused with a sentence naming them rather than accepted and ignored.
UNSUPPORTED_RULES = ("require_agent_review", "require_change_request_description", "custom")


class MergeRule(Body):
    rule: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    users: Users | None = None

    @model_validator(mode="after")
    def _known_shape(self) -> MergeRule:
        if self.rule in UNSUPPORTED_RULES:
            raise ValueError(f"merge rule '{self.rule}' is not supported")
        if self.rule in USER_RULES:
            if self.users is None:
                raise ValueError(f"merge rule '{self.rule}' needs 'users'")
        elif self.rule in PLAIN_RULES:
            if self.users is not None:
                raise ValueError(f"merge rule '{self.rule}' takes no 'users'")
        else:
            raise ValueError(f"unknown merge rule '{self.rule}'")
        return self


class _MergeRules(Body):
    type: str
    rules: Annotated[list[MergeRule], Field(max_length=20)] | None = None

    @model_validator(mode="after")
    def _rules_with_rules(self) -> _MergeRules:
        kind = self.type
        if kind == "rules" and self.rules is None:
            raise ValueError("'rules' is required when type is 'rules'")
        if kind != "rules" and self.rules is not None:
            raise ValueError(f"'rules' is only given when type is 'rules', not '{kind}'")
        seen = [r.rule for r in self.rules or []]
        twice = next((r for i, r in enumerate(seen) if r in seen[:i]), None)
        if twice is not None:
            raise ValueError(f"merge rule '{twice}' is given twice")
        return self

    def stored(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class OrganizationMergeRules(_MergeRules):
    """MergeRulesStandaloneConfiguration: an organization has nothing to inherit from."""

    type: Literal["none", "rules"]


class SpaceMergeRules(_MergeRules):
    """MergeRulesSpaceConfiguration."""

    type: Literal["inherit", "none", "rules"]
