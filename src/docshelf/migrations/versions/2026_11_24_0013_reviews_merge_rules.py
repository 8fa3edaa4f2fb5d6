"""Change request reviews and requested reviewers; merge rules on organizations and spaces;
revisions indexed by change request (its contributors).

Revision ID: 0013
Revises: 0011
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[object]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "change_request_reviews",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("change_request_id", sa.String(length=32), nullable=False),
        sa.Column("reviewer_id", sa.String(length=32), nullable=True),
        sa.Column("requested_by", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("revision_id", sa.String(length=32), nullable=False),
        sa.Column("superseded", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("comment_id", sa.String(length=32), nullable=True),
        sa.Column("comment_markdown", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["change_request_id"],
            ["change_requests.id"],
            name=op.f("fk_change_request_reviews_change_request_id_change_requests"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["requested_by"],
            ["users.id"],
            name=op.f("fk_change_request_reviews_requested_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["reviewer_id"],
            ["users.id"],
            name=op.f("fk_change_request_reviews_reviewer_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_request_reviews")),
    )
    with op.batch_alter_table("change_request_reviews", schema=None) as batch_op:
        batch_op.create_index(
            "ix_change_request_reviews_cr_created",
            ["change_request_id", "created_at", "id"],
            unique=False,
        )
    op.create_table(
        "change_request_reviewers",
        sa.Column("change_request_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("requested_by", sa.String(length=32), nullable=True),
        sa.Column("revision_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["change_request_id"],
            ["change_requests.id"],
            name=op.f("fk_change_request_reviewers_change_request_id_change_requests"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["requested_by"],
            ["users.id"],
            name=op.f("fk_change_request_reviewers_requested_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_change_request_reviewers_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "change_request_id", "user_id", name=op.f("pk_change_request_reviewers")
        ),
    )
    with op.batch_alter_table("change_request_reviewers", schema=None) as batch_op:
        batch_op.create_index(
            "ix_change_request_reviewers_user", ["user_id", "change_request_id"], unique=False
        )
    with op.batch_alter_table("revisions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_revisions_change_request", ["change_request_id", "author_id"], unique=False
        )
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("merge_rules", _json(), nullable=True))
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("merge_rules", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.drop_column("merge_rules")
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.drop_column("merge_rules")
    with op.batch_alter_table("revisions", schema=None) as batch_op:
        batch_op.drop_index("ix_revisions_change_request")
    with op.batch_alter_table("change_request_reviewers", schema=None) as batch_op:
        batch_op.drop_index("ix_change_request_reviewers_user")
    op.drop_table("change_request_reviewers")
    with op.batch_alter_table("change_request_reviews", schema=None) as batch_op:
        batch_op.drop_index("ix_change_request_reviews_cr_created")
    op.drop_table("change_request_reviews")
