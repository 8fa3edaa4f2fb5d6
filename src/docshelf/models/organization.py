import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

organizations = sa.Table(
    "organizations",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("title", sa.String(255), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Column("email_domains", JSONType, nullable=False),
    # The organization's subdomain; unique, since GET /v1/subdomains/{subdomain} resolves it.
    sa.Column("hostname", sa.String(32), unique=True),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("use_case", sa.String(32)),
    sa.Column("community_type", sa.String(16)),
    # Null means guest; stored with has_default_role so "unset" and "guest" stay distinct.
    sa.Column("default_role", sa.String(16)),
    sa.Column("has_default_role", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("default_content", JSONType),
    sa.Column("logo", sa.String(2048)),
    sa.Column("sso", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("ai", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("invite_links", sa.Boolean(), nullable=False, server_default=sa.true()),
    # GitBook's MergeRulesStandaloneConfiguration as sent; null is `{"type": "none"}`.
    sa.Column("merge_rules", JSONType),
)

# The e-mail domains of each organization (organizations.email_domains, as an indexed table) so
# that the look-up by domain reads only the organizations that list it.
organization_email_domains = sa.Table(
    "organization_email_domains",
    metadata,
    sa.Column("domain", sa.String(255), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Index("ix_organization_email_domains_org", "organization_id"),
)

# E-mail domains the install's operator verified as an organization's own (`docshelf org
# verify-domain`): that organization's SSO providers may link existing accounts at the domain,
# and no other organization's providers may create accounts there. One organization a domain.
verified_email_domains = sa.Table(
    "verified_email_domains",
    metadata,
    sa.Column("domain", sa.String(255), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("verified_at", UTCDateTime(), nullable=False),
    sa.Index("ix_verified_email_domains_org", "organization_id"),
)

members = sa.Table(
    "members",
    metadata,
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    ),
    # Null means guest.
    sa.Column("role", sa.String(16)),
    sa.Column("joined_at", UTCDateTime(), nullable=False),
    sa.Column("last_seen_at", UTCDateTime()),
    sa.Column("sso", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Index("ix_members_org_joined", "organization_id", "joined_at", "user_id"),
    sa.Index("ix_members_org_seen", "organization_id", "last_seen_at", "user_id"),
    sa.Index("ix_members_user_id", "user_id"),
)

invites = sa.Table(
    "invites",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # The organization role, or for a space or collection invite the level granted there.
    sa.Column("role", sa.String(16)),
    sa.Column("space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE")),
    sa.Column("collection_id", sa.String(32), sa.ForeignKey("collections.id", ondelete="CASCADE")),
    sa.Column("created_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_invites_org_created", "organization_id", "created_at", "id"),
    sa.Index("ix_invites_space", "space_id"),
    sa.Index("ix_invites_collection", "collection_id"),
)
