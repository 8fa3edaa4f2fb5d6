"""Fetching user-given URLs without server-side request forgery.

Every feature that downloads something a user named (content imports, OpenAPI spec sources,
files by URL) goes through `Fetcher`: http(s) only, every resolved address checked before the
connection and the connection pinned to it, every redirect re-checked, size and time capped.
A refusal is a `BadRequest` whose message names the reason.
"""

from docshelf.fetch.client import Fetched, Fetcher, FetchTimeout
from docshelf.fetch.guard import (
    Resolver,
    Target,
    check_url,
    parse_allowed_hosts,
    refusal_reason,
    system_resolver,
)

__all__ = [
    "FetchTimeout",
    "Fetched",
    "Fetcher",
    "Resolver",
    "Target",
    "check_url",
    "parse_allowed_hosts",
    "refusal_reason",
    "system_resolver",
]
