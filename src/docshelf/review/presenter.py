from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import RowMapping

from docshelf.document import markdown as md
from docshelf.kit.clock import isoformat
from docshelf.user.presenter import present_user_or_gone

Format = Literal["markdown", "document"]


def _user(row: RowMapping, prefix: str, base_url: str) -> dict[str, Any]:
    return present_user_or_gone(row, base_url, id_key=f"{prefix}id", prefix=prefix)


def review_location(base_url: str, space_id: str, cr_id: str, review_id: str) -> str:
    return f"{base_url}/v1/spaces/{space_id}/change-requests/{cr_id}/reviews/{review_id}"


def present_review(row: RowMapping, base_url: str, fmt: Format = "markdown") -> dict[str, Any]:
    space_id, cr_id = row["space_id"], row["change_request_id"]
    location = review_location(base_url, space_id, cr_id, row["id"])
    reviewer = _user(row, "rv_", base_url)
    body: dict[str, Any] = {
        "object": "change-request-review",
        "id": row["id"],
        "revision": row["revision_id"],
        "reviewer": reviewer,
        "status": row["status"],
        "outdated": bool(row["outdated"]),
        "createdAt": isoformat(row["created_at"]),
        "updatedAt": isoformat(row["updated_at"]),
        "urls": {"location": location},
    }
    if row["requested_by"] is not None:
        body["requestedBy"] = _user(row, "rq_", base_url)
    if row["comment_id"] is not None:
        text = row["comment_markdown"] or ""
        body["comment"] = {
            "object": "comment",
            "id": row["comment_id"],
            "postedBy": reviewer,
            "postedAt": isoformat(row["created_at"]),
            "reactions": [],
            "replies": 0,
            "repliers": [],
            "body": {"markdown": text} if fmt == "markdown" else {"document": md.to_document(text)},
            "target": {
                "space": space_id,
                "revision": row["revision_id"],
                "changeRequest": cr_id,
                "review": row["id"],
            },
            # The comment belongs to its review and is read through it.
            "urls": {"location": location},
            # GitBook's descriptions name `reply` and require `react`: both, and both false
            # (a review's comment takes no replies or reactions).
            "permissions": {
                "view": True,
                "edit": False,
                "reply": False,
                "react": False,
                "delete": False,
            },
            "status": "open",
        }
    return body


def present_requested_reviewer(row: RowMapping, base_url: str) -> dict[str, Any]:
    return {
        "object": "change-request-requested-reviewer",
        "kind": "user",
        "user": _user(row, "u_", base_url),
        "revision": row["revision_id"],
        "requestedBy": _user(row, "rq_", base_url),
        "createdAt": isoformat(row["created_at"]),
    }


def present_contributor(row: RowMapping, base_url: str) -> dict[str, Any]:
    return {
        "updatedAt": isoformat(row["updated_at"]),
        "count": int(row["count"]),
        "user": _user(row, "user_", base_url),
        "actionType": "edit",
    }
