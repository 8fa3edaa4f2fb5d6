"""Git Sync: the commits pushed (git_commits, their objects in git_objects) and the branches
change requests came from (git_branches)."""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032_gitsync"
down_revision: str | None = "0031_events"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "git_commits",
        sa.Column(
            "revision_id",
            sa.String(32),
            sa.ForeignKey("revisions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "space_id",
            sa.String(32),
            sa.ForeignKey("spaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("author", sa.LargeBinary(), nullable=False),
        sa.Column("author_time", sa.BigInteger(), nullable=False),
        sa.Column("author_timezone", sa.Integer(), nullable=False),
        sa.Column("committer", sa.LargeBinary(), nullable=False),
        sa.Column("commit_time", sa.BigInteger(), nullable=False),
        sa.Column("commit_timezone", sa.Integer(), nullable=False),
        sa.Column("message", sa.LargeBinary(), nullable=False),
        sa.Column("pushed", sa.String(40)),
    )
    op.create_table(
        "git_objects",
        sa.Column(
            "space_id",
            sa.String(32),
            sa.ForeignKey("spaces.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("sha", sa.String(40), primary_key=True),
        sa.Column("type_num", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "git_branches",
        sa.Column(
            "space_id",
            sa.String(32),
            sa.ForeignKey("spaces.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column(
            "change_request_id",
            sa.String(32),
            sa.ForeignKey("change_requests.id", ondelete="CASCADE"),
            nullable=False,
            unique=True,
        ),
    )


def downgrade() -> None:
    op.drop_table("git_objects")
    op.drop_table("git_branches")
    op.drop_table("git_commits")
