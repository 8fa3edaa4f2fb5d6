"""Site spaces: `hidden` (GitBook 0.202's site-space update), a site space left out of the
site's navigation (the reader's variant list) while its address still serves it.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("site_spaces") as batch:
        batch.add_column(
            sa.Column("hidden", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("site_spaces") as batch:
        batch.drop_column("hidden")
