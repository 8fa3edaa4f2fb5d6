from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat
from docshelf.organization.policy import OrgAccess, permissions


def present_organization(access: OrgAccess, base_url: str) -> dict[str, Any]:
    o = access.org
    org_id = o["id"]
    urls: dict[str, str] = {
        "location": f"{base_url}/v1/orgs/{org_id}",
        "app": f"{base_url}/o/{org_id}/",
    }
    if o["logo"]:
        urls["logo"] = o["logo"]
    body: dict[str, Any] = {
        "object": "organization",
        "id": org_id,
        "title": o["title"],
        "createdAt": isoformat(o["created_at"]),
        "emailDomains": list(o["email_domains"] or []),
        "type": o["type"],
        "inviteLinks": o["invite_links"],
        # A self-hosted install has every feature and no billing: the top plan, no trial.
        "plan": "enterprise_2024",
        "trial": {"status": "notapplicable", "count": 0},
        "sso": o["sso"],
        "ai": o["ai"],
        "internal_isOnNewTrial": True,
        # GitBook releases after the spec's; unset is no rules.
        "mergeRules": o["merge_rules"] or {"type": "none"},
        "urls": urls,
        "permissions": permissions(access),
    }
    if o["hostname"]:
        body["hostname"] = o["hostname"]
    if o["use_case"]:
        body["useCase"] = o["use_case"]
    if o["community_type"]:
        body["communityType"] = o["community_type"]
    if o["has_default_role"]:
        body["defaultRole"] = o["default_role"]
    if o["default_content"]:
        body["defaultContent"] = o["default_content"]
    return body


def present_row(row: RowMapping, base_url: str) -> dict[str, Any]:
    """A row from `repository.READABLE`, which carries the caller's role."""
    access = OrgAccess(org=row, is_member=True, role=row["caller_role"], owns_team=row["owns_team"])
    return present_organization(access, base_url)
