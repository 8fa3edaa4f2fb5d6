import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

# Direct grants on content: a user or a team gets a role on a space or a collection (and, through
# inheritance, on what the collection contains).
content_grants = sa.Table(
    "content_grants",
    metadata,
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("target_type", sa.String(16), primary_key=True),  # space | collection
    sa.Column("target_id", sa.String(32), primary_key=True),
    sa.Column("principal_type", sa.String(8), primary_key=True),  # user | team
    sa.Column("principal_id", sa.String(32), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_content_grants_principal", "principal_type", "principal_id"),
    sa.Index(
        "ix_content_grants_org_principal", "organization_id", "principal_type", "principal_id"
    ),
)
