"""Docs sites and their structure: sections (optionally grouped), site spaces (a space shown on
the site, at the root or in a section) and share links.

Invariants the indexes back up (the services keep them, serialised on the site row):
one default section per site, one default site space per section (or per site root), and
paths unique among siblings. `section_key` is the section id, or '' for the root, so that
root site spaces are siblings under a plain unique index on both engines."""

import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

sites = sa.Table(
    "sites",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("type", sa.String(20), nullable=False),
    sa.Column("title", sa.String(128), nullable=False),
    sa.Column("visibility", sa.String(20), nullable=False),
    sa.Column("published", sa.Boolean(), nullable=False),
    sa.Column("basename", sa.String(100)),
    sa.Column("proxy", sa.String(512)),
    sa.Column("adaptive_content", sa.Boolean(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    # Visitor authentication: the HS256 key visitor tokens are signed with (set on creation,
    # replaced by `regenerate`), where failed visitors go, and the adaptive schema (JSON text).
    sa.Column("visitor_key", sa.String(64)),
    sa.Column("visitor_key_at", UTCDateTime()),
    sa.Column("fallback_url", sa.String(2048)),
    sa.Column("adaptive_schema", sa.Text()),
    sa.Column("adaptive_schema_at", UTCDateTime()),
    # A custom hostname the reader serves the site at (by the Host header), unique install-wide.
    sa.Column("hostname", sa.String(512)),
    # Bumped by every write to the site's sections, groups and site spaces (repository.py), in
    # the same transaction: readers keep the structure between requests under this number.
    sa.Column("structure_version", sa.BigInteger(), nullable=False, server_default="0"),
    sa.UniqueConstraint("organization_id", "basename", name="uq_sites_org_basename"),
    sa.UniqueConstraint("hostname", name="uq_sites_hostname"),
    sa.Index("ix_sites_org_created", "organization_id", "created_at", "id"),
)

site_section_groups = sa.Table(
    "site_section_groups",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "site_id", sa.String(32), sa.ForeignKey("sites.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("title", sa.String(100), nullable=False),
    sa.Column("icon", sa.String(50)),
    sa.Column("position", sa.BigInteger(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_site_section_groups_site", "site_id", "position", "id"),
)

site_sections = sa.Table(
    "site_sections",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "site_id", sa.String(32), sa.ForeignKey("sites.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "group_id",
        sa.String(32),
        sa.ForeignKey("site_section_groups.id", ondelete="SET NULL"),
    ),
    sa.Column("title", sa.String(128), nullable=False),
    sa.Column("path", sa.String(100), nullable=False),
    sa.Column("description", sa.String(256)),
    sa.Column("icon", sa.String(50)),
    sa.Column("condition", sa.String(1024)),
    sa.Column("is_default", sa.Boolean(), nullable=False),
    sa.Column("position", sa.BigInteger(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.UniqueConstraint("site_id", "path", name="uq_site_sections_path"),
    sa.Index("ix_site_sections_site", "site_id", "position", "id"),
    sa.Index(
        "uq_site_sections_default",
        "site_id",
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    ),
)

site_spaces = sa.Table(
    "site_spaces",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "site_id", sa.String(32), sa.ForeignKey("sites.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("section_id", sa.String(32), sa.ForeignKey("site_sections.id", ondelete="CASCADE")),
    sa.Column("section_key", sa.String(32), nullable=False),
    sa.Column(
        "space_id", sa.String(32), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("path", sa.String(100), nullable=False),
    sa.Column("condition", sa.String(1024)),
    sa.Column("is_default", sa.Boolean(), nullable=False),
    # Left out of the site's navigation (GitBook 0.202), still served at its address.
    sa.Column("hidden", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("position", sa.BigInteger(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.UniqueConstraint("site_id", "section_key", "path", name="uq_site_spaces_path"),
    sa.Index("ix_site_spaces_site", "site_id", "section_key", "position", "id"),
    sa.Index("ix_site_spaces_space", "space_id"),
    sa.Index(
        "uq_site_spaces_default",
        "site_id",
        "section_key",
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    ),
)

site_share_links = sa.Table(
    "site_share_links",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "site_id", sa.String(32), sa.ForeignKey("sites.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("name", sa.String(50), nullable=False),
    sa.Column("secret", sa.String(64), nullable=False, unique=True),
    sa.Column("active", sa.Boolean(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_site_share_links_site", "site_id", "created_at", "id"),
)
