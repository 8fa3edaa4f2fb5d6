"""A space's link to an outside git remote, as the API shows it (credentials never)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from docshelf.kit.clock import isoformat


def present(row: sa.RowMapping) -> dict[str, Any]:
    return {
        "object": "git-sync",
        "space": row["space_id"],
        "url": row["url"],
        "branch": row["branch"],
        "hasCredentials": row["token"] is not None or row["username"] is not None,
        "remoteCommit": row["remote_commit"],
        "lastPushAt": isoformat(row["last_push_at"]),
        "lastPullAt": isoformat(row["last_pull_at"]),
        "lastSyncAt": isoformat(row["last_sync_at"]),
        "error": row["last_error"],
        "errorAt": isoformat(row["last_error_at"]),
        "createdAt": isoformat(row["created_at"]),
        "updatedAt": isoformat(row["updated_at"]),
    }
