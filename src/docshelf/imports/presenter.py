"""Import runs as GitBook's ContentImportRun, with Docshelf's report beside it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat


def run_location(base_url: str, org_id: str, run_id: str) -> str:
    # GitBook's path: `org`, singular.
    return f"{base_url}/v1/org/{org_id}/imports/{run_id}"


def present_run(row: RowMapping, base_url: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "import-run",
        "id": row["id"],
        "status": row["status"],
        "createdAt": isoformat(row["created_at"]),
        "updatedAt": isoformat(row["updated_at"]),
        # GitBook's run sources are a URL (`website`) or uploaded files; Docshelf's are URLs,
        # and `format` (an extension) is what the request said the URL serves.
        "source": {"type": "website", "url": row["source_url"], "format": row["source"]},
        "target": {"space": row["space_id"]},
        "urls": {"location": run_location(base_url, row["organization_id"], row["id"])},
        "revision": row["revision_id"],
        "totalResources": row["total_resources"],
        "detected": row["detected"],
    }
    if row["created_by"] is not None:
        body["createdBy"] = row["created_by"]
    if row["started_at"] is not None:
        body["startedAt"] = isoformat(row["started_at"])
    if row["completed_at"] is not None:
        body["completedAt"] = isoformat(row["completed_at"])
    if row["reason"] is not None:
        body["reason"] = row["reason"]
    if row["report"] is not None:
        # importedResources, skipped, skippedCounts: only once the import has happened.
        body.update(row["report"])
    return body
