"""The page title's tsvector as a stored column of search_sections (PostgreSQL only), with the
GIN index on it replacing the index on the expression (0011), which nothing reads any more,
and a btree in primary-key order that carries the titles (ix_search_sections_titles).
A broad query's title tier reads rows in primary-key order until enough hold every word:
computing `to_tsvector` of each row's title there cost ten times the reading, and the reading
is then an index-only scan of that btree rather than a visit of each (wide) row. Existing rows
get the column when it is added (the table is rewritten). SQLite's FTS5 matches a column
already; its table gets an always-NULL column of the name (see _FTS5_COLUMNS).

Revision ID: 0025
Revises: 0023
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from docshelf.kit.db import is_postgres

revision: str = "0025"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TITLE = "to_tsvector('simple'::regconfig, page_title)"

# SQLite: the FTS5 table gets the column too, UNINDEXED and always NULL like `document`, so that
# both engines have the columns the table definition names (FTS5 cannot add a column: the table
# is rebuilt, its rows copied with their rowids, which order a broad query's candidates).
_FTS5_COLUMNS = [
    "space_id",
    "page_id",
    "position UNINDEXED",
    "anchor UNINDEXED",
    "page_title",
    "section_title",
    "body",
    "document UNINDEXED",
]
_FTS5_TOKENIZE = "tokenize = 'unicode61 remove_diacritics 2'"


def _rebuild_fts5(columns: list[str]) -> None:
    names = ", ".join(c.split()[0] for c in _FTS5_COLUMNS)
    op.execute(
        f"CREATE VIRTUAL TABLE search_sections_rebuilt USING fts5({', '.join(columns)}, "
        f"{_FTS5_TOKENIZE})"
    )
    op.execute(
        f"INSERT INTO search_sections_rebuilt(rowid, {names}) "
        f"SELECT rowid, {names} FROM search_sections"
    )
    op.execute("DROP TABLE search_sections")
    op.execute("ALTER TABLE search_sections_rebuilt RENAME TO search_sections")


def upgrade() -> None:
    if not is_postgres(op.get_bind()):
        _rebuild_fts5([*_FTS5_COLUMNS, "title_vector UNINDEXED"])
        return
    op.drop_index("ix_search_sections_title", table_name="search_sections")
    op.add_column(
        "search_sections",
        sa.Column(
            "title_vector",
            postgresql.TSVECTOR(),
            sa.Computed(_TITLE, persisted=True),
            nullable=True,
        ),
    )
    op.create_index(
        "ix_search_sections_title_vector",
        "search_sections",
        ["title_vector"],
        unique=False,
        postgresql_using="gin",
    )
    op.create_index(
        "ix_search_sections_titles",
        "search_sections",
        ["space_id", "page_id", "position"],
        unique=False,
        postgresql_include=["title_vector", "page_title", "section_title"],
    )


def downgrade() -> None:
    if not is_postgres(op.get_bind()):
        _rebuild_fts5(_FTS5_COLUMNS)
        return
    op.drop_index("ix_search_sections_titles", table_name="search_sections")
    op.drop_index("ix_search_sections_title_vector", table_name="search_sections")
    op.drop_column("search_sections", "title_vector")
    op.create_index(
        "ix_search_sections_title",
        "search_sections",
        [sa.text(_TITLE)],
        unique=False,
        postgresql_using="gin",
    )
