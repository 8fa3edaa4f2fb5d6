"""Change requests keep GitBook's newer fields: `description` (stored as markdown, served as
a JSON document), `links` (external links, at most 10) and who merged them and when
(`mergedBy`, `mergedAt`, set at merge time).

Revision ID: 0018
Revises: 0011
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("change_requests", schema=None) as batch_op:
        batch_op.add_column(sa.Column("description", sa.Text(), nullable=True))
        batch_op.add_column(
            sa.Column(
                "links", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=True
            )
        )
        batch_op.add_column(sa.Column("merged_by", sa.String(32), nullable=True))
        batch_op.add_column(sa.Column("merged_at", sa.DateTime(), nullable=True))
        batch_op.create_foreign_key(
            "fk_change_requests_merged_by_users",
            "users",
            ["merged_by"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("change_requests", schema=None) as batch_op:
        batch_op.drop_constraint("fk_change_requests_merged_by_users", type_="foreignkey")
        batch_op.drop_column("merged_at")
        batch_op.drop_column("merged_by")
        batch_op.drop_column("links")
        batch_op.drop_column("description")
