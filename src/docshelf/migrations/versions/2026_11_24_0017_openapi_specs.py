"""OpenAPI specs: the spec rows, their immutable versions and content-addressed contents.

Revision ID: 0017
Revises: 0014
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "openapi_specs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("slug", sa.String(length=100), nullable=False),
        sa.Column("source_url", sa.String(length=2048), nullable=True),
        sa.Column("source_text", sa.Text(), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("processing_state", sa.String(length=16), nullable=False),
        sa.Column("last_version_id", sa.String(length=32), nullable=True),
        sa.Column("last_processed_at", sa.DateTime(), nullable=True),
        sa.Column("last_process_error_code", sa.String(length=16), nullable=True),
        sa.Column(
            "last_process_errors",
            sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_openapi_specs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_openapi_specs")),
        sa.UniqueConstraint(
            "organization_id", "slug", name=op.f("uq_openapi_specs_organization_id_slug")
        ),
    )
    with op.batch_alter_table("openapi_specs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_openapi_specs_org_created", ["organization_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_openapi_specs_state_processed",
            ["processing_state", "last_processed_at"],
            unique=False,
        )

    op.create_table(
        "openapi_spec_contents",
        sa.Column("spec_id", sa.String(length=32), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["spec_id"],
            ["openapi_specs.id"],
            name=op.f("fk_openapi_spec_contents_spec_id_openapi_specs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("spec_id", "digest", name=op.f("pk_openapi_spec_contents")),
    )
    op.create_table(
        "openapi_spec_versions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("spec_id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("source_url", sa.String(length=2048), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["spec_id"],
            ["openapi_specs.id"],
            name=op.f("fk_openapi_spec_versions_spec_id_openapi_specs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_openapi_spec_versions")),
        sa.UniqueConstraint(
            "spec_id", "number", name=op.f("uq_openapi_spec_versions_spec_id_number")
        ),
    )


def downgrade() -> None:
    op.drop_table("openapi_spec_versions")
    op.drop_table("openapi_spec_contents")
    with op.batch_alter_table("openapi_specs", schema=None) as batch_op:
        batch_op.drop_index("ix_openapi_specs_state_processed")
        batch_op.drop_index("ix_openapi_specs_org_created")

    op.drop_table("openapi_specs")
