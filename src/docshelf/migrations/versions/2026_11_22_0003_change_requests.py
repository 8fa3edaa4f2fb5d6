"""Change requests: per-space numbers, statuses, contributors.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 03:33:38.722834
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "change_requests",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.String(length=100), nullable=False),
        sa.Column("created_by", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_id", sa.String(length=32), nullable=False),
        sa.Column("revision_initial", sa.String(length=32), nullable=False),
        sa.Column("revision_merged_ancestor", sa.String(length=32), nullable=True),
        sa.Column("revision_merged", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_change_requests_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_change_requests_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_requests")),
        sa.UniqueConstraint("space_id", "number", name=op.f("uq_change_requests_space_id_number")),
    )
    with op.batch_alter_table("change_requests", schema=None) as batch_op:
        batch_op.create_index(
            "ix_change_requests_space_status_updated",
            ["space_id", "status", "updated_at", "id"],
            unique=False,
        )

    op.create_table(
        "change_request_contributors",
        sa.Column("change_request_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["change_request_id"],
            ["change_requests.id"],
            name=op.f("fk_change_request_contributors_change_request_id_change_requests"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_change_request_contributors_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "change_request_id", "user_id", name=op.f("pk_change_request_contributors")
        ),
    )
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("change_request_seq", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:

    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.drop_column("change_request_seq")

    op.drop_table("change_request_contributors")
    with op.batch_alter_table("change_requests", schema=None) as batch_op:
        batch_op.drop_index("ix_change_requests_space_status_updated")

    op.drop_table("change_requests")
