"""SSO identities keyed by (provider, subject), one-time link codes, verified e-mail domains,
organization-scoped API tokens, and SAML requests bound to the browser that started them.

Sessions and pending requests from before are dropped, and the API tokens of every account that
logged in through SSO revoked: a session or a token may have come from the old e-mail match (any
provider could reach any account), and a pending request has no browser binding. Users log in
again, and make new tokens.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-27
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("DELETE FROM user_sessions")
    op.execute("DELETE FROM saml_requests")
    # A token an SSO session made could be one of an account the old e-mail match let a
    # provider reach: every token of an account that ever logged in through SSO is revoked
    # (its owner makes a new one: `docshelf token create`, or an SSO login and /sso/token).
    now = datetime.now(UTC).replace(tzinfo=None)
    op.get_bind().execute(
        sa.text(
            "UPDATE api_tokens SET revoked_at = :now WHERE revoked_at IS NULL "
            "AND user_id IN (SELECT user_id FROM members WHERE sso)"
        ),
        {"now": now},
    )
    op.create_table(
        "verified_email_domains",
        sa.Column("domain", sa.String(length=255), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("verified_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_verified_email_domains_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("domain", name=op.f("pk_verified_email_domains")),
    )
    with op.batch_alter_table("verified_email_domains", schema=None) as batch_op:
        batch_op.create_index("ix_verified_email_domains_org", ["organization_id"], unique=False)

    op.create_table(
        "saml_link_codes",
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("provider_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["saml_providers.id"],
            name=op.f("fk_saml_link_codes_provider_id_saml_providers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_saml_link_codes_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("code_hash", name=op.f("pk_saml_link_codes")),
    )
    with op.batch_alter_table("saml_link_codes", schema=None) as batch_op:
        batch_op.create_index("ix_saml_link_codes_expires", ["expires_at"], unique=False)

    op.create_table(
        "sso_identities",
        sa.Column("provider_id", sa.String(length=32), nullable=False),
        sa.Column("subject", sa.String(length=1024), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["saml_providers.id"],
            name=op.f("fk_sso_identities_provider_id_saml_providers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_sso_identities_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("provider_id", "subject", name=op.f("pk_sso_identities")),
    )
    with op.batch_alter_table("sso_identities", schema=None) as batch_op:
        batch_op.create_index("ix_sso_identities_user_id", ["user_id"], unique=False)

    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("organization_id", sa.String(length=32), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_api_tokens_organization_id_organizations"),
            "organizations",
            ["organization_id"],
            ["id"],
            ondelete="CASCADE",
        )

    with op.batch_alter_table("saml_requests", schema=None) as batch_op:
        batch_op.add_column(sa.Column("browser_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("next_path", sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column("link_user_id", sa.String(length=32), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_saml_requests_link_user_id_users"),
            "users",
            ["link_user_id"],
            ["id"],
            ondelete="CASCADE",
        )


def downgrade() -> None:
    with op.batch_alter_table("saml_requests", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_saml_requests_link_user_id_users"), type_="foreignkey"
        )
        batch_op.drop_column("link_user_id")
        batch_op.drop_column("next_path")
        batch_op.drop_column("browser_hash")

    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_api_tokens_organization_id_organizations"), type_="foreignkey"
        )
        batch_op.drop_column("organization_id")

    with op.batch_alter_table("sso_identities", schema=None) as batch_op:
        batch_op.drop_index("ix_sso_identities_user_id")

    op.drop_table("sso_identities")
    with op.batch_alter_table("saml_link_codes", schema=None) as batch_op:
        batch_op.drop_index("ix_saml_link_codes_expires")

    op.drop_table("saml_link_codes")
    with op.batch_alter_table("verified_email_domains", schema=None) as batch_op:
        batch_op.drop_index("ix_verified_email_domains_org")

    op.drop_table("verified_email_domains")
