from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    status: Literal["ok"]


class ReadinessChecks(BaseModel):
    database: Literal["ok"]
    migrations: Literal["ok"]
    blobs: Literal["ok"]


class FeatureReadiness(BaseModel):
    status: Literal["ok", "off"]
    missing: list[str] | None = Field(None, description="What the machine lacks (when off)")
    install: str | None = Field(None, description="The command that turns it on (when off)")


class Readiness(BaseModel):
    status: Literal["ready"]
    checks: ReadinessChecks
    features: dict[str, FeatureReadiness] = Field(
        description="By feature (`pdf`, `sso`): whether this machine has what it needs"
    )
