"""Collections, spaces, content grants, custom fields, translations; space and collection invites.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 02:41:52.222563
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "collections",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("parent_id", sa.String(length=32), nullable=True),
        sa.Column("title", sa.String(length=50), nullable=False),
        sa.Column("description", sa.String(length=100), nullable=True),
        sa.Column("default_level", sa.String(length=16), nullable=True),
        sa.Column("position", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_collections_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["collections.id"],
            name=op.f("fk_collections_parent_id_collections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_collections")),
    )
    with op.batch_alter_table("collections", schema=None) as batch_op:
        batch_op.create_index(
            "ix_collections_org_parent", ["organization_id", "parent_id", "position"], unique=False
        )

    op.create_table(
        "content_grants",
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("target_type", sa.String(length=16), nullable=False),
        sa.Column("target_id", sa.String(length=32), nullable=False),
        sa.Column("principal_type", sa.String(length=8), nullable=False),
        sa.Column("principal_id", sa.String(length=32), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_content_grants_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "target_type",
            "target_id",
            "principal_type",
            "principal_id",
            name=op.f("pk_content_grants"),
        ),
    )
    with op.batch_alter_table("content_grants", schema=None) as batch_op:
        batch_op.create_index(
            "ix_content_grants_principal", ["principal_type", "principal_id"], unique=False
        )

    op.create_table(
        "custom_fields",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=50), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=100), nullable=True),
        sa.Column("description", sa.String(length=200), nullable=True),
        sa.Column("placeholder", sa.String(length=100), nullable=True),
        sa.Column(
            "options",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_custom_fields_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_custom_fields")),
        sa.UniqueConstraint(
            "organization_id", "name", name=op.f("uq_custom_fields_organization_id_name")
        ),
    )
    op.create_table(
        "translation_settings",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=100), nullable=False),
        sa.Column(
            "languages",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_translation_settings_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_translation_settings")),
    )
    with op.batch_alter_table("translation_settings", schema=None) as batch_op:
        batch_op.create_index(
            "ix_translation_settings_org_created",
            ["organization_id", "created_at", "id"],
            unique=False,
        )

    op.create_table(
        "spaces",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("parent_id", sa.String(length=32), nullable=True),
        sa.Column("title", sa.String(length=50), nullable=False),
        sa.Column("emoji", sa.String(length=50), nullable=True),
        sa.Column("icon", sa.String(length=2048), nullable=True),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("edit_mode", sa.String(length=16), nullable=True),
        sa.Column("default_level", sa.String(length=16), nullable=True),
        sa.Column("language", sa.String(length=8), nullable=True),
        sa.Column("share_key", sa.String(length=64), nullable=True),
        sa.Column("revision_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_spaces_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["collections.id"],
            name=op.f("fk_spaces_parent_id_collections"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spaces")),
    )
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.create_index("ix_spaces_deleted_at", ["deleted_at"], unique=False)
        batch_op.create_index(
            "ix_spaces_org_created", ["organization_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_spaces_org_parent", ["organization_id", "parent_id", "position"], unique=False
        )

    op.create_table(
        "custom_field_values",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("field_id", sa.String(length=32), nullable=False),
        sa.Column(
            "value",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["field_id"],
            ["custom_fields.id"],
            name=op.f("fk_custom_field_values_field_id_custom_fields"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_custom_field_values_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", "field_id", name=op.f("pk_custom_field_values")),
    )
    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.add_column(sa.Column("space_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("collection_id", sa.String(length=32), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_invites_space_id_spaces"),
            "spaces",
            ["space_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_invites_collection_id_collections"),
            "collections",
            ["collection_id"],
            ["id"],
            ondelete="CASCADE",
        )


def downgrade() -> None:

    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_invites_collection_id_collections"), type_="foreignkey"
        )
        batch_op.drop_constraint(batch_op.f("fk_invites_space_id_spaces"), type_="foreignkey")
        batch_op.drop_column("collection_id")
        batch_op.drop_column("space_id")

    op.drop_table("custom_field_values")
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.drop_index("ix_spaces_org_parent")
        batch_op.drop_index("ix_spaces_org_created")
        batch_op.drop_index("ix_spaces_deleted_at")

    op.drop_table("spaces")
    with op.batch_alter_table("translation_settings", schema=None) as batch_op:
        batch_op.drop_index("ix_translation_settings_org_created")

    op.drop_table("translation_settings")
    op.drop_table("custom_fields")
    with op.batch_alter_table("content_grants", schema=None) as batch_op:
        batch_op.drop_index("ix_content_grants_principal")

    op.drop_table("content_grants")
    with op.batch_alter_table("collections", schema=None) as batch_op:
        batch_op.drop_index("ix_collections_org_parent")

    op.drop_table("collections")
