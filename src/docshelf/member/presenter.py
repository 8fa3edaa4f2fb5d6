from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat
from docshelf.user.presenter import present_user


def present_member(row: RowMapping, base_url: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "member",
        "id": row["user_id"],
        "role": row["role"],
        "user": present_user(
            {
                "id": row["user_id"],
                "email": row["user_email"],
                "display_name": row["user_display_name"],
                "photo_url": row["user_photo_url"],
            },
            base_url,
        ),
        "disabled": row["disabled"],
        "joinedAt": isoformat(row["joined_at"]),
        "sso": row["sso"],
        "spaces": row["spaces_count"],
        "teams": row["teams_count"],
        # Sites the member can see (GitBook 0.202 requires the count); none exist yet.
        "sites": 0,
    }
    if row["last_seen_at"] is not None:
        body["lastSeenAt"] = isoformat(row["last_seen_at"])
    return body
