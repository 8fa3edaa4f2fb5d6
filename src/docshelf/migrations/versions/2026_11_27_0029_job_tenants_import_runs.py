"""Jobs carry the organization they work for, and `job_tenants` when the runner last served
each, so the runner shares itself fairly between organizations; `import_runs` records the
imports applied by a job (GitBook's ContentImportRun), whose answer is then 202 and a run.

Jobs queued before this revision have no organization: they share the install's turn.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("organization_id", sa.String(32), nullable=True))
    op.create_table(
        "job_tenants",
        sa.Column("tenant", sa.String(length=32), nullable=False),
        sa.Column("served_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", name=op.f("pk_job_tenants")),
    )
    op.create_table(
        "import_runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("source_url", sa.String(length=2048), nullable=False),
        sa.Column("revision_id", sa.String(length=32), nullable=False),
        sa.Column("total_resources", sa.Integer(), nullable=False),
        sa.Column("detected", sa.String(length=16), nullable=False),
        sa.Column(
            "report",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_by", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("completed_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_import_runs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_import_runs_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_import_runs_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_import_runs")),
    )
    op.create_index(
        "ix_import_runs_org_created", "import_runs", ["organization_id", "created_at", "id"]
    )
    op.create_index("ix_import_runs_space", "import_runs", ["space_id"])


def downgrade() -> None:
    op.drop_index("ix_import_runs_space", table_name="import_runs")
    op.drop_index("ix_import_runs_org_created", table_name="import_runs")
    op.drop_table("import_runs")
    op.drop_table("job_tenants")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("organization_id")
