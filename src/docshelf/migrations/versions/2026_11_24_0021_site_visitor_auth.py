"""Visitor authentication and adaptive content of sites: each site's signing key for visitor
tokens, its fallback URL, and its adaptive schema.

Revision ID: 0021
Revises: 0015
Create Date: 2026-11-24
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sites") as batch:
        batch.add_column(sa.Column("visitor_key", sa.String(64), nullable=True))
        batch.add_column(sa.Column("visitor_key_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("fallback_url", sa.String(2048), nullable=True))
        batch.add_column(sa.Column("adaptive_schema", sa.Text(), nullable=True))
        batch.add_column(sa.Column("adaptive_schema_at", sa.DateTime(), nullable=True))
    # Existing sites get their own key, as new ones do when created.
    conn = op.get_bind()
    site_ids = conn.execute(sa.text("SELECT id FROM sites")).scalars().all()
    for site_id in site_ids:
        conn.execute(
            sa.text("UPDATE sites SET visitor_key = :key WHERE id = :id"),
            {"key": secrets.token_urlsafe(32), "id": site_id},
        )


def downgrade() -> None:
    with op.batch_alter_table("sites") as batch:
        batch.drop_column("adaptive_schema_at")
        batch.drop_column("adaptive_schema")
        batch.drop_column("fallback_url")
        batch.drop_column("visitor_key_at")
        batch.drop_column("visitor_key")
