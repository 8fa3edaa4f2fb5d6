import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

# Rendered exports (PDF) kept in the blob store, by what they were rendered from: `source_key`
# is the SHA-256 of the renderer's version and its inputs (the revision's page and file maps,
# the space's title, which pages), so a repeated request for unchanged content reuses the file.
# The blob collector keeps a blob while this table names it; a space keeps its newest few.
pdf_exports = sa.Table(
    "pdf_exports",
    metadata,
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("source_key", sa.String(64), primary_key=True),
    sa.Column("blob_key", sa.String(64), nullable=False),
    sa.Column("size", sa.BigInteger(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_pdf_exports_blob_key", "blob_key"),
    sa.Index("ix_pdf_exports_space_created", "space_id", "created_at"),
)
