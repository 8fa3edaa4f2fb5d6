"""Wire shapes of revisions, pages, files and semantic changes (GitBook's Revision*, RevisionFile,
RevisionSemanticChanges)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from docshelf.content.snapshot import Record
from docshelf.kit.clock import isoformat

# GitBook's defaults for a page nobody customised.
DEFAULT_LAYOUT = {
    "width": "default",
    "cover": True,
    "coverSize": "hero",
    "title": True,
    "description": True,
    "tableOfContents": True,
    "outline": True,
    "pagination": True,
    "metadata": True,
}

FileUrl = Callable[[Record], str]


def present_page(
    rec: Record,
    *,
    path: str,
    pages: list[dict[str, Any]],
    app_url: str,
    markdown: str | None = None,
    document: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": rec["id"], "title": rec["title"]}
    for name in ("emoji", "icon", "description", "condition"):
        if rec.get(name) is not None:
            out[name] = rec[name]
    for name in ("createdAt", "updatedAt"):
        if rec.get(name):
            out[name] = rec[name]
    kind = rec["type"]
    if kind == "link":
        href = rec.get("href") or ""
        out.update(
            kind="link",
            type="link",
            target={"kind": "url", "url": href},
            href=href,
            hidden=bool(rec.get("hidden")),
        )
        return out
    out.update(
        kind="group" if kind == "group" else "sheet",
        type=kind,
        slug=rec["slug"],
        path=path,
        pages=pages,
        hidden=bool(rec.get("hidden")),
        noIndex=bool(rec.get("noIndex")),
        noRobotsIndex=bool(rec.get("noRobotsIndex")),
    )
    if kind == "document":
        out["urls"] = {"app": app_url}
        out["layout"] = dict(DEFAULT_LAYOUT)
        if rec.get("markdown"):
            out["documentId"] = rec["markdown"]
        if markdown is not None:
            out["markdown"] = markdown
        if document is not None:
            out["document"] = document
    return out


def present_file(rec: Record, download_url: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": rec["id"],
        "name": rec["name"],
        "contentType": rec["contentType"],
        "downloadURL": download_url,
        "size": rec["size"],
    }
    if rec.get("dimensions"):
        out["dimensions"] = rec["dimensions"]
    return out


def present_revision(
    row: Any,
    *,
    pages: list[dict[str, Any]],
    files: list[dict[str, Any]],
    app_url: str,
    merged_from: dict[str, Any] | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "object": "revision",
        "id": row["id"],
        "parents": list(row["parents"]),
        "pages": pages,
        "files": files,
        "reusableContents": [],
        "createdAt": isoformat(row["created_at"]),
        "type": row["type"],
        "urls": {"app": app_url},
    }
    if merged_from is not None:
        out["mergedFrom"] = merged_from
    return out


def changed_page(rec: Record, path: str | None) -> dict[str, Any]:
    out = {"id": rec["id"], "type": rec["type"], "title": rec["title"]}
    if path is not None:
        out["path"] = path
    return out


def changed_file(rec: Record, download_url: str) -> dict[str, Any]:
    return {
        "id": rec["id"],
        "name": rec["name"],
        "contentType": rec["contentType"],
        "downloadURL": download_url,
    }
