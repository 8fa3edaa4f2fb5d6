from __future__ import annotations

from typing import Any, Literal

from docshelf.kit.schemas import Out


class AuditActor(Out):
    # GitBook's AuditEventActor: user, or system for the install's own work.
    type: Literal["user", "system"]
    id: str
    label: str | None = None


class AuditEventOut(Out):
    object: Literal["audit-event"]
    id: str
    type: str
    actor: AuditActor
    space: str | None
    createdAt: str
    payload: dict[str, Any]


class AuditEventList(Out):
    items: list[AuditEventOut]
    count: int
    next: dict[str, str] | None = None
