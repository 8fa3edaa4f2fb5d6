import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

# Every review submitted on a change request. A reviewer's newer review, or a new request for
# their review, marks their earlier ones `superseded`; a review whose revision is no longer the
# change request's is outdated too (decided when read, from the change request's row).
change_request_reviews = sa.Table(
    "change_request_reviews",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "change_request_id",
        sa.String(32),
        sa.ForeignKey("change_requests.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("reviewer_id", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("requested_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("status", sa.String(24), nullable=False),
    sa.Column("revision_id", sa.String(32), nullable=False),
    sa.Column("superseded", sa.Boolean(), nullable=False, server_default=sa.false()),
    # The review's comment, as markdown; its id names it inside the review.
    sa.Column("comment_id", sa.String(32)),
    sa.Column("comment_markdown", sa.Text()),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    # Listing order, and the merge rules' read of a change request's reviews.
    sa.Index("ix_change_request_reviews_cr_created", "change_request_id", "created_at", "id"),
)

# Who was asked to review a change request, by whom, at which revision.
change_request_reviewers = sa.Table(
    "change_request_reviewers",
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
    sa.Column("requested_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("revision_id", sa.String(32), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    # The change request list's `requestedReviewer` filter looks up by user.
    sa.Index("ix_change_request_reviewers_user", "user_id", "change_request_id"),
)
