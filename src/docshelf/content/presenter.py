"""Wire shapes of revisions, pages, files and semantic changes (GitBook's Revision*, RevisionFile,
RevisionSemanticChanges)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from docshelf.content.tree.snapshot import Record
from docshelf.document.limits import MAX_PAGE_DEPTH
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
    # Required by GitBook 0.202.
    "coverMask": "none",
    "tags": True,
    "actions": True,
    "anchors": True,
}

FileUrl = Callable[[Record], str]


def present_page(
    rec: Record,
    *,
    path: str,
    pages: list[dict[str, Any]],
    app_url: str,
    markdown: str | None = None,
    # A page's document comes encoded (markdown.answered_document).
    document: dict[str, Any] | orjson.Fragment | None = None,
    layout: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`layout`: the dict to present as the layout (shared, not copied: only for answers
    encoded as they are built, as page trees are). Page listings encode the same shape
    piecewise (`content/listing.piece`): a field added here goes there too (the tests compare
    the two)."""
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
        out["layout"] = dict(DEFAULT_LAYOUT) if layout is None else layout
        out["tags"] = []
        if rec.get("markdown"):
            out["documentId"] = rec["markdown"]
        if markdown is not None:
            out["markdown"] = markdown
        if document is not None:
            out["document"] = document
    return out


def nest_pages(
    records: dict[str, Record],
    root: Record,
    top_path: str,
    app_url: Callable[[str], str],
    max_depth: int = MAX_PAGE_DEPTH,
) -> list[dict[str, Any]]:
    """The page tree under `root` as GitBook nests it (`pages` inside pages), paths computed on
    the way down. Built without recursion and cut `max_depth` levels down: writes keep trees
    within that, and a tree stored deeper before the limit existed still encodes (orjson stops
    at 254 levels, and each page level is two). The pages cut off stay readable on their own."""
    top: list[dict[str, Any]] = []
    stack: list[tuple[Record, str, list[dict[str, Any]], int]] = [(root, top_path, top, 1)]
    while stack:
        node, prefix, out, depth = stack.pop()
        for child_id, slug in node["children"]:
            rec = records.get(child_id)
            if rec is None:
                continue
            path = f"{prefix}{slug}"
            pages: list[dict[str, Any]] = []
            out.append(
                present_page(
                    rec, path=path, pages=pages, app_url=app_url(child_id), layout=DEFAULT_LAYOUT
                )
            )
            if depth < max_depth:
                stack.append((rec, path + "/", pages, depth + 1))
    return top


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
    # A kept listing comes encoded (content.service._pages).
    pages: list[dict[str, Any]] | orjson.Fragment,
    files: list[dict[str, Any]],
    app_url: str,
    merged_from: dict[str, Any] | None,
    reusable_contents: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "object": "revision",
        "id": row["id"],
        "parents": list(row["parents"]),
        "pages": pages,
        "files": files,
        "reusableContents": reusable_contents or [],
        # Docshelf has no page tags: none in any revision (GitBook 0.202 requires the list).
        "tags": [],
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
