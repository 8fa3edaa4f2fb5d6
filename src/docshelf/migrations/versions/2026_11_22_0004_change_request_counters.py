"""Change request counters kept on spaces; an index for the contributor filter.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COUNTERS = ("change_requests_total", "change_requests_open", "change_requests_draft")


def upgrade() -> None:
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        for name in _COUNTERS:
            batch_op.add_column(sa.Column(name, sa.Integer(), server_default="0", nullable=False))
    # Backfill from the change requests that exist.
    for name, where in (
        ("change_requests_total", ""),
        ("change_requests_open", " AND cr.status = 'open'"),
        ("change_requests_draft", " AND cr.status = 'draft'"),
    ):
        op.execute(
            f"UPDATE spaces SET {name} = (SELECT count(*) FROM change_requests cr "
            f"WHERE cr.space_id = spaces.id{where})"
        )
    with op.batch_alter_table("change_request_contributors", schema=None) as batch_op:
        batch_op.create_index(
            "ix_change_request_contributors_user", ["user_id", "change_request_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("change_request_contributors", schema=None) as batch_op:
        batch_op.drop_index("ix_change_request_contributors_user")
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        for name in _COUNTERS:
            batch_op.drop_column(name)
