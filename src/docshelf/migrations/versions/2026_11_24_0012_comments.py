"""Comments on spaces and change requests, their replies and reactions; open-comment counters
on spaces and change requests (new rows start at 0: there were no comments before).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 05:19:18.261099
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "comments",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("change_request_id", sa.String(length=32), nullable=True),
        sa.Column("posted_by", sa.String(length=32), nullable=True),
        sa.Column("posted_at", sa.DateTime(), nullable=False),
        sa.Column("edited_at", sa.DateTime(), nullable=True),
        sa.Column("markdown", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("resolved_at", sa.DateTime(), nullable=True),
        sa.Column("resolved_by", sa.String(length=32), nullable=True),
        sa.Column("target_revision", sa.String(length=32), nullable=False),
        sa.Column("target_page", sa.String(length=100), nullable=True),
        sa.Column("target_page_text", sa.String(length=64), nullable=True),
        sa.Column("target_node", sa.String(length=100), nullable=True),
        sa.ForeignKeyConstraint(
            ["change_request_id"],
            ["change_requests.id"],
            name=op.f("fk_comments_change_request_id_change_requests"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["posted_by"],
            ["users.id"],
            name=op.f("fk_comments_posted_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["resolved_by"],
            ["users.id"],
            name=op.f("fk_comments_resolved_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_comments_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comments")),
    )
    with op.batch_alter_table("comments", schema=None) as batch_op:
        batch_op.create_index("ix_comments_target_page", ["space_id", "target_page"], unique=False)
        batch_op.create_index(
            "ix_comments_thread", ["space_id", "change_request_id", "posted_at", "id"], unique=False
        )

    op.create_table(
        "comment_reactions",
        sa.Column("subject_id", sa.String(length=32), nullable=False),
        sa.Column("emoji", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("comment_id", sa.String(length=32), nullable=False),
        sa.Column("reacted_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["comment_id"],
            ["comments.id"],
            name=op.f("fk_comment_reactions_comment_id_comments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_comment_reactions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "subject_id", "emoji", "user_id", name=op.f("pk_comment_reactions")
        ),
    )
    with op.batch_alter_table("comment_reactions", schema=None) as batch_op:
        batch_op.create_index("ix_comment_reactions_comment", ["comment_id"], unique=False)

    op.create_table(
        "comment_replies",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("comment_id", sa.String(length=32), nullable=False),
        sa.Column("posted_by", sa.String(length=32), nullable=True),
        sa.Column("posted_at", sa.DateTime(), nullable=False),
        sa.Column("edited_at", sa.DateTime(), nullable=True),
        sa.Column("markdown", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["comment_id"],
            ["comments.id"],
            name=op.f("fk_comment_replies_comment_id_comments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["posted_by"],
            ["users.id"],
            name=op.f("fk_comment_replies_posted_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comment_replies")),
    )
    with op.batch_alter_table("comment_replies", schema=None) as batch_op:
        batch_op.create_index(
            "ix_comment_replies_comment", ["comment_id", "posted_at", "id"], unique=False
        )

    with op.batch_alter_table("change_requests", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("comments_open", sa.Integer(), server_default="0", nullable=False)
        )

    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("comments_open", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.drop_column("comments_open")

    with op.batch_alter_table("change_requests", schema=None) as batch_op:
        batch_op.drop_column("comments_open")

    with op.batch_alter_table("comment_replies", schema=None) as batch_op:
        batch_op.drop_index("ix_comment_replies_comment")

    op.drop_table("comment_replies")
    with op.batch_alter_table("comment_reactions", schema=None) as batch_op:
        batch_op.drop_index("ix_comment_reactions_comment")

    op.drop_table("comment_reactions")
    with op.batch_alter_table("comments", schema=None) as batch_op:
        batch_op.drop_index("ix_comments_thread")
        batch_op.drop_index("ix_comments_target_page")

    op.drop_table("comments")
