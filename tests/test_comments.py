"""Comments and replies on a space's main content and inside change requests: every operation
over HTTP with whole bodies, reactions, resolution, outdated targets, the permission model, bad
input changing nothing, and the open-comment counters under concurrent writers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.document import markdown as md
from docshelf.document.limits import MAX_MARKDOWN_BYTES, MAX_MARKUP
from docshelf.kit.clock import clock
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import TS, error, member_body, snapshot, user_body

ALL = {"view": True, "edit": True, "reply": True, "react": True, "delete": True}
READ_ONLY = {"view": True, "edit": False, "reply": False, "react": False, "delete": False}
NOT_MINE = {"view": True, "edit": False, "reply": True, "react": True, "delete": False}


async def setup(
    client: httpx.AsyncClient, db: AsyncEngine
) -> tuple[dict[str, Any], str, list[Who]]:
    """An unlisted live space with one page; its organization's admin, an editor, a commenter,
    a reader and a second commenter."""
    org_id, people = await factories.org_with_members(db, "edit", "comment", "read", "comment")
    admin = people[0]
    space = await factories.api_space(
        client, org_id, admin, visibility="unlisted", editMode="live", title="Docs"
    )
    r = await client.post(
        f"/v1/spaces/{space['id']}/content",
        json={
            "changes": [
                {"operation": "insert_page", "title": "Intro", "document": {"markdown": "Hi"}}
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    page_id = r.json()["changes"][0]["page"]["id"]
    space = (await client.get(f"/v1/spaces/{space['id']}", headers=admin.headers)).json()
    return space, page_id, people


def page_target(page_id: str, *, outdated: bool = False, title: str = "Intro") -> dict[str, Any]:
    return {
        "id": page_id,
        "title": title,
        "createdAt": TS,
        "updatedAt": TS,
        "path": "intro",
        "outdated": outdated,
    }


def comment_body(
    cid: str,
    who: Who,
    space: dict[str, Any],
    *,
    markdown: str,
    page: dict[str, Any] | None = None,
    cr: str | None = None,
    revision: str | None = None,
    permissions: dict[str, bool] = ALL,
    **extra: Any,
) -> dict[str, Any]:
    thread = f"{BASE}/v1/spaces/{space['id']}" + (f"/change-requests/{cr}" if cr else "")
    target: dict[str, Any] = {"space": space["id"], "revision": revision or space["revision"]}
    if cr:
        target["changeRequest"] = cr
    if page:
        target["page"] = page
    body: dict[str, Any] = {
        "object": "comment",
        "id": cid,
        "postedBy": user_body(who),
        "postedAt": TS,
        "reactions": [],
        "replies": 0,
        "repliers": [],
        "body": {"markdown": markdown},
        "target": target,
        "status": "open",
        "urls": {"location": f"{thread}/comments/{cid}"},
        "permissions": permissions,
    }
    body.update(extra)
    return body


async def post(
    client: httpx.AsyncClient, url: str, who: Who, markdown: str, **extra: Any
) -> dict[str, Any]:
    r = await client.post(url, json={"body": {"markdown": markdown}, **extra}, headers=who.headers)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def space_comments(client: httpx.AsyncClient, sid: str, who: Who) -> int:
    r = await client.get(f"/v1/spaces/{sid}", headers=who.headers)
    return int(r.json()["comments"])


async def test_comment_lifecycle_on_a_space(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, page_id, (admin, editor, commenter, reader, other) = await setup(client, db)
    sid = space["id"]
    url = f"/v1/spaces/{sid}/comments"

    posted = await post(client, url, commenter, "Is this *right*?", page=page_id, node="n1")
    cid = posted["id"]
    expected = comment_body(
        cid,
        commenter,
        space,
        markdown="Is this *right*?",
        page=page_target(page_id),
        permissions=NOT_MINE | {"edit": True, "delete": True},
    )
    expected["target"]["node"] = {"id": "n1"}
    assert posted == expected
    assert await space_comments(client, sid, admin) == 1

    # Each caller's `permissions`, from the policy that guards the routes.
    r = await client.get(f"{url}/{cid}", headers=reader.headers)
    assert r.json() == expected | {"permissions": READ_ONLY}
    r = await client.get(f"{url}/{cid}", headers=other.headers)
    assert r.json() == expected | {"permissions": NOT_MINE}
    r = await client.get(f"{url}/{cid}", headers=admin.headers)
    assert r.json() == expected | {"permissions": ALL}

    # The JSON document form of the same text.
    r = await client.get(f"{url}/{cid}", params={"format": "document"}, headers=admin.headers)
    assert r.json()["body"] == {"document": md.to_document("Is this *right*?")}
    assert r.json()["body"]["document"]["nodes"][0]["type"] == "paragraph"
    # A comment posted as a document is kept as the markdown it maps to.
    r = await client.post(url, json={"body": r.json()["body"]}, headers=admin.headers)
    assert r.status_code == 200, r.text
    r = await client.get(
        f"{url}/{r.json()['id']}", params={"format": "markdown"}, headers=admin.headers
    )
    assert r.json()["body"] == {"markdown": "Is this _right_?\n"}
    r = await client.delete(f"{url}/{r.json()['id']}", headers=admin.headers)
    assert r.status_code == 205, r.text

    # A reply, then the comment's count and repliers.
    clock.advance(timedelta(seconds=1))
    r = await client.post(
        f"{url}/{cid}/replies", json={"body": {"markdown": "Yes."}}, headers=editor.headers
    )
    assert r.status_code == 200, r.text
    reply = r.json()
    rid = reply["id"]
    reply_expected = {
        "object": "comment-reply",
        "id": rid,
        "postedBy": user_body(editor),
        "postedAt": "2026-01-02T03:04:06.678Z",
        "reactions": [],
        "body": {"markdown": "Yes."},
        "urls": {"location": f"{BASE}{url}/{cid}/replies/{rid}"},
        "permissions": ALL,
    }
    assert reply == reply_expected
    r = await client.get(f"{url}/{cid}/replies", headers=editor.headers)
    assert r.json() == {"items": [reply_expected], "count": 1}
    r = await client.get(f"{url}/{cid}/replies/{rid}", headers=reader.headers)
    assert r.json() == reply_expected | {"permissions": READ_ONLY}
    r = await client.get(f"{url}/{cid}", headers=admin.headers)
    assert r.json()["replies"] == 1
    assert r.json()["repliers"] == [
        {"user": user_body(editor), "count": 1, "updatedAt": "2026-01-02T03:04:06.678Z"}
    ]

    # Edit (editedAt), then resolve (resolvedAt/resolvedBy) and reopen.
    r = await client.put(
        f"{url}/{cid}", json={"body": {"markdown": "Is this right?"}}, headers=commenter.headers
    )
    assert r.status_code == 200, r.text
    assert r.json()["body"] == {"markdown": "Is this right?"}
    assert r.json()["editedAt"] == "2026-01-02T03:04:06.678Z"
    r = await client.put(f"{url}/{cid}", json={"resolved": True}, headers=editor.headers)
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["resolvedAt"], r.json()["resolvedBy"]) == (
        "resolved",
        "2026-01-02T03:04:06.678Z",
        user_body(editor),
    )
    assert await space_comments(client, sid, admin) == 0
    # Resolving twice counts once.
    r = await client.put(f"{url}/{cid}", json={"resolved": True}, headers=admin.headers)
    assert r.json()["resolvedBy"] == user_body(editor)
    assert await space_comments(client, sid, admin) == 0
    r = await client.put(f"{url}/{cid}", json={"resolved": False}, headers=admin.headers)
    body = r.json()
    assert body["status"] == "open" and "resolvedAt" not in body and "resolvedBy" not in body
    assert await space_comments(client, sid, admin) == 1

    # Reply edit and delete.
    r = await client.put(
        f"{url}/{cid}/replies/{rid}", json={"body": {"markdown": "No."}}, headers=editor.headers
    )
    assert r.json() == reply_expected | {
        "body": {"markdown": "No."},
        "editedAt": "2026-01-02T03:04:06.678Z",
    }
    r = await client.delete(f"{url}/{cid}/replies/{rid}", headers=editor.headers)
    assert r.status_code == 205 and r.content == b""
    r = await client.get(f"{url}/{cid}/replies/{rid}", headers=editor.headers)
    assert r.json() == error(404, "Comment reply not found")

    # Delete by the author: 205, gone, and no longer counted.
    r = await client.delete(f"{url}/{cid}", headers=commenter.headers)
    assert r.status_code == 205 and r.content == b""
    r = await client.get(f"{url}/{cid}", headers=admin.headers)
    assert r.json() == error(404, "Comment not found")
    assert await space_comments(client, sid, admin) == 0


async def test_reactions(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _, (admin, editor, commenter, reader, other) = await setup(client, db)
    url = f"/v1/spaces/{space['id']}/comments"
    cid = (await post(client, url, admin, "Ship it"))["id"]
    for who in (commenter, commenter, other):  # the same reaction twice is one reaction
        r = await client.put(
            f"{url}/{cid}", json={"addedReactions": ["👍", "❤"]}, headers=who.headers
        )
        assert r.status_code == 200, r.text
        clock.advance(timedelta(seconds=1))
    users = [
        {"user": user_body(commenter), "reactedAt": TS},
        {"user": user_body(other), "reactedAt": "2026-01-02T03:04:07.678Z"},
    ]
    # ❤ and ❤️ are one emoji, kept in its fully-qualified form; emoji first given at the same
    # moment are listed by codepoint.
    assert r.json()["reactions"] == [
        {"emoji": "❤️", "count": 2, "users": users},
        {"emoji": "👍", "count": 2, "users": users},
    ]
    r = await client.put(
        f"{url}/{cid}", json={"removedReactions": ["❤️"]}, headers=commenter.headers
    )
    assert [(g["emoji"], g["count"]) for g in r.json()["reactions"]] == [("👍", 2), ("❤️", 1)]

    # Replies take reactions too.
    rid = (await post(client, f"{url}/{cid}/replies", editor, "Agreed"))["id"]
    r = await client.put(
        f"{url}/{cid}/replies/{rid}", json={"addedReactions": ["🎉"]}, headers=other.headers
    )
    assert r.json()["reactions"] == [
        {
            "emoji": "🎉",
            "count": 1,
            "users": [{"user": user_body(other), "reactedAt": "2026-01-02T03:04:08.678Z"}],
        }
    ]
    r = await client.get(f"{url}/{cid}", headers=admin.headers)
    assert [(g["emoji"], g["count"]) for g in r.json()["reactions"]] == [("👍", 2), ("❤️", 1)]

    # Not emoji: 400, and nothing changed.
    before = await snapshot(db)
    for bad in (["a"], ["👍👍"], [":thumbsup:"], ["1f44d"], [""]):
        r = await client.put(f"{url}/{cid}", json={"addedReactions": bad}, headers=other.headers)
        assert r.status_code == 400, (bad, r.text)
        assert "addedReactions" in r.json()["error"]["message"]
    r = await client.put(
        f"{url}/{cid}",
        json={"addedReactions": ["👍"], "removedReactions": ["👍"]},
        headers=other.headers,
    )
    assert r.json() == error(
        400, "Invalid body field 'removedReactions': 👍 is also in addedReactions"
    )
    # A reader may not react.
    r = await client.put(f"{url}/{cid}", json={"addedReactions": ["👍"]}, headers=reader.headers)
    assert r.json() == error(403, "You cannot react in this space")
    assert await snapshot(db) == before


async def test_permissions(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _, (admin, editor, commenter, reader, other) = await setup(client, db)
    sid = space["id"]
    url = f"/v1/spaces/{sid}/comments"
    cid = (await post(client, url, commenter, "Mine"))["id"]
    outsider = await factories.user(db)
    before = await snapshot(db)
    # No view right: the same 404 as a missing space, on every route.
    for method, path, body in (
        ("GET", url, None),
        ("POST", url, {"body": {"markdown": "x"}}),
        ("GET", f"{url}/{cid}", None),
        ("PUT", f"{url}/{cid}", {"resolved": True}),
        ("DELETE", f"{url}/{cid}", None),
        ("GET", f"{url}/{cid}/replies", None),
        ("POST", f"{url}/{cid}/replies", {"body": {"markdown": "x"}}),
        ("GET", f"/v1/spaces/{sid}/commenters", None),
    ):
        r = await client.request(method, path, json=body, headers=outsider.headers)
        assert r.json() == error(404, "Space not found"), (method, path)
    # View without the right: 403.
    r = await client.post(url, json={"body": {"markdown": "x"}}, headers=reader.headers)
    assert r.json() == error(403, "You cannot comment in this space")
    r = await client.post(
        f"{url}/{cid}/replies", json={"body": {"markdown": "x"}}, headers=reader.headers
    )
    assert r.json() == error(403, "You cannot comment in this space")
    changing = error(403, "Only its author or an admin of the space can change this")
    for who in (other, editor):  # neither the author nor an admin
        r = await client.put(f"{url}/{cid}", json={"body": {"markdown": "x"}}, headers=who.headers)
        assert r.json() == changing
        r = await client.delete(f"{url}/{cid}", headers=who.headers)
        assert r.json() == changing
    r = await client.put(f"{url}/{cid}", json={"resolved": True}, headers=commenter.headers)
    assert r.json() == error(403, "Only editors of the space can resolve comments")
    assert await snapshot(db) == before
    # A space admin may edit and delete anyone's comment.
    r = await client.put(
        f"{url}/{cid}", json={"body": {"markdown": "Tidied"}}, headers=admin.headers
    )
    assert r.status_code == 200 and r.json()["body"] == {"markdown": "Tidied"}
    r = await client.delete(f"{url}/{cid}", headers=admin.headers)
    assert r.status_code == 205


async def test_bad_input_changes_nothing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _, (admin, *_) = await setup(client, db)
    url = f"/v1/spaces/{space['id']}/comments"
    cid = (await post(client, url, admin, "Fine"))["id"]
    before = await snapshot(db)
    needs_text = (
        'Invalid body field \'body\': a comment needs text: give {"markdown": "..."}, not blank'
    )
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", url, {"body": {"markdown": ""}}, needs_text),
        ("POST", url, {"body": {"markdown": " \n\t"}}, needs_text),
        ("POST", url, {"body": {}}, needs_text),
        (
            "POST",
            url,
            {"body": {"document": {"object": "document", "data": {}, "nodes": []}}},
            needs_text,
        ),
        (
            "POST",
            url,
            {
                "body": {
                    "document": {"object": "document", "nodes": [{"object": "block", "type": "x"}]}
                }
            },
            "Invalid body field 'body': Invalid document: document.nodes[0].type: "
            "unknown or unsupported block type 'x'",
        ),
        (
            "POST",
            url,
            {"body": {"markdown": "a", "document": {"object": "document", "nodes": []}}},
            "Invalid body field 'body': give the comment as markdown or as a document, not both",
        ),
        (
            "POST",
            url,
            {"body": {"markdown": "x" * (MAX_MARKDOWN_BYTES + 1)}},
            f"Invalid body field 'body': markdown is {MAX_MARKDOWN_BYTES + 1} bytes; a comment "
            f"holds at most {MAX_MARKDOWN_BYTES}",
        ),
        (
            "POST",
            url,
            {"page": "nope", "body": {"markdown": "x"}},
            "Invalid body field 'page': no page 'nope' in the space's content",
        ),
        ("POST", f"{url}/{cid}/replies", {"body": {"markdown": ""}}, needs_text),
        ("PUT", f"{url}/{cid}", {"body": {"markdown": ""}}, needs_text),
        (
            "PUT",
            f"{url}/{cid}",
            {"resolved": None},
            "Invalid body field 'resolved': must not be null",
        ),
        (
            "PUT",
            f"{url}/{cid}",
            {"addedReactions": ["no"]},
            "Invalid body field 'addedReactions.0': not an emoji: give one emoji character, "
            "such as 👍",
        ),
    ]
    for method, path, body, message in cases:
        r = await client.request(method, path, json=body, headers=admin.headers)
        assert r.json() == error(400, message), (method, body)
    r = await client.get(url, params={"authors": ["x" * 65]}, headers=admin.headers)
    assert r.json() == error(
        400, "Invalid query parameter 'authors': at most 100 user ids of 1..64 characters"
    )
    assert await snapshot(db) == before


async def test_outdated_targets_are_never_lost(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, page_id, (admin, *_) = await setup(client, db)
    sid = space["id"]
    url = f"/v1/spaces/{sid}/comments"
    cid = (await post(client, url, admin, "On the intro", page=page_id))["id"]

    async def live(change: dict[str, Any]) -> None:
        r = await client.post(
            f"/v1/spaces/{sid}/content", json={"changes": [change]}, headers=admin.headers
        )
        assert r.status_code == 200, r.text

    # A new title alone leaves the commented text as it was.
    await live({"operation": "update_page", "page": page_id, "title": "Welcome"})
    r = await client.get(f"{url}/{cid}", headers=admin.headers)
    assert r.json()["target"]["page"] == page_target(page_id, title="Welcome")
    await live({"operation": "update_page", "page": page_id, "document": {"markdown": "Hello"}})
    r = await client.get(f"{url}/{cid}", headers=admin.headers)
    assert r.json()["target"]["page"] == page_target(page_id, title="Welcome", outdated=True)
    # Deleted: shown as it was where the comment was posted.
    await live({"operation": "delete_page", "page": page_id})
    r = await client.get(url, params={"targetPage": page_id}, headers=admin.headers)
    assert r.json() == {
        "items": [
            comment_body(
                cid, admin, space, markdown="On the intro", page=page_target(page_id, outdated=True)
            )
        ],
        "count": 1,
    }


async def test_list_filters_and_pages(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, page_id, (admin, editor, commenter, reader, other) = await setup(client, db)
    url = f"/v1/spaces/{space['id']}/comments"
    ids = []
    for who, page in ((admin, None), (commenter, page_id), (other, None), (commenter, None)):
        ids.append((await post(client, url, who, "c", **({"page": page} if page else {})))["id"])
        clock.advance(timedelta(seconds=1))
    r = await client.put(f"{url}/{ids[2]}", json={"resolved": True}, headers=editor.headers)
    assert r.status_code == 200

    async def listed(**params: Any) -> list[str]:
        r = await client.get(url, params=params, headers=reader.headers)
        assert r.status_code == 200, r.text
        return [c["id"] for c in r.json()["items"]]

    assert await listed() == ids[::-1]
    assert await listed(order="asc") == ids
    assert await listed(status="open") == [ids[3], ids[1], ids[0]]
    assert await listed(status="resolved") == [ids[2]]
    assert await listed(targetPage=page_id) == [ids[1]]
    assert await listed(authors=[commenter.id]) == [ids[3], ids[1]]
    assert await listed(authors=[commenter.id, other.id], order="asc") == ids[1:]
    # Keyset pages, with the count of the whole listing.
    seen, page = [], None
    while True:
        params: dict[str, Any] = {"limit": 1, "status": "open"}
        if page:
            params["page"] = page
        body = (await client.get(url, params=params, headers=reader.headers)).json()
        assert body["count"] == 3
        seen += [c["id"] for c in body["items"]]
        page = body.get("next", {}).get("page")
        if not page:
            break
    assert seen == [ids[3], ids[1], ids[0]]
    # Commenters: members who commented, as GitBook lists them (OrganizationMember).
    r = await client.get(f"/v1/spaces/{space['id']}/commenters", headers=reader.headers)
    expected = sorted(
        [
            member_body(admin, "admin"),
            member_body(commenter, "comment"),
            member_body(other, "comment"),
        ],
        key=lambda m: m["id"],
    )
    assert r.json() == {"items": expected, "count": 3, "total": 3}


async def test_change_request_comments(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, page_id, (admin, editor, commenter, *_) = await setup(client, db)
    sid = space["id"]
    r = await client.post(f"/v1/spaces/{sid}/change-requests", headers=editor.headers)
    cr = r.json()
    thread = f"/v1/spaces/{sid}/change-requests/{cr['id']}"
    posted = await post(client, f"{thread}/comments", commenter, "Typo here", page=page_id)
    cid = posted["id"]
    assert posted == comment_body(
        cid,
        commenter,
        space,
        markdown="Typo here",
        page=page_target(page_id),
        cr=cr["id"],
        revision=cr["revision"],
        permissions=NOT_MINE | {"edit": True, "delete": True},
    )
    # Counted on the change request, not on the space's main content.
    r = await client.get(thread, headers=admin.headers)
    assert r.json()["comments"] == 1
    assert await space_comments(client, sid, admin) == 0
    # The change request's number names it too; main's comments are elsewhere.
    r = await client.get(
        f"/v1/spaces/{sid}/change-requests/{cr['number']}/comments/{cid}", headers=admin.headers
    )
    assert r.json()["id"] == cid
    r = await client.get(f"/v1/spaces/{sid}/comments/{cid}", headers=admin.headers)
    assert r.json() == error(404, "Comment not found")
    r = await client.get(f"/v1/spaces/{sid}/comments", headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}
    # Replies, resolution and the counter.
    await post(client, f"{thread}/comments/{cid}/replies", editor, "Fixed")
    r = await client.put(
        f"{thread}/comments/{cid}", json={"resolved": True}, headers=editor.headers
    )
    assert r.json()["status"] == "resolved" and r.json()["replies"] == 1
    assert (await client.get(thread, headers=admin.headers)).json()["comments"] == 0
    r = await client.get(f"{thread}/commenters", headers=admin.headers)
    assert [m["id"] for m in r.json()["items"]] == sorted([commenter.id, editor.id])
    # A page the change request does not hold is refused.
    r = await client.post(
        f"{thread}/comments",
        json={"page": "nope", "body": {"markdown": "x"}},
        headers=admin.headers,
    )
    assert r.json() == error(
        400, "Invalid body field 'page': no page 'nope' in the change request's content"
    )
    r = await client.get(f"/v1/spaces/{sid}/change-requests/zz/comments", headers=admin.headers)
    assert r.json() == error(404, "Change request not found")


async def test_counters_exact_under_concurrency(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    space, _, (admin, editor, commenter, _reader, other) = await setup(client, db)
    sid = space["id"]
    url = f"/v1/spaces/{sid}/comments"
    target = (await post(client, url, admin, "React here"))["id"]
    writers = (admin, editor, commenter, other)

    async def patiently(send: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
        # As a client does with a 503 (busy: nothing was written) and its Retry-After: on a
        # loaded machine, 100 writes on one row can outwait the lock timeout.
        for _ in range(20):
            r = await send()
            if r.status_code != 503:
                return r
            await asyncio.sleep(float(r.headers["retry-after"]))
        return r

    async def comment(i: int) -> httpx.Response:
        who = writers[i % len(writers)]
        return await patiently(
            lambda: client.post(url, json={"body": {"markdown": f"#{i}"}}, headers=who.headers)
        )

    async def react(i: int) -> httpx.Response:
        who = writers[i % len(writers)]
        emoji = ("👍", "🎉")[i % 2]
        return await patiently(
            lambda: client.put(
                f"{url}/{target}", json={"addedReactions": [emoji]}, headers=who.headers
            )
        )

    answers = await asyncio.gather(*[comment(i) for i in range(50)], *[react(i) for i in range(50)])
    assert [r.status_code for r in answers] == [200] * 100, [
        r.text for r in answers if r.status_code != 200
    ]
    assert await space_comments(client, sid, admin) == 51
    r = await client.get(url, params={"limit": 0}, headers=admin.headers)
    assert r.json() == {"items": [], "count": 51}
    r = await client.get(f"{url}/{target}", headers=admin.headers)
    # Writers 0 and 2 only ever give 👍, 1 and 3 only 🎉: two users each, however often.
    assert [(g["emoji"], g["count"]) for g in r.json()["reactions"]] == [("🎉", 2), ("👍", 2)]
    # Resolving and deleting in parallel, each comment twice at once, counts each once.
    ids = [
        c["id"]
        for c in (await client.get(url, params={"limit": 50}, headers=admin.headers)).json()[
            "items"
        ]
    ]
    resolve = [
        patiently(
            lambda cid=cid: client.put(
                f"{url}/{cid}", json={"resolved": True}, headers=editor.headers
            )
        )
        for cid in ids[:20] * 2
    ]
    delete = [
        patiently(lambda cid=cid: client.delete(f"{url}/{cid}", headers=admin.headers))
        for cid in ids[20:30] * 2
    ]
    answers = await asyncio.gather(*resolve, *delete)
    assert {r.status_code for r in answers} <= {200, 205, 404}
    assert await space_comments(client, sid, admin) == 51 - 20 - 10
    r = await client.get(url, params={"status": "open", "limit": 0}, headers=admin.headers)
    assert r.json()["count"] == 21


async def test_a_duplicate_starts_without_comments(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, _, (admin, *_) = await setup(client, db)
    await post(client, f"/v1/spaces/{space['id']}/comments", admin, "Stays here")
    r = await client.post(f"/v1/spaces/{space['id']}/duplicate", headers=admin.headers)
    assert r.status_code == 201, r.text
    assert r.json()["comments"] == 0
    r = await client.get(f"/v1/spaces/{r.json()['id']}/comments", headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}
    assert await space_comments(client, space["id"], admin) == 1


async def test_costly_texts_are_parsed_before_the_write(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A text too costly to parse on the event loop goes to the offload pool first; past the
    markup bound it is refused like a page body, and nothing is written."""
    space, _, (admin, *_) = await setup(client, db)
    url = f"/v1/spaces/{space['id']}/comments"
    heavy = "*a* " * 3000
    assert md.costly(heavy)
    assert (await post(client, url, admin, heavy))["body"] == {"markdown": heavy}
    before = await snapshot(db)
    over = {"body": {"markdown": "[" * (MAX_MARKUP + 1)}}
    r = await client.post(url, json=over, headers=admin.headers)
    assert r.json() == error(
        400,
        f"Invalid body field 'body': markdown holds more than {MAX_MARKUP} markup characters "
        f"outside code ([ ] ! < * _ ` ~ & \\); a comment holds at most {MAX_MARKUP}",
    )
    assert await snapshot(db) == before
