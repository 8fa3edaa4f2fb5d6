"""The full-text search index of main's pages, one row per section.

PostgreSQL: a table with a weighted tsvector column (A page title, B section title, C body) and a
GIN index. SQLite: an FTS5 virtual table with the same columns. Pages already in main are indexed
when they next change.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from docshelf.kit.db import is_postgres

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_DOCUMENT = (
    "(setweight(to_tsvector('simple'::regconfig, page_title), 'A'::\"char\") || "
    "setweight(to_tsvector('simple'::regconfig, COALESCE(section_title, ''::text)), "
    "'B'::\"char\")) || setweight(to_tsvector('simple'::regconfig, body), 'C'::\"char\")"
)

# space_id and page_id are indexed (as tokens no user query can reach: queries are always limited
# to the text columns) so that a page's or a space's rows are found through the index rather
# than by reading the whole table. remove_diacritics 2: "resume" finds "résumé".
_FTS5 = (
    "CREATE VIRTUAL TABLE search_sections USING fts5("
    "space_id, page_id, position UNINDEXED, anchor UNINDEXED, "
    "page_title, section_title, body, document UNINDEXED, "
    "tokenize = 'unicode61 remove_diacritics 2')"
)


def upgrade() -> None:
    if not is_postgres(op.get_bind()):
        op.execute(_FTS5)
        return
    op.create_table(
        "search_sections",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("page_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("anchor", sa.Text(), nullable=True),
        sa.Column("page_title", sa.Text(), nullable=False),
        sa.Column("section_title", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column(
            "document",
            postgresql.TSVECTOR(),
            sa.Computed(_DOCUMENT, persisted=True),
            nullable=True,
        ),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_search_sections_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", "page_id", "position", name=op.f("pk_search_sections")),
    )
    op.create_index(
        "ix_search_sections_document",
        "search_sections",
        ["document"],
        unique=False,
        postgresql_using="gin",
    )


def downgrade() -> None:
    if is_postgres(op.get_bind()):
        op.drop_index("ix_search_sections_document", table_name="search_sections")
    op.drop_table("search_sections")
