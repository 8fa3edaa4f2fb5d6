from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Health(BaseModel):
    status: Literal["ok"]


class ReadinessChecks(BaseModel):
    database: Literal["ok"]
    migrations: Literal["ok"]
    blobs: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready"]
    checks: ReadinessChecks
