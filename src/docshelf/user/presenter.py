from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping


def present_user(
    row: RowMapping | dict[str, Any], base_url: str, *, prefix: str = ""
) -> dict[str, Any]:
    """`prefix` reads the user's columns from a joined row (for example `user_` in member rows)."""
    user_id = row[f"{prefix}id"]
    body: dict[str, Any] = {
        "object": "user",
        "id": user_id,
        "displayName": row[f"{prefix}display_name"],
        "email": row[f"{prefix}email"],
        "urls": {"location": f"{base_url}/v1/users/{user_id}"},
    }
    if row[f"{prefix}photo_url"]:
        body["photoURL"] = row[f"{prefix}photo_url"]
    return body
