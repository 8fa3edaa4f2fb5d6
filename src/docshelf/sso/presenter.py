from __future__ import annotations

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
