import sqlalchemy as sa

from docshelf.kit.db import metadata

# Install-wide values every process must agree on (the JWT signing key, the bootstrap marker).
instance_settings = sa.Table(
    "instance_settings",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text(), nullable=False),
)
