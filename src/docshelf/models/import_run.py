import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

# An import applied by a job (more than LARGE_IMPORT resources): GitBook's ContentImportRun, so
# the answer to the import can say "queued" and the outcome stays observable.
import_runs = sa.Table(
    "import_runs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # pending -> in-progress -> completed | failed
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text()),
    # The request's `source` (zip, markdown, html, docx) and URL.
    sa.Column("source", sa.String(16), nullable=False),
    sa.Column("source_url", sa.String(2048), nullable=False),
    # The revision of main the import creates once applied.
    sa.Column("revision_id", sa.String(32), nullable=False),
    sa.Column("total_resources", sa.Integer(), nullable=False),
    sa.Column("detected", sa.String(16), nullable=False),
    # {importedResources, skipped, skippedCounts} once completed.
    sa.Column("report", JSONType),
    sa.Column("created_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Column("started_at", UTCDateTime()),
    sa.Column("completed_at", UTCDateTime()),
    sa.Index("ix_import_runs_org_created", "organization_id", "created_at", "id"),
    sa.Index("ix_import_runs_space", "space_id"),
)
