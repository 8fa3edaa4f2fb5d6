"""Docs sites: sites, section groups, sections, site spaces and share links.

Revision ID: 0015
Revises: 0011
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sites",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "organization_id",
            sa.String(32),
            sa.ForeignKey("organizations.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("title", sa.String(128), nullable=False),
        sa.Column("visibility", sa.String(20), nullable=False),
        sa.Column("published", sa.Boolean(), nullable=False),
        sa.Column("basename", sa.String(100)),
        sa.Column("proxy", sa.String(512)),
        sa.Column("adaptive_content", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("organization_id", "basename", name="uq_sites_org_basename"),
    )
    op.create_index("ix_sites_org_created", "sites", ["organization_id", "created_at", "id"])
    op.create_table(
        "site_section_groups",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "site_id",
            sa.String(32),
            sa.ForeignKey("sites.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("title", sa.String(100), nullable=False),
        sa.Column("icon", sa.String(50)),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index(
        "ix_site_section_groups_site", "site_section_groups", ["site_id", "position", "id"]
    )
    op.create_table(
        "site_sections",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "site_id",
            sa.String(32),
            sa.ForeignKey("sites.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "group_id",
            sa.String(32),
            sa.ForeignKey("site_section_groups.id", ondelete="SET NULL"),
        ),
        sa.Column("title", sa.String(128), nullable=False),
        sa.Column("path", sa.String(100), nullable=False),
        sa.Column("description", sa.String(256)),
        sa.Column("icon", sa.String(50)),
        sa.Column("condition", sa.String(1024)),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("site_id", "path", name="uq_site_sections_path"),
    )
    op.create_index("ix_site_sections_site", "site_sections", ["site_id", "position", "id"])
    op.create_index(
        "uq_site_sections_default",
        "site_sections",
        ["site_id"],
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    )
    op.create_table(
        "site_spaces",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "site_id",
            sa.String(32),
            sa.ForeignKey("sites.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "section_id", sa.String(32), sa.ForeignKey("site_sections.id", ondelete="CASCADE")
        ),
        sa.Column("section_key", sa.String(32), nullable=False),
        sa.Column(
            "space_id",
            sa.String(32),
            sa.ForeignKey("spaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("path", sa.String(100), nullable=False),
        sa.Column("condition", sa.String(1024)),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("site_id", "section_key", "path", name="uq_site_spaces_path"),
    )
    op.create_index(
        "ix_site_spaces_site", "site_spaces", ["site_id", "section_key", "position", "id"]
    )
    op.create_index("ix_site_spaces_space", "site_spaces", ["space_id"])
    op.create_index(
        "uq_site_spaces_default",
        "site_spaces",
        ["site_id", "section_key"],
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    )
    op.create_table(
        "site_share_links",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "site_id",
            sa.String(32),
            sa.ForeignKey("sites.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("secret", sa.String(64), nullable=False, unique=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_site_share_links_site", "site_share_links", ["site_id", "created_at", "id"])


def downgrade() -> None:
    op.drop_table("site_share_links")
    op.drop_table("site_spaces")
    op.drop_table("site_sections")
    op.drop_table("site_section_groups")
    op.drop_table("sites")
