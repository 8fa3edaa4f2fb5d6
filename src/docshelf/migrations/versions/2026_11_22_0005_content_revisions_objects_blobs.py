"""Content engine: revisions, content-addressed objects, blob references.

Every existing space gets an empty revision under the id its `revision_id` already names.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 08:15:27.722192
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "content_objects",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("hash", sa.String(length=32), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_content_objects_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", "hash", name=op.f("pk_content_objects")),
    )
    op.create_table(
        "revisions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column(
            "parents", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False
        ),
        sa.Column("pages_root", sa.String(length=32), nullable=True),
        sa.Column("files_root", sa.String(length=32), nullable=True),
        sa.Column("author_id", sa.String(length=32), nullable=True),
        sa.Column("change_request_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"],
            ["users.id"],
            name=op.f("fk_revisions_author_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_revisions_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_revisions")),
    )
    with op.batch_alter_table("revisions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_revisions_space_created", ["space_id", "created_at"], unique=False
        )

    op.create_table(
        "space_blobs",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("blob_key", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_space_blobs_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", "blob_key", name=op.f("pk_space_blobs")),
    )
    with op.batch_alter_table("space_blobs", schema=None) as batch_op:
        batch_op.create_index("ix_space_blobs_blob_key", ["blob_key"], unique=False)

    op.execute(
        "INSERT INTO revisions (id, space_id, type, parents, created_at) "
        "SELECT revision_id, id, 'edits', '[]', created_at FROM spaces"
    )


def downgrade() -> None:
    with op.batch_alter_table("space_blobs", schema=None) as batch_op:
        batch_op.drop_index("ix_space_blobs_blob_key")

    op.drop_table("space_blobs")
    with op.batch_alter_table("revisions", schema=None) as batch_op:
        batch_op.drop_index("ix_revisions_space_created")

    op.drop_table("revisions")
    op.drop_table("content_objects")
