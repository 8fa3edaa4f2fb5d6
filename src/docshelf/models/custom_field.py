import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

custom_fields = sa.Table(
    "custom_fields",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("name", sa.String(50), nullable=False),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("title", sa.String(100)),
    sa.Column("description", sa.String(200)),
    sa.Column("placeholder", sa.String(100)),
    sa.Column("options", JSONType),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.UniqueConstraint("organization_id", "name"),
)

custom_field_values = sa.Table(
    "custom_field_values",
    metadata,
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "field_id",
        sa.String(32),
        sa.ForeignKey("custom_fields.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("value", JSONType, nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Index("ix_custom_field_values_field", "field_id"),
)
