"""Every table, one module per aggregate. Importing this package registers them all on
`docshelf.kit.db.metadata`, which Alembic compares against."""

from docshelf.models.identity import api_tokens, users
from docshelf.models.job import jobs
from docshelf.models.organization import invites, members, organizations
from docshelf.models.system import instance_settings, rate_limit_counters
from docshelf.models.team import team_members, teams

__all__ = [
    "api_tokens",
    "instance_settings",
    "invites",
    "jobs",
    "members",
    "organizations",
    "rate_limit_counters",
    "team_members",
    "teams",
    "users",
]
