"""Small portable SQL helpers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

# A row as repositories hand it on: keyed by result column names (a RowMapping is one).
Row = Mapping[Any, Any]


def contains_pattern(needle: str) -> str:
    """The LIKE pattern of a case-insensitive substring match (see like_ci), its wildcards
    escaped."""
    escaped = needle.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def like_ci(column: sa.ColumnElement[Any], name: str) -> sa.ColumnElement[bool]:
    """`column`, lowered, LIKE the pattern bound as `name` (contains_pattern's): a statement
    built once takes the needle as a parameter."""
    return sa.func.lower(column).like(sa.bindparam(name, type_=sa.Text()), escape="\\")
