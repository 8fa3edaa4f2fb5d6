"""Rendered PDF exports, by what they were rendered from.

Revision ID: 0014
Revises: 0012
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pdf_exports",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("source_key", sa.String(length=64), nullable=False),
        sa.Column("blob_key", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_pdf_exports_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", "source_key", name=op.f("pk_pdf_exports")),
    )
    with op.batch_alter_table("pdf_exports", schema=None) as batch_op:
        batch_op.create_index("ix_pdf_exports_blob_key", ["blob_key"], unique=False)
        batch_op.create_index(
            "ix_pdf_exports_space_created", ["space_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("pdf_exports", schema=None) as batch_op:
        batch_op.drop_index("ix_pdf_exports_space_created")
        batch_op.drop_index("ix_pdf_exports_blob_key")
    op.drop_table("pdf_exports")
