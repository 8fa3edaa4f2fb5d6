import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import TSVECTOR

from docshelf.kit.db import metadata

# The text search configuration of the PostgreSQL index. `simple` (lower-casing, no stemming, no
# stop words) because a space may be written in any language, and because it then matches what
# SQLite's FTS5 unicode61 tokenizer does, so both engines find the same pages.
SEARCH_CONFIG = "simple"

# Written as PostgreSQL prints it back (pg_get_expr), so that autogenerate sees no difference.
SEARCH_DOCUMENT = (
    "(setweight(to_tsvector('simple'::regconfig, page_title), 'A'::\"char\") || "
    "setweight(to_tsvector('simple'::regconfig, COALESCE(section_title, ''::text)), "
    "'B'::\"char\")) || setweight(to_tsvector('simple'::regconfig, body), 'C'::\"char\")"
)

SEARCH_TITLE = "to_tsvector('simple'::regconfig, page_title)"

# The search index: one row per section of each page of main (content/indexing.py keeps it in
# step), the page title repeated on every row so that a query may match across title and body.
#
# On PostgreSQL this is the table below. On SQLite the migration creates an FTS5 virtual table
# of the same name and columns instead: no keys, no foreign key (search.engine.drop_space must be
# called when a space is purged), and `document` always NULL (it exists so that both engines
# have the columns this table names; so is `title_vector`, since migration 0025).
search_sections = sa.Table(
    "search_sections",
    metadata,
    sa.Column(
        "space_id",
        sa.String(32),
        sa.ForeignKey("spaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("page_id", sa.String(32), primary_key=True),
    sa.Column("position", sa.Integer(), primary_key=True),
    # Text, not a bounded string: an anchor is the slug of a heading of any length.
    sa.Column("anchor", sa.Text()),
    sa.Column("page_title", sa.Text(), nullable=False),
    sa.Column("section_title", sa.Text()),
    sa.Column("body", sa.Text(), nullable=False),
    sa.Column(
        "document",
        sa.Text().with_variant(TSVECTOR(), "postgresql"),
        sa.Computed(SEARCH_DOCUMENT, persisted=True),
    ),
    # The page title's own tsvector, stored (PostgreSQL only; migration 0025): a broad query's
    # title tier reads rows in primary-key order until enough hold every word, and computing
    # the vector for each row read cost ten times the reading (search.engine).
    sa.Column(
        "title_vector",
        sa.Text().with_variant(TSVECTOR(), "postgresql"),
        sa.Computed(SEARCH_TITLE, persisted=True),
    ),
    sa.Index("ix_search_sections_document", "document", postgresql_using="gin"),
    # A title word rare in the scope is found through the GIN index; a common one by reading
    # the scope in primary-key order until enough rows hold it, from this btree alone (an
    # index-only scan: 1.1 ms for 4,200 rows where visiting the rows took 3.6).
    sa.Index("ix_search_sections_title_vector", "title_vector", postgresql_using="gin"),
    sa.Index(
        "ix_search_sections_titles",
        "space_id",
        "page_id",
        "position",
        postgresql_include=["title_vector", "page_title", "section_title"],
    ),
)
