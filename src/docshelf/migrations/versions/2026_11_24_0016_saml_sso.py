"""SAML providers, their pending requests and used assertions, and SSO browser sessions.

Revision ID: 0016
Revises: 0011
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "saml_providers",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("label", sa.String(length=30), nullable=False),
        sa.Column("entity_id", sa.String(length=1024), nullable=True),
        sa.Column("sso_url", sa.String(length=2048), nullable=True),
        sa.Column("certificate", sa.Text(), nullable=True),
        sa.Column("default_team_id", sa.String(length=32), nullable=True),
        sa.Column("default_role", sa.String(length=16), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["default_team_id"],
            ["teams.id"],
            name=op.f("fk_saml_providers_default_team_id_teams"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_saml_providers_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saml_providers")),
    )
    with op.batch_alter_table("saml_providers", schema=None) as batch_op:
        batch_op.create_index(
            "ix_saml_providers_org_created", ["organization_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "saml_assertions",
        sa.Column("provider_id", sa.String(length=32), nullable=False),
        sa.Column("assertion_id", sa.String(length=256), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["saml_providers.id"],
            name=op.f("fk_saml_assertions_provider_id_saml_providers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("provider_id", "assertion_id", name=op.f("pk_saml_assertions")),
    )
    with op.batch_alter_table("saml_assertions", schema=None) as batch_op:
        batch_op.create_index("ix_saml_assertions_expires", ["expires_at"], unique=False)

    op.create_table(
        "saml_requests",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("provider_id", sa.String(length=32), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["saml_providers.id"],
            name=op.f("fk_saml_requests_provider_id_saml_providers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saml_requests")),
    )
    with op.batch_alter_table("saml_requests", schema=None) as batch_op:
        batch_op.create_index("ix_saml_requests_expires", ["expires_at"], unique=False)

    op.create_table(
        "user_sessions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("session_hash", sa.String(length=64), nullable=False),
        sa.Column("provider_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["saml_providers.id"],
            name=op.f("fk_user_sessions_provider_id_saml_providers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_sessions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_sessions")),
        sa.UniqueConstraint("session_hash", name=op.f("uq_user_sessions_session_hash")),
    )
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.create_index("ix_user_sessions_expires", ["expires_at"], unique=False)
        batch_op.create_index("ix_user_sessions_user_id", ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_user_sessions_user_id")
        batch_op.drop_index("ix_user_sessions_expires")

    op.drop_table("user_sessions")
    with op.batch_alter_table("saml_requests", schema=None) as batch_op:
        batch_op.drop_index("ix_saml_requests_expires")

    op.drop_table("saml_requests")
    with op.batch_alter_table("saml_assertions", schema=None) as batch_op:
        batch_op.drop_index("ix_saml_assertions_expires")

    op.drop_table("saml_assertions")
    with op.batch_alter_table("saml_providers", schema=None) as batch_op:
        batch_op.drop_index("ix_saml_providers_org_created")

    op.drop_table("saml_providers")
