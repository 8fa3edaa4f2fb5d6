"""Links found in main's pages, for the links and backlinks listings.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "page_links",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("page_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("target", sa.String(length=2048), nullable=False),
        sa.Column("anchor", sa.String(length=512), nullable=True),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_page_links_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", "page_id", "position", name=op.f("pk_page_links")),
    )
    with op.batch_alter_table("page_links", schema=None) as batch_op:
        batch_op.create_index("ix_page_links_target", ["space_id", "kind", "target"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("page_links", schema=None) as batch_op:
        batch_op.drop_index("ix_page_links_target")
    op.drop_table("page_links")
