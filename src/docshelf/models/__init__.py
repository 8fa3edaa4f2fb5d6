"""Every table, one module per aggregate. Importing this package registers them all on
`docshelf.kit.db.metadata`, which Alembic compares against."""

from docshelf.models.change_request import change_request_contributors, change_requests
from docshelf.models.collection import collections
from docshelf.models.comment import comment_reactions, comment_replies, comments
from docshelf.models.content import (
    content_objects,
    import_stages,
    listing_snapshots,
    page_link_stats,
    page_links,
    revisions,
    space_blobs,
)
from docshelf.models.custom_field import custom_field_values, custom_fields
from docshelf.models.event import events, webhook_deliveries, webhooks
from docshelf.models.export import pdf_exports
from docshelf.models.gitsync import git_branches, git_commits, git_objects, git_remotes
from docshelf.models.identity import api_tokens, users
from docshelf.models.import_run import import_runs
from docshelf.models.job import job_tenants, jobs
from docshelf.models.openapi_spec import (
    openapi_spec_contents,
    openapi_spec_versions,
    openapi_specs,
)
from docshelf.models.organization import (
    invites,
    members,
    organization_email_domains,
    organizations,
    verified_email_domains,
)
from docshelf.models.permission import content_grants
from docshelf.models.review import change_request_reviewers, change_request_reviews
from docshelf.models.search import search_sections
from docshelf.models.site import (
    site_section_groups,
    site_sections,
    site_share_links,
    site_spaces,
    sites,
)
from docshelf.models.space import spaces
from docshelf.models.sso import (
    saml_assertions,
    saml_link_codes,
    saml_providers,
    saml_requests,
    sso_identities,
    user_sessions,
)
from docshelf.models.system import instance_settings
from docshelf.models.team import team_members, teams
from docshelf.models.translation import translation_settings

__all__ = [
    "api_tokens",
    "change_request_contributors",
    "change_request_reviewers",
    "change_request_reviews",
    "change_requests",
    "collections",
    "comment_reactions",
    "comment_replies",
    "comments",
    "content_grants",
    "content_objects",
    "custom_field_values",
    "custom_fields",
    "events",
    "git_branches",
    "git_commits",
    "git_objects",
    "git_remotes",
    "import_runs",
    "import_stages",
    "instance_settings",
    "invites",
    "job_tenants",
    "jobs",
    "listing_snapshots",
    "members",
    "openapi_spec_contents",
    "openapi_spec_versions",
    "openapi_specs",
    "organization_email_domains",
    "organizations",
    "page_link_stats",
    "page_links",
    "pdf_exports",
    "revisions",
    "saml_assertions",
    "saml_link_codes",
    "saml_providers",
    "saml_requests",
    "search_sections",
    "site_section_groups",
    "site_sections",
    "site_share_links",
    "site_spaces",
    "sites",
    "space_blobs",
    "spaces",
    "sso_identities",
    "team_members",
    "teams",
    "translation_settings",
    "user_sessions",
    "users",
    "verified_email_domains",
    "webhook_deliveries",
    "webhooks",
]
