import sqlalchemy as sa

from docshelf.kit.db import JSONType, UTCDateTime, metadata

# Immutable snapshots of a space's content. Pages and files live in content_objects, reached from
# `pages_root` / `files_root` / `reusable_root` (content/tree/hamt.py maps keyed by page, file or
# reusable content id).
revisions = sa.Table(
    "revisions",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False
    ),
    # edits, merge, update, rollback
    sa.Column("type", sa.String(16), nullable=False),
    # First parent is the line the revision continues (main, or the change request's head).
    sa.Column("parents", JSONType, nullable=False),
    sa.Column("pages_root", sa.String(32)),
    sa.Column("files_root", sa.String(32)),
    sa.Column("reusable_root", sa.String(32)),
    sa.Column("author_id", sa.String(32), sa.ForeignKey("users.id", ondelete="SET NULL")),
    # The change request a merge revision came from, or that an edit revision belongs to.
    sa.Column("change_request_id", sa.String(32)),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_revisions_space_created", "space_id", "created_at"),
    # A change request's contributors (review/repository.contributors_of) group its edits.
    sa.Index("ix_revisions_change_request", "change_request_id", "author_id"),
)

# Content-addressed objects (page records, markdown texts, map nodes), per space so that purging
# a space is one DELETE and duplicating one INSERT … SELECT.
content_objects = sa.Table(
    "content_objects",
    metadata,
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("hash", sa.String(32), primary_key=True),
    sa.Column("data", sa.LargeBinary(), nullable=False),
)

# The pieces of a large space's page listing (content/listing/pieces.py), as of one revision of its
# main: a process that has none in memory lists any revision from these and the pages the maps'
# diff names, instead of reading and encoding every page. Derived data, rewritten by a job as
# main moves on (content.snapshot_listing); any row is a valid starting point.
listing_snapshots = sa.Table(
    "listing_snapshots",
    metadata,
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("pages_root", sa.String(32), nullable=False),
    # listing.FORMAT when written: pieces of another are not read, nor their bytes fetched.
    sa.Column("format", sa.String(16), nullable=False),
    sa.Column("data", sa.LargeBinary(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
)

# Which spaces reference which blob (file bytes in the blob store, keyed by sha256): a blob is
# deleted from storage only once no space references it.
space_blobs = sa.Table(
    "space_blobs",
    metadata,
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("blob_key", sa.String(64), primary_key=True),
    sa.Index("ix_space_blobs_blob_key", "blob_key"),
)

# Archives of large imports, stored as blobs until their `content.import` job ends. Kept apart
# from space_blobs so that dropping a stage never drops a file reference to the same bytes; the
# blob collector keeps a blob while either table names it.
import_stages = sa.Table(
    "import_stages",
    metadata,
    sa.Column("revision_id", sa.String(32), primary_key=True),  # the revision the job creates
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("blob_key", sa.String(64), nullable=False),
    sa.Index("ix_import_stages_space_id", "space_id"),
    sa.Index("ix_import_stages_blob_key", "blob_key"),
)

# Links found in the markdown of main's pages, kept current as main moves (content/indexing.py),
# one row per link. Rows are stored grouped the way the listing shows them: a link to an anchor
# of its own page is stored as a link to that page. `status` (ok or broken) is whether the
# target exists in main's head, kept current by the indexing when pages or files appear or
# disappear, so a status filter is an indexed range; a URL's in-app status depends on the
# install's base URL and is decided when read.
page_links = sa.Table(
    "page_links",
    metadata,
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("page_id", sa.String(32), primary_key=True),
    sa.Column("position", sa.Integer(), primary_key=True),
    # page, file, anchor, url, or unresolved (a relative link that named no page)
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("target", sa.String(2048), nullable=False),
    sa.Column("anchor", sa.String(512)),
    # The listing's order and identity: the first characters of "kind:target#anchor" (kept
    # short enough for a PostgreSQL btree entry) and the SHA-256 of the whole string.
    sa.Column(
        "sort_key",
        # Code-point order on both engines (SQLite's BINARY; "C" on PostgreSQL).
        sa.String(400).with_variant(sa.String(400, collation="C"), "postgresql"),
        nullable=False,
        server_default="",
    ),
    sa.Column("group_hash", sa.String(32), nullable=False, server_default=""),
    sa.Column("status", sa.String(8), nullable=False, server_default="ok"),
    sa.Index("ix_page_links_target", "space_id", "kind", "target"),
    sa.Index("ix_page_links_order", "space_id", "sort_key", "group_hash"),
    sa.Index("ix_page_links_status", "space_id", "status", "sort_key", "group_hash"),
    sa.Index("ix_page_links_group", "space_id", "group_hash"),
)

# Per space: how many distinct link targets (listing groups) main's pages hold and how many of
# them are broken, kept with page_links so the listing's stats read one row.
page_link_stats = sa.Table(
    "page_link_stats",
    metadata,
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("total", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("broken", sa.Integer(), nullable=False, server_default="0"),
)
