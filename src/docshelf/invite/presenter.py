from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping


def present_invite(row: RowMapping) -> dict[str, Any]:
    return {
        "object": "invite",
        "id": row["id"],
        "role": row["role"],
        "redundant": bool(row["redundant"]),
    }
