"""Small portable SQL helpers."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


def contains_ci(column: sa.ColumnElement[Any], needle: str) -> sa.ColumnElement[bool]:
    """Case-insensitive substring match with LIKE wildcards in the needle escaped."""
    escaped = needle.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return sa.func.lower(column).like(f"%{escaped}%", escape="\\")
