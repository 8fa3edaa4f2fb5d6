from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat


def is_active(row: RowMapping) -> bool:
    """`active` once the identity provider's entity ID, SSO URL and certificate are all set."""
    return bool(row["entity_id"] and row["sso_url"] and row["certificate"])


def service_urls(base_url: str, provider_id: str) -> dict[str, str]:
    """Our side of the provider, what the identity provider's admin enters there."""
    root = f"{base_url}/sso/saml/{provider_id}"
    return {
        "acsURL": f"{root}/acs",
        "startURL": f"{root}/start",
        "entityID": f"{root}/metadata",
    }


def present_provider(
    row: RowMapping, default_team: dict[str, Any] | None, base_url: str
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "object": "saml-provider",
        "id": row["id"],
        "label": row["label"],
        # GitBook requires these three; unset ones are empty strings (status says `pending`).
        "ssoURL": row["sso_url"] or "",
        "entityID": row["entity_id"] or "",
        "certificate": row["certificate"] or "",
        "defaultRole": row["default_role"],
        "createdAt": isoformat(row["created_at"]),
        "status": "active" if is_active(row) else "pending",
        "service": service_urls(base_url, row["id"]),
        "urls": {"location": f"{base_url}/v1/orgs/{row['organization_id']}/saml/{row['id']}"},
    }
    if default_team is not None:
        out["defaultTeam"] = default_team
    return out


def present_login(row: RowMapping, base_url: str) -> dict[str, Any]:
    return {
        "id": row["id"],
        "label": row["label"],
        "startURL": service_urls(base_url, row["id"])["startURL"],
    }


@dataclass(frozen=True, slots=True)
class Destination:
    """What the page before an identity provider tells the browser."""

    organization: str
    label: str
    host: str
    # The e-mail of the account a link login links, None for a plain login.
    linking: str | None


def confirm_page(where: Destination, action: str, next_path: str, link: str | None) -> str:
    """The page a login link opened from elsewhere shows: where the browser would go, and a
    button to go there."""
    verb = f"Link the account {where.linking} to" if where.linking else "Sign in to"
    hidden = f'<input type="hidden" name="next" value="{escape(next_path)}">'
    if link is not None:
        hidden += f'<input type="hidden" name="link" value="{escape(link)}">'
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(verb)} {escape(where.organization)}</title>"
        "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;"
        "padding:0 1rem}button{font:inherit;padding:.5rem 1rem}</style></head><body>"
        f"<h1>{escape(verb)} {escape(where.organization)}</h1>"
        f"<p>You are about to leave for <strong>{escape(where.host)}</strong>, the identity "
        f"provider {escape(where.organization)} set up as <em>{escape(where.label)}</em>. "
        "Continue only if you expected to sign in there.</p>"
        f'<form method="post" action="{escape(action)}">{hidden}'
        '<button type="submit">Continue</button></form></body></html>'
    )
