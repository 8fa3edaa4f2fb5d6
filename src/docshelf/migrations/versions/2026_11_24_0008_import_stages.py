"""Staged archives of large imports, removed when their job ends.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "import_stages",
        sa.Column("revision_id", sa.String(length=32), nullable=False),
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("blob_key", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_import_stages_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("revision_id", name=op.f("pk_import_stages")),
    )
    with op.batch_alter_table("import_stages", schema=None) as batch_op:
        batch_op.create_index("ix_import_stages_space_id", ["space_id"], unique=False)
        batch_op.create_index("ix_import_stages_blob_key", ["blob_key"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("import_stages", schema=None) as batch_op:
        batch_op.drop_index("ix_import_stages_blob_key")
        batch_op.drop_index("ix_import_stages_space_id")
    op.drop_table("import_stages")
