from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import RowMapping

from docshelf.kit.clock import isoformat
from docshelf.openapi_spec import policy
from docshelf.organization.policy import OrgAccess


def spec_location(base_url: str, org_id: str, slug: str) -> str:
    return f"{base_url}/v1/orgs/{org_id}/openapi/{slug}"


def present_spec(row: RowMapping, access: OrgAccess, base_url: str) -> dict[str, Any]:
    org_id, slug = row["organization_id"], row["slug"]
    errors = row["last_process_errors"] or {}
    body: dict[str, Any] = {
        "object": "openapi-spec",
        "id": row["id"],
        "createdAt": isoformat(row["created_at"]),
        "updatedAt": isoformat(row["updated_at"]),
        "slug": slug,
        "processingState": row["processing_state"],
        "lastProcessedErrors": list(errors.get("items", [])),
        "lastProcessedErrorCount": int(errors.get("count", 0)),
        "permissions": policy.permissions(access),
        "urls": {
            "location": spec_location(base_url, org_id, slug),
            "app": f"{base_url}/o/{org_id}/openapi/{slug}",
        },
    }
    if row["source_url"] is not None:
        body["sourceURL"] = row["source_url"]
    if row["last_version_id"] is not None:
        body["lastVersion"] = row["last_version_id"]
    if row["last_processed_at"] is not None:
        body["lastProcessedAt"] = isoformat(row["last_processed_at"])
    if row["last_process_error_code"] is not None:
        body["lastProcessErrorCode"] = row["last_process_error_code"]
    return body


def version_location(base_url: str, org_id: str, slug: str, version_id: str) -> str:
    return f"{spec_location(base_url, org_id, slug)}/versions/{version_id}"


def version_url(version: RowMapping, location: str) -> str:
    """Where the specification is: its source URL, or, for a text source, its content here."""
    url: str | None = version["source_url"]
    return url if url is not None else f"{location}/content"


def present_version(version: RowMapping, base_url: str, org_id: str, slug: str) -> dict[str, Any]:
    location = version_location(base_url, org_id, slug, version["id"])
    return {
        "object": "openapi-spec-version",
        "id": version["id"],
        "createdAt": isoformat(version["created_at"]),
        "url": version_url(version, location),
        "urls": {"location": location},
    }


def present_content(
    version: RowMapping, data: bytes, base_url: str, org_id: str, slug: str
) -> dict[str, Any]:
    location = version_location(base_url, org_id, slug, version["id"])
    url = version_url(version, location)
    return {
        # Stored as the canonical JSON it was addressed by: spliced in, never parsed again.
        "filesystem": orjson.Fragment(data),
        "url": url,
        # GitBook 0.202's form of the same; specs are private here, so nothing is public.
        "urls": {"source": url, "public": None},
    }
