import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

spaces = sa.Table(
    "spaces",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # SET NULL: a space whose collection is gone is restored into the organization root.
    sa.Column("parent_id", sa.String(32), sa.ForeignKey("collections.id", ondelete="SET NULL")),
    sa.Column("title", sa.String(50), nullable=False),
    sa.Column("emoji", sa.String(50)),
    sa.Column("icon", sa.String(2048)),
    sa.Column("visibility", sa.String(16), nullable=False),
    sa.Column("edit_mode", sa.String(16)),
    sa.Column("default_level", sa.String(16)),
    sa.Column("language", sa.String(8)),
    # Secret for share-link visibility.
    sa.Column("share_key", sa.String(64)),
    # Head of the main line of content; the content engine owns what it points to.
    sa.Column("revision_id", sa.String(32), nullable=False),
    sa.Column("position", sa.Integer(), nullable=False, server_default="0"),
    # Last change request number handed out in this space.
    sa.Column("change_request_seq", sa.Integer(), nullable=False, server_default="0"),
    # Kept by change_request.repository in the same transaction as the change, so reading a
    # space never counts its change requests.
    sa.Column("change_requests_total", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("change_requests_open", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("change_requests_draft", sa.Integer(), nullable=False, server_default="0"),
    # Open comments on main (comment/repository.py keeps it in the comment's transaction).
    sa.Column("comments_open", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Column("deleted_at", UTCDateTime()),
    # GitBook's MergeRulesSpaceConfiguration as sent; null is `{"type": "inherit"}`.
    sa.Column("merge_rules", JSONType),
    sa.Index("ix_spaces_org_parent", "organization_id", "parent_id", "position"),
    sa.Index("ix_spaces_org_created", "organization_id", "created_at", "id"),
    sa.Index("ix_spaces_deleted_at", "deleted_at"),
    sa.Index("ix_spaces_parent", "parent_id"),
)
