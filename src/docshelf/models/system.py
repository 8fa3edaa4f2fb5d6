import sqlalchemy as sa

from docshelf.kit.db import metadata

# Fixed-window request counters shared by every API process (PostgreSQL deployments).
rate_limit_counters = sa.Table(
    "rate_limit_counters",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("window", sa.BigInteger(), primary_key=True),
    sa.Column("count", sa.Integer(), nullable=False),
)

# Install-wide values every process must agree on (the JWT signing key, the bootstrap marker).
instance_settings = sa.Table(
    "instance_settings",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text(), nullable=False),
)
