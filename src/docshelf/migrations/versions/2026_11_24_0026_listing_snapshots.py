"""listing_snapshots: the pieces of a large space's page listing as of one revision of its main
(content/listing/pieces.py), so that a process that has none in memory lists a 10,000-page space
from one row and the pages changed since, not by reading and encoding every page.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from docshelf.kit.db import is_postgres

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "listing_snapshots",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("pages_root", sa.String(length=32), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_listing_snapshots_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", name=op.f("pk_listing_snapshots")),
    )
    if is_postgres(op.get_bind()):
        # Out of line but not compressed: the value is read whole by a process's first
        # listing, and decompressing 4 MB of pglz took as long again as sending it (4.2 MB:
        # 11-23 ms compressed to 1.5 MB, 6.5-7 ms as is).
        op.execute("ALTER TABLE listing_snapshots ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("listing_snapshots")
