import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("payload", JSONType, nullable=False),
    # queued -> running -> done | failed (after max_attempts); running with an expired lease
    # is taken again, so a crashed process loses nothing.
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("max_attempts", sa.Integer(), nullable=False, server_default="5"),
    sa.Column("run_at", UTCDateTime(), nullable=False),
    sa.Column("lease_until", UTCDateTime()),
    sa.Column("locked_by", sa.String(64)),
    sa.Column("last_error", sa.Text()),
    # At most one pending job per key: schedules and idempotent enqueues use it.
    sa.Column("dedupe_key", sa.String(200), unique=True),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("finished_at", UTCDateTime()),
    # Whose work it is: the runner shares itself fairly between organizations (job_tenants).
    # Null for the install's own upkeep. No foreign key: a job may outlive its organization
    # (collecting the blobs of a purge) and then finds nothing to do.
    sa.Column("organization_id", sa.String(32)),
    sa.Index("ix_jobs_status_run_at", "status", "run_at"),
)

# When the runner last took a job of each organization ('' for the install's own jobs): the
# next job claimed is the oldest due one of whoever was served least recently, so one
# organization's thousand queued jobs delay another's by one job, not a thousand.
job_tenants = sa.Table(
    "job_tenants",
    metadata,
    sa.Column("tenant", sa.String(32), primary_key=True),
    sa.Column("served_at", UTCDateTime(), nullable=False),
)
