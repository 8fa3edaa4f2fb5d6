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


def present_user_or_gone(
    row: RowMapping | dict[str, Any], base_url: str, *, id_key: str, prefix: str
) -> dict[str, Any]:
    """A user from a joined row whose user may have been deleted since (`id_key` null): GitBook's
    shapes still require a User there, so a deleted one is a nameless placeholder."""
    user_id = row[id_key]
    if user_id is None:
        gone = {"id": "", "email": None, "display_name": "Deleted user", "photo_url": None}
        return present_user(gone, base_url)
    fields = ("email", "display_name", "photo_url")
    return present_user({"id": user_id, **{f: row[prefix + f] for f in fields}}, base_url)
