"""Sites: a custom hostname (unique across the install) the published reader answers by the
`Host` header, and a structure version that every write to a site's sections, groups and site
spaces bumps, under which readers keep the site's structure between requests.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sites") as batch:
        batch.add_column(sa.Column("hostname", sa.String(512), nullable=True))
        batch.add_column(
            sa.Column("structure_version", sa.BigInteger(), nullable=False, server_default="0")
        )
        batch.create_unique_constraint("uq_sites_hostname", ["hostname"])


def downgrade() -> None:
    with op.batch_alter_table("sites") as batch:
        batch.drop_constraint("uq_sites_hostname", type_="unique")
        batch.drop_column("structure_version")
        batch.drop_column("hostname")
