from __future__ import annotations

from typing import Any

from docshelf.collection.policy import permissions
from docshelf.kit.sql import Row


def present_collection(row: Row, role: str | None, base_url: str) -> dict[str, Any]:
    cid = row["id"]
    body: dict[str, Any] = {
        "object": "collection",
        "id": cid,
        "title": row["title"],
        "organization": row["organization_id"],
        "defaultLevel": row["default_level"],
        "urls": {"location": f"{base_url}/v1/collections/{cid}", "app": f"{base_url}/c/{cid}/"},
        "permissions": permissions(role),
    }
    if row["description"] is not None:
        body["description"] = row["description"]
    if row["parent_id"] is not None:
        body["parent"] = row["parent_id"]
    return body
