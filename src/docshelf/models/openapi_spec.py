import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

openapi_specs = sa.Table(
    "openapi_specs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("slug", sa.String(100), nullable=False),
    # Exactly one of the two: a URL fetched by the processing job, or the text given.
    sa.Column("source_url", sa.String(2048)),
    sa.Column("source_text", sa.Text()),
    # Bumped by every change of source: a job processing an older source discards its result.
    sa.Column("generation", sa.Integer(), nullable=False),
    # pending -> progress -> complete
    sa.Column("processing_state", sa.String(16), nullable=False),
    sa.Column("last_version_id", sa.String(32)),
    sa.Column("last_processed_at", UTCDateTime()),
    # FETCH_TIMEOUT, FETCH_ERROR, PARSE_ERROR; null after a success.
    sa.Column("last_process_error_code", sa.String(16)),
    # [{message, code?}] of the last processing, empty after a success.
    sa.Column("last_process_errors", JSONType, nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.UniqueConstraint("organization_id", "slug"),
    sa.Index("ix_openapi_specs_org_created", "organization_id", "created_at", "id"),
    # The refresh sweep: URL sources whose last processing is older than the interval.
    sa.Index("ix_openapi_specs_state_processed", "processing_state", "last_processed_at"),
)

# Parsed contents, addressed by the SHA-256 of their canonical JSON, per spec: versions of equal
# content share one row, and deleting a spec is one cascade.
openapi_spec_contents = sa.Table(
    "openapi_spec_contents",
    metadata,
    sa.Column(
        "spec_id",
        sa.String(32),
        sa.ForeignKey("openapi_specs.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("data", sa.LargeBinary(), nullable=False),
)

# Immutable: a row is written when processing finds content unlike the latest version's.
openapi_spec_versions = sa.Table(
    "openapi_spec_versions",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "spec_id",
        sa.String(32),
        sa.ForeignKey("openapi_specs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # 1, 2, 3... per spec: the order of versions, the newest being the latest.
    sa.Column("number", sa.Integer(), nullable=False),
    sa.Column("digest", sa.String(64), nullable=False),
    # Where the specification came from: its source URL, or none for a text source.
    sa.Column("source_url", sa.String(2048)),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.UniqueConstraint("spec_id", "number"),
)
