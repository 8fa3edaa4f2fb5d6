import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

change_requests = sa.Table(
    "change_requests",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False
    ),
    # Per space, from spaces.change_request_seq; the unique constraint is the last line of defence.
    sa.Column("number", sa.Integer(), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("subject", sa.String(100), nullable=False),
    sa.Column("created_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Column("revision_id", sa.String(32), nullable=False),
    sa.Column("revision_initial", sa.String(32), nullable=False),
    sa.Column("revision_merged_ancestor", sa.String(32)),
    sa.Column("revision_merged", sa.String(32)),
    # Open comments in the change request, kept like spaces.comments_open.
    sa.Column("comments_open", sa.Integer(), nullable=False, server_default="0"),
    # GitBook 0.202's newer fields: the description as markdown (served as a JSON document),
    # external links [{id, ref: {kind: url, url}, title?}], and the merge's author and time.
    sa.Column("description", sa.Text()),
    sa.Column("links", JSONType),
    sa.Column("merged_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("merged_at", UTCDateTime()),
    sa.UniqueConstraint("space_id", "number"),
    sa.Index("ix_change_requests_space_status_updated", "space_id", "status", "updated_at", "id"),
)

# Who contributed to a change request: its creator now, every author of its edits later.
change_request_contributors = sa.Table(
    "change_request_contributors",
    metadata,
    sa.Column(
        "change_request_id",
        sa.String(32),
        sa.ForeignKey("change_requests.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    ),
    # The `contributor` filter looks up by user.
    sa.Index("ix_change_request_contributors_user", "user_id", "change_request_id"),
)
