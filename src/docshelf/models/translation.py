import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

translation_settings = sa.Table(
    "translation_settings",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("title", sa.String(100), nullable=False),
    sa.Column("languages", JSONType, nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Index("ix_translation_settings_org_created", "organization_id", "created_at", "id"),
)
