from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess


def present_translation_settings(
    row: RowMapping, access: OrgAccess, base_url: str
) -> dict[str, Any]:
    return {
        "object": "translation-settings",
        "id": row["id"],
        "title": row["title"],
        "languages": list(row["languages"]),
        "createdAt": isoformat(row["created_at"]),
        "updatedAt": isoformat(row["updated_at"]),
        "permissions": org_policy.setting_permissions(access),
        "urls": {
            "location": f"{base_url}/v1/orgs/{row['organization_id']}/translations/{row['id']}"
        },
    }
