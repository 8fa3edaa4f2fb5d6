from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat
from docshelf.member.presenter import present_member
from docshelf.organization.policy import OrgAccess
from docshelf.team import policy


def present_team(row: RowMapping, access: OrgAccess) -> dict[str, Any]:
    return {
        "object": "team",
        "id": row["id"],
        "title": row["title"],
        "members": row["members_count"],
        "spaces": row["spaces_count"],
        "createdAt": isoformat(row["created_at"]),
        "permissions": policy.permissions(access, row["caller_team_role"]),
    }


def present_team_member(row: RowMapping, base_url: str) -> dict[str, Any]:
    return {
        "organization": present_member(row, base_url),
        "team": {"role": row["team_role"]},
        "permissions": {"view": True},
    }
