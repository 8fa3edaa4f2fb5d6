import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

# The outbox: one row per domain event, written in the transaction of the change it records,
# so it exists exactly when the change does. The audit log reads it; webhooks fan out from it.
events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # No foreign keys to the space or the user: the record outlives a purged space or a
    # deleted account (the audit log must still say who did what).
    sa.Column("space_id", sa.String(32)),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("actor_id", sa.String(32)),
    # The actor's display name when the event was recorded.
    sa.Column("actor_label", sa.String(256)),
    # The event's own fields (GitBook's payload shape where GitBook has the event).
    sa.Column("data", JSONType, nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    # Handed to the subscribers (webhook fan-out) yet?
    sa.Column("dispatched", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Index("ix_events_org_created", "organization_id", "created_at", "id"),
    sa.Index("ix_events_dispatched_created", "dispatched", "created_at", "id"),
    sa.Index("ix_events_created", "created_at"),
)

webhooks = sa.Table(
    "webhooks",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # Only this space's events; null: the whole organization's.
    sa.Column("space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE")),
    sa.Column("url", sa.String(2048), nullable=False),
    # Event names to send; an empty list: every event.
    sa.Column("events", JSONType, nullable=False),
    sa.Column("active", sa.Boolean(), nullable=False),
    sa.Column("secret", sa.String(128), nullable=False),
    # Events in a row whose every attempt failed; reaching the limit disables the hook.
    sa.Column("failures", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("disabled_at", UTCDateTime()),
    sa.Column("created_by", sa.String(32)),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Index("ix_webhooks_org_created", "organization_id", "created_at", "id"),
)

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "webhook_id",
        sa.String(32),
        sa.ForeignKey("webhooks.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column(
        "event_id", sa.String(32), sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False
    ),
    # pending (attempts left) -> delivered | failed
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    # The last attempt's answer: HTTP status (null: no answer), time taken, why it failed.
    sa.Column("status_code", sa.Integer()),
    sa.Column("duration_ms", sa.Integer()),
    sa.Column("error", sa.String(500)),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("last_attempt_at", UTCDateTime()),
    sa.Column("next_attempt_at", UTCDateTime()),
    sa.Column("delivered_at", UTCDateTime()),
    sa.UniqueConstraint("webhook_id", "event_id"),
    sa.Index("ix_webhook_deliveries_hook_created", "webhook_id", "created_at", "id"),
)
