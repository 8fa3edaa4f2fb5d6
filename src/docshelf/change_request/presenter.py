from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from docshelf.document.model import markdown_to_document
from docshelf.kit.clock import isoformat
from docshelf.space import presenter as space_presenter
from docshelf.user.presenter import present_user_or_gone


def app_address(base_url: str, space_id: str, number: int) -> str:
    """The change request in the app (`urls.app`)."""
    return f"{space_presenter.app_address(base_url, space_id)}~/changes/{number}/"


def present_change_request(row: RowMapping, base_url: str) -> dict[str, Any]:
    space_id, number = row["space_id"], row["number"]
    body: dict[str, Any] = {
        "object": "change-request",
        "id": row["id"],
        "number": number,
        "status": row["status"],
        "subject": row["subject"],
        "createdBy": present_user_or_gone(row, base_url, id_key="created_by", prefix="creator_"),
        # Required by GitBook's later descriptions (0.202).
        "space": space_id,
        "createdAt": isoformat(row["created_at"]),
        "updatedAt": isoformat(row["updated_at"]),
        "revision": row["revision_id"],
        "revisionInitial": row["revision_initial"],
        # Open comments in the change request, kept by comment/repository.py.
        "comments": row["comments_open"],
        # Behind when main has moved past what the change request last took from it.
        "outdated": row["status"] != "merged"
        and (row["revision_merged_ancestor"] or row["revision_initial"]) != row["space_revision"],
        "urls": {
            "location": f"{base_url}/v1/spaces/{space_id}/change-requests/{row['id']}",
            "app": app_address(base_url, space_id, number),
        },
    }
    if row["revision_merged_ancestor"] is not None:
        body["revisionMergedAncestor"] = row["revision_merged_ancestor"]
    if row["revision_merged"] is not None:
        body["revisionMerged"] = row["revision_merged"]
    if row["merged_at"] is not None:
        body["mergedAt"] = isoformat(row["merged_at"])
        body["mergedBy"] = present_user_or_gone(row, base_url, id_key="merged_by", prefix="merger_")
    if row["description"] is not None:
        body["description"] = markdown_to_document(row["description"])
    if row["links"]:
        body["links"] = row["links"]
    return body
