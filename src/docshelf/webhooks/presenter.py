from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat


def present_webhook(row: RowMapping, *, secret: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "object": "webhook",
        "id": row["id"],
        "url": row["url"],
        "events": list(row["events"]),
        "space": row["space_id"],
        "active": row["active"],
    }
    if secret is not None:
        out["secret"] = secret
    out["disabledAt"] = isoformat(row["disabled_at"])
    out["createdAt"] = isoformat(row["created_at"])
    out["updatedAt"] = isoformat(row["updated_at"])
    return out


def present_delivery(row: RowMapping) -> dict[str, Any]:
    return {
        "object": "webhook-delivery",
        "id": row["id"],
        "event": {"id": row["event_id"], "type": row["event_type"]},
        "status": row["status"],
        "attempt": row["attempts"],
        "statusCode": row["status_code"],
        "duration": row["duration_ms"],
        "error": row["error"],
        "createdAt": isoformat(row["created_at"]),
        "lastAttemptAt": isoformat(row["last_attempt_at"]),
        "nextAttemptAt": isoformat(row["next_attempt_at"]),
        "deliveredAt": isoformat(row["delivered_at"]),
    }
