from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat


def present_audit_event(row: RowMapping) -> dict[str, Any]:
    actor: dict[str, Any]
    if row["actor_id"] is None:
        # Work the install did on its own (a spec refreshed on schedule).
        actor = {"type": "system", "id": "system"}
    else:
        actor = {"type": "user", "id": row["actor_id"], "label": row["actor_label"]}
    return {
        "object": "audit-event",
        "id": row["id"],
        "type": row["type"],
        "actor": actor,
        "space": row["space_id"],
        "createdAt": isoformat(row["created_at"]),
        "payload": dict(row["data"]),
    }
