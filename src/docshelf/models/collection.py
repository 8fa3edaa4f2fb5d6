import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

collections = sa.Table(
    "collections",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("parent_id", sa.String(32), sa.ForeignKey("collections.id", ondelete="CASCADE")),
    sa.Column("title", sa.String(50), nullable=False),
    sa.Column("description", sa.String(100)),
    # A role, "inherit", or NULL (nobody gets a role from the organization).
    sa.Column("default_level", sa.String(16)),
    # Order among the siblings (collections and spaces) of the same parent.
    sa.Column("position", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Index("ix_collections_org_parent", "organization_id", "parent_id", "position"),
    sa.Index("ix_collections_parent", "parent_id"),
)
