import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    # Stored lower-cased: e-mail look-ups and uniqueness ignore case.
    sa.Column("email", sa.String(320), nullable=False, unique=True),
    sa.Column("display_name", sa.String(255), nullable=False),
    sa.Column("photo_url", sa.String(2048)),
    sa.Column("created_at", UTCDateTime(), nullable=False),
)

api_tokens = sa.Table(
    "api_tokens",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    # SHA-256 of the whole token; the token itself is never stored.
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("display_prefix", sa.String(16), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("revoked_at", UTCDateTime()),
    # Set on tokens made from an SSO session: the token acts only while its account belongs to
    # no organization but this one (auth.repository), so an identity provider never mints
    # reach beyond its own organization.
    sa.Column(
        "organization_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE")
    ),
    sa.Index("ix_api_tokens_user_id", "user_id"),
)
