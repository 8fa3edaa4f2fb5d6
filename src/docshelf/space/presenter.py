from __future__ import annotations

from typing import Any

from docshelf.kit.clock import isoformat
from docshelf.kit.sql import Row
from docshelf.space.policy import permissions


def app_address(base_url: str, space_id: str) -> str:
    """The space in the app (`urls.app`)."""
    return f"{base_url}/s/{space_id}/"


def present_space(row: Row, role: str | None, base_url: str) -> dict[str, Any]:
    sid = row["id"]
    urls = {"location": f"{base_url}/v1/spaces/{sid}", "app": app_address(base_url, sid)}
    if row["icon"]:
        urls["icon"] = row["icon"]
    if row["visibility"] == "share-link" and row["share_key"] and role == "admin":
        # Only the space's admins see the secret link they hand out.
        urls["published"] = f"{base_url}/s/{sid}/?shareKey={row['share_key']}"
    body: dict[str, Any] = {
        "object": "space",
        "id": sid,
        "title": row["title"],
        # GitBook requires the field; an unset emoji is the empty string.
        "emoji": row["emoji"] or "",
        "visibility": row["visibility"],
        "createdAt": isoformat(row["created_at"]),
        "updatedAt": isoformat(row["updated_at"]),
        "organization": row["organization_id"],
        "revision": row["revision_id"],
        "defaultLevel": row["default_level"],
        # Open comments on main, kept by comment/repository.py.
        "comments": row["comments_open"],
        "changeRequests": row["change_requests_total"],
        "changeRequestsOpen": row["change_requests_open"],
        "changeRequestsDraft": row["change_requests_draft"],
        # As configured (GitBook answers the space's own setting); unset inherits.
        "mergeRules": row["merge_rules"] or {"type": "inherit"},
        "urls": urls,
        "permissions": permissions(role, row["edit_mode"]),
    }
    if row["deleted_at"] is not None:
        body["deletedAt"] = isoformat(row["deleted_at"])
    if row["edit_mode"] is not None:
        body["editMode"] = row["edit_mode"]
    if row["parent_id"] is not None:
        body["parent"] = row["parent_id"]
    if row["language"] is not None:
        body["language"] = row["language"]
    return body
