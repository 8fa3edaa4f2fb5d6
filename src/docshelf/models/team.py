import sqlalchemy as sa

from docshelf.kit.db import UTCDateTime, metadata

teams = sa.Table(
    "teams",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("title", sa.String(64), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_teams_org_created", "organization_id", "created_at", "id"),
)

team_members = sa.Table(
    "team_members",
    metadata,
    sa.Column(
        "team_id", sa.String(32), sa.ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    ),
    # Denormalised so that removing a member from the organization drops their teams in one
    # statement, and membership counts per organization need no join.
    sa.Column(
        "organization_id",
        sa.String(32),
        sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("added_at", UTCDateTime(), nullable=False),
    sa.Index("ix_team_members_org_user", "organization_id", "user_id"),
    sa.Index("ix_team_members_team_added", "team_id", "added_at", "user_id"),
)
