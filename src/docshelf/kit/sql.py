"""Small portable SQL helpers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

# A row as repositories hand it on: keyed by result column names (a RowMapping is one).
Row = Mapping[Any, Any]


def contains_ci(column: sa.ColumnElement[Any], needle: str) -> sa.ColumnElement[bool]:
    """Case-insensitive substring match with LIKE wildcards in the needle escaped."""
    escaped = needle.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return sa.func.lower(column).like(f"%{escaped}%", escape="\\")
