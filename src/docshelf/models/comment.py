import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

# Discussions on a space's main content (change_request_id NULL) or inside one change request.
comments = sa.Table(
    "comments",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "change_request_id",
        sa.String(32),
        sa.ForeignKey("change_requests.id", ondelete="CASCADE"),
    ),
    sa.Column("posted_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("posted_at", UTCDateTime(), nullable=False),
    sa.Column("edited_at", UTCDateTime()),
    sa.Column("markdown", sa.Text(), nullable=False),
    # open, resolved
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("resolved_at", UTCDateTime()),
    sa.Column("resolved_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    # Where the comment was posted: the thread's head then, the page and node it points at, and
    # the page's text object then, so a later change of the page reads as `outdated`.
    sa.Column("target_revision", sa.String(32), nullable=False),
    sa.Column("target_page", sa.String(100)),
    sa.Column("target_page_text", sa.String(64)),
    sa.Column("target_node", sa.String(100)),
    sa.Index("ix_comments_thread", "space_id", "change_request_id", "posted_at", "id"),
    sa.Index("ix_comments_target_page", "space_id", "target_page"),
)

comment_replies = sa.Table(
    "comment_replies",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "comment_id",
        sa.String(32),
        sa.ForeignKey("comments.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("posted_by", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Column("posted_at", UTCDateTime(), nullable=False),
    sa.Column("edited_at", UTCDateTime()),
    sa.Column("markdown", sa.Text(), nullable=False),
    sa.Index("ix_comment_replies_comment", "comment_id", "posted_at", "id"),
)

# One row per (comment or reply, emoji, user): the primary key makes a repeated reaction a no-op.
# `comment_id` is the thread's comment, so deleting a comment takes its replies' reactions too.
comment_reactions = sa.Table(
    "comment_reactions",
    metadata,
    sa.Column("subject_id", sa.String(32), primary_key=True),
    sa.Column("emoji", sa.String(64), primary_key=True),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "comment_id",
        sa.String(32),
        sa.ForeignKey("comments.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("reacted_at", UTCDateTime(), nullable=False),
    sa.Index("ix_comment_reactions_comment", "comment_id"),
)
