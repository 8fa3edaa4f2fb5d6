"""GitBook's permission model: a space's visibility no longer caps what members get (`private`
means "not public"; `defaultLevel` alone decides, `inherit` giving members their organization
role). Spaces that were private before keep exactly the member access they had, none through
the organization role, by a default level of null; grants still open them as before.

A site's visibility now decides who reads its spaces: a private space a published site shows
becomes readable by that site's audience. Each such site is named in the upgrade's log, to be
unpublished, or the space taken out of it, where that was not meant.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-28
"""

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("docshelf.migrations")


def upgrade() -> None:
    conn = op.get_bind()
    exposed = conn.execute(
        sa.text(
            "SELECT DISTINCT sites.id AS site, sites.organization_id AS org, spaces.id AS space "
            "FROM site_spaces JOIN sites ON sites.id = site_spaces.site_id "
            "JOIN spaces ON spaces.id = site_spaces.space_id "
            "WHERE spaces.visibility = 'private' AND spaces.deleted_at IS NULL "
            "AND sites.published ORDER BY sites.id, spaces.id"
        )
    ).all()
    for row in exposed:
        log.warning(
            "site %s of organization %s publishes the private space %s: its audience now "
            "reads it (GitBook's model); unpublish the site or take the space out of it if "
            "that is not meant",
            row.site,
            row.org,
            row.space,
        )
    conn.execute(sa.text("UPDATE spaces SET default_level = NULL WHERE visibility = 'private'"))


def downgrade() -> None:
    # Which private spaces had another default level before is not kept: they stay closed.
    pass
