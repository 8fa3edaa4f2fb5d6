from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess


def present_custom_field(row: RowMapping, access: OrgAccess, base_url: str) -> dict[str, Any]:
    # GitBook requires title, description and placeholder as strings: unset is "", not null.
    body: dict[str, Any] = {
        "id": row["id"],
        "name": row["name"],
        "type": row["type"],
        "title": row["title"] or "",
        "description": row["description"] or "",
        "placeholder": row["placeholder"] or "",
    }
    if row["options"] is not None:
        body["options"] = list(row["options"])
    body["createdAt"] = isoformat(row["created_at"])
    body["updatedAt"] = isoformat(row["updated_at"])
    body["urls"] = {
        "location": f"{base_url}/v1/orgs/{row['organization_id']}/custom-fields/{row['name']}"
    }
    body["permissions"] = org_policy.setting_permissions(access)
    return body
