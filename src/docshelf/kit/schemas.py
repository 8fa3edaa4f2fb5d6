"""Base for request bodies: unknown fields are refused, so a typo is a 400, not a silent no-op."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Role = Literal["admin", "create", "review", "edit", "comment", "read"]
TeamRole = Literal["owner", "member"]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Out(BaseModel):
    """Response models document the OpenAPI output; responses are built by presenters."""

    model_config = ConfigDict(extra="allow")
