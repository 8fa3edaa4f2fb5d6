import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

saml_providers = sa.Table(
    "saml_providers",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("label", sa.String(30), nullable=False),
    # The identity provider's entity ID, SSO URL and signing certificate (as given: PEM or bare
    # base64). Null until set; the provider is `active` once all three are.
    sa.Column("entity_id", sa.String(1024)),
    sa.Column("sso_url", sa.String(2048)),
    sa.Column("certificate", sa.Text()),
    # A deleted team stops being the default rather than blocking the deletion.
    sa.Column("default_team_id", sa.String(32), sa.ForeignKey("teams.id", ondelete="SET NULL")),
    # Null means guest.
    sa.Column("default_role", sa.String(16)),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_saml_providers_org_created", "organization_id", "created_at", "id"),
)

# AuthnRequests we issued and not yet answered: a response must name one (InResponseTo), and
# naming it consumes it.
saml_requests = sa.Table(
    "saml_requests",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column(
        "provider_id",
        sa.String(32),
        sa.ForeignKey("saml_providers.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("expires_at", UTCDateTime(), nullable=False),
    # SHA-256 of the nonce in the cookie of the browser that started the login: the response
    # is taken only from that browser (login CSRF).
    sa.Column("browser_hash", sa.String(64)),
    # Where the browser goes once logged in (a path of ours), kept here rather than trusted
    # from RelayState, which whoever posts the response chooses.
    sa.Column("next_path", sa.String(2048)),
    # Set when a signed-in user started this login to link the provider's identity to their
    # account (sso.login.link).
    sa.Column("link_user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE")),
    sa.Index("ix_saml_requests_expires", "expires_at"),
)

# The identities each provider speaks for: (provider, subject) -> account. A provider logs in
# only the accounts linked to its own subjects; it never reaches an account by e-mail alone
# (README, "Single sign-on": the identity rule).
sso_identities = sa.Table(
    "sso_identities",
    metadata,
    sa.Column(
        "provider_id",
        sa.String(32),
        sa.ForeignKey("saml_providers.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("subject", sa.String(1024), primary_key=True),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_sso_identities_user_id", "user_id"),
)

# One-time codes a signed-in user gets to link an identity of a provider to their account; the
# browser that opens the start URL carrying one starts a linking login.
saml_link_codes = sa.Table(
    "saml_link_codes",
    metadata,
    sa.Column("code_hash", sa.String(64), primary_key=True),
    sa.Column(
        "provider_id",
        sa.String(32),
        sa.ForeignKey("saml_providers.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("expires_at", UTCDateTime(), nullable=False),
    sa.Index("ix_saml_link_codes_expires", "expires_at"),
)

# Assertions already used to log in, kept until they would have expired anyway: one use each.
saml_assertions = sa.Table(
    "saml_assertions",
    metadata,
    sa.Column(
        "provider_id",
        sa.String(32),
        sa.ForeignKey("saml_providers.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("assertion_id", sa.String(256), primary_key=True),
    sa.Column("expires_at", UTCDateTime(), nullable=False),
    sa.Index("ix_saml_assertions_expires", "expires_at"),
)

# Browser sessions started by an SSO login. Only the SHA-256 of the cookie value is stored,
# like API tokens.
user_sessions = sa.Table(
    "user_sessions",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("session_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("provider_id", sa.String(32), sa.ForeignKey("saml_providers.id", ondelete="CASCADE")),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("expires_at", UTCDateTime(), nullable=False),
    sa.Index("ix_user_sessions_user_id", "user_id"),
    sa.Index("ix_user_sessions_expires", "expires_at"),
)
