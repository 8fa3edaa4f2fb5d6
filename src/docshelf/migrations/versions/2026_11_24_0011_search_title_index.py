"""A GIN index on the page title's own tsvector (PostgreSQL only), so that a broad query's
title tier (search.engine: the rows whose page title holds every word) is found through an
index rather than by reading every match. SQLite's FTS5 finds a column's matches already.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from docshelf.kit.db import is_postgres

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if not is_postgres(op.get_bind()):
        return
    op.create_index(
        "ix_search_sections_title",
        "search_sections",
        [sa.text("to_tsvector('simple'::regconfig, page_title)")],
        unique=False,
        postgresql_using="gin",
    )


def downgrade() -> None:
    if not is_postgres(op.get_bind()):
        return
    op.drop_index("ix_search_sections_title", table_name="search_sections")
