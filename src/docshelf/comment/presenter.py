from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import RowMapping

from docshelf.comment import policy
from docshelf.document import markdown as md
from docshelf.kit.clock import isoformat
from docshelf.user.presenter import present_user_or_gone

JSON = dict[str, Any]


def _document_body(markdown: str) -> JSON:
    """THE ONE PLACE where a comment's stored markdown becomes GitBook's JSONDocument
    (`format=document`). For now it is the content engine's converter (`document.markdown`),
    memoized per text like page bodies; swap this call for `document.model` when that lands."""
    return md.to_document(markdown)


def present_body(markdown: str, fmt: str | None) -> JSON:
    if fmt == "document":
        return {"document": _document_body(markdown)}
    return {"markdown": markdown}


def present_person(row: RowMapping, id_column: str, prefix: str, base_url: str) -> JSON:
    """A user from a joined row; a deleted user (null id) as GitBook's clients expect a User."""
    return present_user_or_gone(row, base_url, id_key=id_column, prefix=prefix)


def group_reactions(rows: Iterable[RowMapping], base_url: str) -> dict[str, list[JSON]]:
    """By comment or reply: one entry per emoji, in the order each was first given, with its
    users in the order they reacted."""
    out: dict[str, dict[str, JSON]] = {}
    # Ties sorted here, by codepoint: the databases' collations may order emoji differently.
    for row in sorted(rows, key=lambda r: (r["reacted_at"], r["emoji"], r["user_id"])):
        by_emoji = out.setdefault(row["subject_id"], {})
        entry = by_emoji.setdefault(row["emoji"], {"emoji": row["emoji"], "count": 0, "users": []})
        entry["count"] += 1
        entry["users"].append(
            {
                "user": present_person(row, "user_id", "", base_url),
                "reactedAt": isoformat(row["reacted_at"]),
            }
        )
    return {subject: list(by_emoji.values()) for subject, by_emoji in out.items()}


def group_repliers(rows: Iterable[RowMapping], base_url: str) -> dict[str, tuple[int, list[JSON]]]:
    """By comment: the number of replies and GitBook's `repliers` (UserContributor: who replied,
    how often, when last); replies of deleted users count but name nobody."""
    out: dict[str, tuple[int, list[JSON]]] = {}
    for row in rows:
        count, people = out.get(row["comment_id"], (0, []))
        if row["posted_by"] is not None:
            people.append(
                {
                    "user": present_person(row, "posted_by", "poster_", base_url),
                    "count": row["count"],
                    "updatedAt": isoformat(row["updated_at"]),
                }
            )
        out[row["comment_id"]] = (count + row["count"], people)
    return out


def thread_location(base_url: str, space_id: str, change_request_id: str | None) -> str:
    base = f"{base_url}/v1/spaces/{space_id}"
    return base if change_request_id is None else f"{base}/change-requests/{change_request_id}"


def present_comment(
    row: RowMapping,
    *,
    role: str | None,
    caller: str,
    reactions: list[JSON],
    replies: tuple[int, list[JSON]],
    page: JSON | None,
    fmt: str | None,
    base_url: str,
) -> JSON:
    target: JSON = {"space": row["space_id"], "revision": row["target_revision"]}
    if row["change_request_id"] is not None:
        target["changeRequest"] = row["change_request_id"]
    if page is not None:
        target["page"] = page
    if row["target_node"] is not None:
        target["node"] = {"id": row["target_node"]}
    thread = thread_location(base_url, row["space_id"], row["change_request_id"])
    body: JSON = {
        "object": "comment",
        "id": row["id"],
        "postedBy": present_person(row, "posted_by", "poster_", base_url),
        "postedAt": isoformat(row["posted_at"]),
        "reactions": reactions,
        "replies": replies[0],
        "repliers": replies[1],
        "body": present_body(row["markdown"], fmt),
        "target": target,
        "status": row["status"],
        "urls": {"location": f"{thread}/comments/{row['id']}"},
        "permissions": policy.permissions(role, author=row["posted_by"] == caller),
    }
    if row["edited_at"] is not None:
        body["editedAt"] = isoformat(row["edited_at"])
    if row["status"] == "resolved":
        body["resolvedAt"] = isoformat(row["resolved_at"])
        body["resolvedBy"] = present_person(row, "resolved_by", "resolver_", base_url)
    return body


def present_reply(
    row: RowMapping,
    comment: RowMapping,
    *,
    role: str | None,
    caller: str,
    reactions: list[JSON],
    fmt: str | None,
    base_url: str,
) -> JSON:
    thread = thread_location(base_url, comment["space_id"], comment["change_request_id"])
    body: JSON = {
        "object": "comment-reply",
        "id": row["id"],
        "postedBy": present_person(row, "posted_by", "poster_", base_url),
        "postedAt": isoformat(row["posted_at"]),
        "reactions": reactions,
        "body": present_body(row["markdown"], fmt),
        "urls": {"location": f"{thread}/comments/{comment['id']}/replies/{row['id']}"},
        "permissions": policy.permissions(role, author=row["posted_by"] == caller),
    }
    if row["edited_at"] is not None:
        body["editedAt"] = isoformat(row["edited_at"])
    return body


def present_page(rec: Mapping[str, Any], path: str, outdated: bool) -> JSON:
    """GitBook 0.130's page summary in a comment's target (0.202 reads only its `id`)."""
    out: JSON = {"id": rec["id"], "title": rec.get("title") or "Untitled"}
    for name in ("emoji", "icon", "createdAt", "updatedAt"):
        if rec.get(name):
            out[name] = rec[name]
    out["path"] = path
    out["outdated"] = outdated
    return out
