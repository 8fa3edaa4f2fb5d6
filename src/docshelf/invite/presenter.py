from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping


def present_invite(
    row: RowMapping,
    *,
    space: dict[str, Any] | None = None,
    collection: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`space` / `collection`: the presented target of a content invite."""
    body: dict[str, Any] = {"object": "invite", "id": row["id"]}
    if space is not None:
        body.update(level=row["role"], space=space)
    elif collection is not None:
        body.update(level=row["role"], collection=collection)
    else:
        body["role"] = row["role"]
    body["redundant"] = bool(row["redundant"])
    return body
