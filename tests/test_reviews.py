"""Reviews, requested reviewers and contributors of change requests, over HTTP."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.document import markdown as md
from docshelf.kit.clock import clock, isoformat
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, listing, snapshot, user_body


class Setup:
    """An organization with one member per role on an unlisted space (so organization roles
    apply), and an open change request by the editor."""

    def __init__(self, org: str, people: list[Who], space: dict[str, Any], cr: dict[str, Any]):
        self.org = org
        self.admin, self.editor, self.reviewer, self.commenter, self.reader = people
        self.space = space
        self.cr = cr

    @property
    def url(self) -> str:
        return f"/v1/spaces/{self.space['id']}/change-requests/{self.cr['id']}"


async def setup(client: httpx.AsyncClient, db: AsyncEngine) -> Setup:
    org, people = await factories.org_with_members(db, "edit", "review", "comment", "read")
    space = await factories.api_space(client, org, people[0], visibility="unlisted")
    r = await client.post(
        f"/v1/spaces/{space['id']}/change-requests",
        json={"subject": "Fix typos"},
        headers=people[1].headers,
    )
    assert r.status_code == 201, r.text
    return Setup(org, people, space, r.json())


async def edit(client: httpx.AsyncClient, s: Setup, who: Who, text: str) -> str:
    """One edit of the change request by `who`; its new revision."""
    r = await client.post(
        s.url + "/content",
        json={"changes": [{"operation": "insert_page", "document": {"markdown": text}}]},
        headers=who.headers,
    )
    assert r.status_code == 200, r.text
    revision: str = r.json()["revision"]
    return revision


def review_body(
    s: Setup,
    review_id: str,
    who: Who,
    status: str,
    revision: str,
    *,
    outdated: bool = False,
    requested_by: Who | None = None,
    comment: tuple[str, str] | None = None,
    at: str | None = None,
) -> dict[str, Any]:
    location = f"{BASE}{s.url}/reviews/{review_id}"
    when = at or isoformat(clock.now())
    body: dict[str, Any] = {
        "object": "change-request-review",
        "id": review_id,
        "revision": revision,
        "reviewer": user_body(who),
        "status": status,
        "outdated": outdated,
        "createdAt": when,
        "updatedAt": when,
        "urls": {"location": location},
    }
    if requested_by is not None:
        body["requestedBy"] = user_body(requested_by)
    if comment is not None:
        comment_id, text = comment
        body["comment"] = {
            "object": "comment",
            "id": comment_id,
            "postedBy": user_body(who),
            "postedAt": when,
            "reactions": [],
            "replies": 0,
            "repliers": [],
            "body": {"markdown": text},
            "target": {
                "space": s.space["id"],
                "revision": revision,
                "changeRequest": s.cr["id"],
                "review": review_id,
            },
            "urls": {"location": location},
            "permissions": {
                "view": True,
                "edit": False,
                "reply": False,
                "react": False,
                "delete": False,
            },
            "status": "open",
        }
    return body


def requested_body(who: Who, by: Who, revision: str, at: str | None = None) -> dict[str, Any]:
    return {
        "object": "change-request-requested-reviewer",
        "kind": "user",
        "user": user_body(who),
        "revision": revision,
        "requestedBy": user_body(by),
        "createdAt": at or isoformat(clock.now()),
    }


async def test_review_lifecycle_and_outdated(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    s = await setup(client, db)
    first_revision = await edit(client, s, s.editor, "# One")
    r = await client.post(
        s.url + "/reviews",
        json={"status": "approved", "comment": {"markdown": "Looks **good**"}},
        headers=s.reviewer.headers,
    )
    assert r.status_code == 201, r.text
    approved = r.json()
    assert approved == review_body(
        s,
        approved["id"],
        s.reviewer,
        "approved",
        first_revision,
        comment=(approved["comment"]["id"], "Looks **good**"),
    )
    assert r.headers["location"] == approved["urls"]["location"]
    r = await client.get(s.url + f"/reviews/{approved['id']}", headers=s.reader.headers)
    assert r.status_code == 200 and r.json() == approved
    # The comment as GitBook's JSON document.
    r = await client.get(
        s.url + f"/reviews/{approved['id']}?format=document", headers=s.reader.headers
    )
    assert r.json()["comment"]["body"] == {"document": md.to_document("Looks **good**")}
    # The same change request by its number.
    r = await client.get(
        f"/v1/spaces/{s.space['id']}/change-requests/{s.cr['number']}/reviews",
        headers=s.reader.headers,
    )
    assert r.json() == listing(approved)

    # New content after the approval outdates it.
    approved_at = approved["createdAt"]
    clock.advance(timedelta(seconds=1))
    second_revision = await edit(client, s, s.editor, "# Two")
    outdated_approval = {**approved, "outdated": True}
    r = await client.get(s.url + "/reviews", headers=s.reader.headers)
    assert r.json() == listing(outdated_approval)

    # A new review of the new content; then the same reviewer's next one supersedes it.
    clock.advance(timedelta(seconds=1))
    r = await client.post(
        s.url + "/reviews", json={"status": "changes-requested"}, headers=s.admin.headers
    )
    assert r.status_code == 201, r.text
    by_admin = r.json()
    assert by_admin == review_body(s, by_admin["id"], s.admin, "changes-requested", second_revision)
    clock.advance(timedelta(seconds=1))
    r = await client.post(
        s.url + "/reviews", json={"status": "approved", "comment": {}}, headers=s.admin.headers
    )
    again = r.json()
    assert again == review_body(s, again["id"], s.admin, "approved", second_revision)
    superseded = {**by_admin, "outdated": True}
    r = await client.get(s.url + "/reviews", headers=s.reader.headers)
    assert r.json() == listing(again, superseded, outdated_approval)  # most recent first
    r = await client.get(s.url + "/reviews?outdated=true", headers=s.reader.headers)
    assert r.json() == listing(superseded, outdated_approval)
    r = await client.get(s.url + "/reviews?outdated=false", headers=s.reader.headers)
    assert r.json() == listing(again)
    # Keyset pages.
    r = await client.get(s.url + "/reviews?limit=2", headers=s.reader.headers)
    page = r.json()
    assert page["items"] == [again, superseded] and page["count"] == 3
    r = await client.get(
        s.url + "/reviews",
        params={"limit": 2, "page": page["next"]["page"]},
        headers=s.reader.headers,
    )
    assert r.json() == listing(outdated_approval) | {"count": 3}
    assert approved_at < again["createdAt"]
    # A filter that binds no value is part of the listing too: a cursor of all the reviews
    # does not continue the outdated ones (its count would be all of them).
    for outdated in ("true", "false"):
        r = await client.get(
            s.url + "/reviews",
            params={"limit": 2, "outdated": outdated, "page": page["next"]["page"]},
            headers=s.reader.headers,
        )
        assert (r.status_code, r.json()) == (
            400,
            error(400, "Invalid query parameter 'page': not a cursor returned by this listing"),
        )
    r = await client.get(s.url + "/reviews?outdated=true&limit=1", headers=s.reader.headers)
    r = await client.get(
        s.url + "/reviews",
        params={"limit": 1, "outdated": "true", "page": r.json()["next"]["page"]},
        headers=s.reader.headers,
    )
    assert r.json() == listing(outdated_approval) | {"count": 2}


async def test_requested_reviewers(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    s = await setup(client, db)
    revision = s.cr["revision"]
    r = await client.get(s.url + "/requested-reviewers", headers=s.reader.headers)
    assert r.status_code == 200 and r.json() == listing()
    r = await client.post(
        s.url + "/requested-reviewers",
        json={"users": [s.reader.id, s.reviewer.id, s.reader.id], "subject": " Ready "},
        headers=s.editor.headers,
    )
    assert r.status_code == 200, r.text
    asked_reader = requested_body(s.reader, s.editor, revision)
    asked_reviewer = requested_body(s.reviewer, s.editor, revision)
    assert r.json() == {"users": [asked_reader, asked_reviewer]}
    r = await client.get(s.url, headers=s.reader.headers)
    assert r.json()["subject"] == "Ready"
    r = await client.get(s.url + "/requested-reviewers", headers=s.reader.headers)
    by_id = sorted([asked_reader, asked_reviewer], key=lambda b: b["user"]["id"])
    assert r.json() == listing(*by_id)

    # A reader may review once asked to, and the review says who asked.
    r = await client.post(s.url + "/reviews", json={"status": "approved"}, headers=s.reader.headers)
    assert r.status_code == 201, r.text
    by_reader = r.json()
    assert by_reader == review_body(
        s, by_reader["id"], s.reader, "approved", revision, requested_by=s.editor
    )
    # Asking again renews the request and outdates the review given before it.
    clock.advance(timedelta(seconds=1))
    r = await client.post(
        s.url + "/requested-reviewers", json={"users": [s.reader.id]}, headers=s.admin.headers
    )
    assert r.json() == {"users": [requested_body(s.reader, s.admin, revision)]}
    r = await client.get(s.url + f"/reviews/{by_reader['id']}", headers=s.reader.headers)
    assert r.json() == {**by_reader, "outdated": True}

    # Withdrawing: 205, then 204 when there is nothing left to withdraw; a reviewer may decline.
    r = await client.delete(s.url + f"/requested-reviewers/{s.reader.id}", headers=s.editor.headers)
    assert r.status_code == 205 and r.content == b""
    r = await client.delete(s.url + f"/requested-reviewers/{s.reader.id}", headers=s.editor.headers)
    assert r.status_code == 204 and r.content == b""
    before = await snapshot(db)
    r = await client.delete(
        s.url + f"/requested-reviewers/{s.reviewer.id}", headers=s.commenter.headers
    )
    assert r.status_code == 403
    assert r.json() == error(403, "You cannot change the reviewers of this change request")
    assert await snapshot(db) == before
    r = await client.delete(
        s.url + f"/requested-reviewers/{s.reviewer.id}", headers=s.reviewer.headers
    )
    assert r.status_code == 205
    r = await client.get(s.url + "/requested-reviewers", headers=s.reader.headers)
    assert r.json() == listing()
    # No longer asked, the reader may not review.
    r = await client.post(s.url + "/reviews", json={"status": "approved"}, headers=s.reader.headers)
    assert r.status_code == 403


async def test_refusals_change_nothing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    s = await setup(client, db)
    stranger = await factories.user(db)
    other_org = await factories.organization(db, owner=stranger)
    r = await client.post(s.url + "/reviews", json={"status": "approved"}, headers=s.admin.headers)
    review_id = r.json()["id"]
    before = await snapshot(db)

    async def refused(method: str, path: str, who: Who, code: int, message: str, **kw: Any) -> None:
        r = await client.request(method, s.url + path, headers=who.headers, **kw)
        assert (r.status_code, r.json()) == (code, error(code, message)), (method, path, r.text)
        assert await snapshot(db) == before, (method, path)

    # Not a member: the space does not exist for them.
    for method, path, kw in (
        ("GET", "/reviews", {}),
        ("POST", "/reviews", {"json": {"status": "approved"}}),
        ("GET", f"/reviews/{review_id}", {}),
        ("GET", "/requested-reviewers", {}),
        ("POST", "/requested-reviewers", {"json": {"users": [stranger.id]}}),
        ("DELETE", f"/requested-reviewers/{s.reader.id}", {}),
        ("GET", "/contributors", {}),
    ):
        await refused(method, path, stranger, 404, "Space not found", **kw)
    # Members who see the change request but may not act.
    for who in (s.reader, s.commenter, s.editor):
        await refused(
            "POST",
            "/reviews",
            who,
            403,
            "You cannot review change requests in this space",
            json={"status": "approved"},
        )
    for who in (s.reader, s.commenter):
        await refused(
            "POST",
            "/requested-reviewers",
            who,
            403,
            "You cannot request reviews in this space",
            json={"users": [s.reviewer.id]},
        )
    # Missing things.
    await refused("GET", "/reviews/zzNope", s.reader, 404, "Review not found")
    r = await client.get(
        f"/v1/spaces/{s.space['id']}/change-requests/zzNope/reviews", headers=s.reader.headers
    )
    assert r.json() == error(404, "Change request not found")
    # Bad bodies.
    for body, message in (
        ({}, "Missing required body field 'status'"),
        (
            {"status": "rejected"},
            "Invalid body field 'status': Input should be 'changes-requested' or 'approved'",
        ),
        (
            {"status": "approved", "comment": {"document": {"object": "document"}}},
            "Invalid body field 'comment.document': Invalid document: document.nodes: "
            "must be an array",
        ),
        ({"status": "approved", "comment": {"markdown": "x" * 65537}}, None),
        ({"status": "approved", "extra": 1}, "Unknown body field 'extra'"),
    ):
        r = await client.post(s.url + "/reviews", json=body, headers=s.reviewer.headers)
        assert r.status_code == 400, (body, r.text)
        if message is not None:
            assert r.json() == error(400, message), body
        assert await snapshot(db) == before
    for body, message in (
        (
            {"users": []},
            "Invalid body field 'users': List should have at least 1 item after validation, not 0",
        ),
        (
            {"users": [stranger.id]},
            f"Invalid body field 'users': user '{stranger.id}' cannot read this space",
        ),
        (
            {"users": ["zzNobody"]},
            "Invalid body field 'users': user 'zzNobody' cannot read this space",
        ),
        (
            {"users": [s.reader.id], "subject": "  "},
            "Invalid body field 'subject': must not be blank",
        ),
    ):
        r = await client.post(s.url + "/requested-reviewers", json=body, headers=s.editor.headers)
        assert (r.status_code, r.json()) == (400, error(400, message)), body
        assert await snapshot(db) == before
    assert other_org


async def test_private_space_reviewer_must_see_it(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin, member) = await factories.org_with_members(db, "admin")
    outsider = await factories.user(db)
    await factories.member(db, org=org, who=outsider, role="edit")
    # No default level: organization roles give nothing.
    space = await factories.api_space(client, org, admin, default_level=None)
    r = await client.post(f"/v1/spaces/{space['id']}/change-requests", headers=admin.headers)
    url = f"/v1/spaces/{space['id']}/change-requests/{r.json()['id']}"
    r = await client.post(
        url + "/requested-reviewers", json={"users": [outsider.id]}, headers=admin.headers
    )
    assert r.json() == error(
        400, f"Invalid body field 'users': user '{outsider.id}' cannot read this space"
    )
    # An organization admin sees every space.
    r = await client.post(
        url + "/requested-reviewers", json={"users": [member.id]}, headers=admin.headers
    )
    assert r.status_code == 200


async def test_merged_and_archived_change_requests_take_no_review(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    s = await setup(client, db)
    r = await client.patch(s.url, json={"status": "archived"}, headers=s.editor.headers)
    assert r.status_code == 200
    before = await snapshot(db)
    r = await client.post(s.url + "/reviews", json={"status": "approved"}, headers=s.admin.headers)
    assert r.json() == error(409, "An archived change request cannot be reviewed; reopen it first")
    r = await client.post(
        s.url + "/requested-reviewers", json={"users": [s.reviewer.id]}, headers=s.admin.headers
    )
    assert r.status_code == 409
    assert await snapshot(db) == before
    await client.patch(s.url, json={"status": "open"}, headers=s.editor.headers)
    await edit(client, s, s.editor, "Hi")
    r = await client.post(s.url + "/merge", headers=s.admin.headers)
    assert r.json()["result"] == "merge"
    r = await client.post(s.url + "/reviews", json={"status": "approved"}, headers=s.admin.headers)
    assert r.json() == error(409, "A merged change request cannot be reviewed")


async def test_contributors(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    s = await setup(client, db)
    r = await client.get(s.url + "/contributors", headers=s.reader.headers)
    assert r.status_code == 200 and r.json() == listing()
    await edit(client, s, s.editor, "One")
    clock.advance(timedelta(minutes=1))
    await edit(client, s, s.editor, "Two")
    editor_last = isoformat(clock.now())
    clock.advance(timedelta(minutes=1))
    await edit(client, s, s.admin, "Three")
    # Pulling main in is no contribution.
    r = await client.post(s.url + "/update", headers=s.reviewer.headers)
    assert r.status_code == 200
    r = await client.get(s.url + "/contributors", headers=s.reader.headers)
    assert r.json() == listing(
        {
            "updatedAt": isoformat(clock.now()),
            "count": 1,
            "user": user_body(s.admin),
            "actionType": "edit",
        },
        {"updatedAt": editor_last, "count": 2, "user": user_body(s.editor), "actionType": "edit"},
    )


async def test_change_requests_by_requested_reviewer(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    s = await setup(client, db)
    r = await client.post(
        f"/v1/spaces/{s.space['id']}/change-requests",
        json={"subject": "Other"},
        headers=s.editor.headers,
    )
    other = r.json()
    r = await client.post(
        s.url + "/requested-reviewers", json={"users": [s.reviewer.id]}, headers=s.editor.headers
    )
    assert r.status_code == 200
    listed = f"/v1/spaces/{s.space['id']}/change-requests"
    r = await client.get(
        listed, params={"requestedReviewer": s.reviewer.id}, headers=s.reader.headers
    )
    assert [cr["id"] for cr in r.json()["items"]] == [s.cr["id"]]
    asked = {"requestedReviewer": s.reader.id}
    r = await client.get(listed, params=asked, headers=s.reader.headers)
    assert r.json() == listing()
    r = await client.get(listed, headers=s.reader.headers)
    assert {cr["id"] for cr in r.json()["items"]} == {s.cr["id"], other["id"]}


async def test_parallel_reviews_leave_one_standing(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A reviewer's concurrent submissions queue on the change request's row: each supersedes
    the one before, so exactly one stays current."""
    s = await setup(client, db)
    answers = await asyncio.gather(
        *(
            client.post(
                s.url + "/reviews",
                json={"status": "approved" if i % 2 else "changes-requested"},
                headers=s.reviewer.headers,
            )
            for i in range(10)
        )
    )
    assert sorted(r.status_code for r in answers) == [201] * 10
    r = await client.get(s.url + "/reviews?outdated=false", headers=s.reader.headers)
    assert r.json()["count"] == 1
    r = await client.get(s.url + "/reviews", headers=s.reader.headers)
    assert r.json()["count"] == 10
