"""Listings that cost one page: links stored grouped with their judged status and per-space
counts, organizations' e-mail domains as an indexed table, and the indexes the issued queries
use (grants by organization, custom-field values by field, spaces and collections by parent,
invites by space and by collection).

Links already indexed are grouped here; their status is taken as ok (unresolved: broken) until
their page, or the page or file they point to, next changes on main.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

import hashlib
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_links = sa.table(
    "page_links",
    sa.column("space_id", sa.String),
    sa.column("page_id", sa.String),
    sa.column("position", sa.Integer),
    sa.column("kind", sa.String),
    sa.column("target", sa.String),
    sa.column("anchor", sa.String),
    sa.column("sort_key", sa.String),
    sa.column("group_hash", sa.String),
    sa.column("status", sa.String),
)


def _group_links() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.select(_links)).mappings().all()
    groups: dict[str, dict[str, str]] = {}
    for row in rows:
        kind, target, anchor = row["kind"], row["target"], row["anchor"]
        if kind == "anchor":
            kind, target, anchor = "page", row["page_id"], row["target"][:512]
        key = f"{kind}:{target}#{anchor or ''}"
        status = "broken" if kind == "unresolved" else "ok"
        group_hash = hashlib.sha256(key.encode()).hexdigest()[:32]
        groups.setdefault(row["space_id"], {})[group_hash] = status
        conn.execute(
            sa.update(_links)
            .where(
                _links.c.space_id == row["space_id"],
                _links.c.page_id == row["page_id"],
                _links.c.position == row["position"],
            )
            .values(
                kind=kind,
                target=target,
                anchor=anchor,
                sort_key=key[:400],
                group_hash=group_hash,
                status=status,
            )
        )
    stats = sa.table(
        "page_link_stats",
        sa.column("space_id", sa.String),
        sa.column("total", sa.Integer),
        sa.column("broken", sa.Integer),
    )
    for space_id, found in groups.items():
        conn.execute(
            sa.insert(stats).values(
                space_id=space_id,
                total=len(found),
                broken=sum(1 for s in found.values() if s == "broken"),
            )
        )


def _copy_domains() -> None:
    conn = op.get_bind()
    orgs = sa.table("organizations", sa.column("id", sa.String), sa.column("email_domains"))
    domains = sa.table(
        "organization_email_domains",
        sa.column("domain", sa.String),
        sa.column("organization_id", sa.String),
    )
    for org_id, raw in conn.execute(sa.select(orgs.c.id, orgs.c.email_domains)):
        values = json.loads(raw) if isinstance(raw, str) else raw or []
        for domain in sorted(set(values)):
            conn.execute(sa.insert(domains).values(domain=domain, organization_id=org_id))


def upgrade() -> None:
    op.create_table(
        "page_link_stats",
        sa.Column("space_id", sa.String(length=32), nullable=False),
        sa.Column("total", sa.Integer(), server_default="0", nullable=False),
        sa.Column("broken", sa.Integer(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["spaces.id"],
            name=op.f("fk_page_link_stats_space_id_spaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", name=op.f("pk_page_link_stats")),
    )
    with op.batch_alter_table("page_links", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "sort_key",
                sa.String(length=400).with_variant(
                    sa.String(length=400, collation="C"), "postgresql"
                ),
                server_default="",
                nullable=False,
            )
        )
        batch_op.add_column(
            sa.Column("group_hash", sa.String(length=32), server_default="", nullable=False)
        )
        batch_op.add_column(
            sa.Column("status", sa.String(length=8), server_default="ok", nullable=False)
        )
    _group_links()
    with op.batch_alter_table("page_links", schema=None) as batch_op:
        batch_op.create_index("ix_page_links_order", ["space_id", "sort_key", "group_hash"])
        batch_op.create_index(
            "ix_page_links_status", ["space_id", "status", "sort_key", "group_hash"]
        )
        batch_op.create_index("ix_page_links_group", ["space_id", "group_hash"])

    op.create_table(
        "organization_email_domains",
        sa.Column("domain", sa.String(length=255), nullable=False),
        sa.Column("organization_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_organization_email_domains_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "domain", "organization_id", name=op.f("pk_organization_email_domains")
        ),
    )
    with op.batch_alter_table("organization_email_domains", schema=None) as batch_op:
        batch_op.create_index("ix_organization_email_domains_org", ["organization_id"])
    _copy_domains()

    with op.batch_alter_table("content_grants", schema=None) as batch_op:
        batch_op.create_index(
            "ix_content_grants_org_principal",
            ["organization_id", "principal_type", "principal_id"],
        )
    with op.batch_alter_table("custom_field_values", schema=None) as batch_op:
        batch_op.create_index("ix_custom_field_values_field", ["field_id"])
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.create_index("ix_spaces_parent", ["parent_id"])
    with op.batch_alter_table("collections", schema=None) as batch_op:
        batch_op.create_index("ix_collections_parent", ["parent_id"])
    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.create_index("ix_invites_space", ["space_id"])
        batch_op.create_index("ix_invites_collection", ["collection_id"])


def downgrade() -> None:
    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.drop_index("ix_invites_collection")
        batch_op.drop_index("ix_invites_space")
    with op.batch_alter_table("collections", schema=None) as batch_op:
        batch_op.drop_index("ix_collections_parent")
    with op.batch_alter_table("spaces", schema=None) as batch_op:
        batch_op.drop_index("ix_spaces_parent")
    with op.batch_alter_table("custom_field_values", schema=None) as batch_op:
        batch_op.drop_index("ix_custom_field_values_field")
    with op.batch_alter_table("content_grants", schema=None) as batch_op:
        batch_op.drop_index("ix_content_grants_org_principal")
    with op.batch_alter_table("organization_email_domains", schema=None) as batch_op:
        batch_op.drop_index("ix_organization_email_domains_org")
    op.drop_table("organization_email_domains")
    with op.batch_alter_table("page_links", schema=None) as batch_op:
        batch_op.drop_index("ix_page_links_group")
        batch_op.drop_index("ix_page_links_status")
        batch_op.drop_index("ix_page_links_order")
        batch_op.drop_column("status")
        batch_op.drop_column("group_hash")
        batch_op.drop_column("sort_key")
    op.drop_table("page_link_stats")
