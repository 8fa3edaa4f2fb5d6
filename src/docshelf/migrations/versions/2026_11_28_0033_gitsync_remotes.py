"""Git Sync with an outside repository: a space's remote, its credentials and its sync status
(git_remotes)."""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0033_git_remotes"
down_revision: str | None = "0032_gitsync"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "git_remotes",
        sa.Column(
            "space_id",
            sa.String(32),
            sa.ForeignKey("spaces.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("username", sa.Text()),
        sa.Column("token", sa.Text()),
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
        sa.Column("hook_secret", sa.String(64), nullable=False),
        sa.Column("remote_commit", sa.String(40)),
        sa.Column("pulled", sa.String(40)),
        sa.Column("last_push_at", sa.DateTime()),
        sa.Column("last_pull_at", sa.DateTime()),
        sa.Column("last_sync_at", sa.DateTime()),
        sa.Column("last_error", sa.Text()),
        sa.Column("last_error_at", sa.DateTime()),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("git_remotes")
