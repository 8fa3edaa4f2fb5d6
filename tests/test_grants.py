"""Grants on spaces and collections, the aggregate of access, member and team space counts,
invite links to content, and a space's custom field values."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from tests import factories
from tests.helpers import error, snapshot, team_body, user_body


async def _space(
    client: httpx.AsyncClient, org_id: str, headers: dict[str, str], **body: Any
) -> str:
    """Without a visibility: a space members reach only through grants (`defaultLevel: null`;
    a new space inherits the organization role, as in GitBook)."""
    r = await client.post(
        f"/v1/orgs/{org_id}/spaces", json={"title": "Docs", **body}, headers=headers
    )
    assert r.status_code == 201, r.text
    space_id = str(r.json()["id"])
    if "visibility" not in body and "parent" not in body:
        r = await client.patch(
            f"/v1/spaces/{space_id}", json={"defaultLevel": None}, headers=headers
        )
        assert r.status_code == 200, r.text
    return space_id


async def test_space_grants_lifecycle(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, a, b) = await factories.org_with_members(db, "read", "comment")
    h = admin.headers
    space = await _space(client, org_id, h)
    r = await client.put(
        f"/v1/orgs/{org_id}/teams", json={"title": "Writers", "members": [b.id]}, headers=h
    )
    team_id = r.json()["id"]
    base = f"/v1/spaces/{space}/permissions"

    assert (await client.get(f"/v1/spaces/{space}", headers=a.headers)).status_code == 404
    r = await client.post(
        base, json={"role": "edit", "users": [a.id], "teams": [team_id]}, headers=h
    )
    assert (r.status_code, r.content) == (204, b"")
    r = await client.get(f"{base}/users", headers=h)
    assert r.json() == {"items": [{"permission": "edit", "user": user_body(a)}], "count": 1}
    r = await client.get(f"{base}/teams", headers=h)
    assert r.json() == {
        "items": [
            {"permission": "edit", "team": team_body(team_id, "Writers", members=1) | {"spaces": 1}}
        ],
        "count": 1,
    }
    assert (await client.get(f"/v1/spaces/{space}", headers=a.headers)).json()["permissions"][
        "edit"
    ] is True

    r = await client.patch(f"{base}/users/{a.id}", json={"role": "review"}, headers=h)
    assert r.status_code == 204
    r = await client.get(f"{base}/aggregate", headers=h)
    expected = sorted(
        [
            {"permission": "admin", "user": user_body(admin)},
            {"permission": "review", "user": user_body(a)},
            {"permission": "edit", "user": user_body(b)},
        ],
        key=lambda item: item["user"]["id"],
    )
    assert r.json() == {"items": expected, "count": 3}
    r = await client.get(f"{base}/aggregate", params={"role": "edit"}, headers=h)
    assert r.json() == {"items": [{"permission": "edit", "user": user_body(b)}], "count": 1}
    r = await client.get(f"{base}/aggregate", params={"limit": 2}, headers=h)
    page2 = await client.get(
        f"{base}/aggregate", params={"limit": 2, "page": r.json()["next"]["page"]}, headers=h
    )
    assert r.json()["items"] + page2.json()["items"] == expected
    assert "next" not in page2.json()

    # Member and team counts and the member's spaces follow the grants.
    r = await client.get(f"/v1/orgs/{org_id}/members/{a.id}", headers=h)
    assert r.json()["spaces"] == 1
    r = await client.get(f"/v1/orgs/{org_id}/members/{a.id}/spaces", headers=h)
    assert [
        (i["permission"], i["space"]["id"], i["space"]["permissions"]["admin"])
        for i in r.json()["items"]
    ] == [("review", space, True)]

    r = await client.delete(f"{base}/users/{a.id}", headers=h)
    assert r.status_code == 204
    r = await client.delete(f"{base}/users/{a.id}", headers=h)
    assert (r.status_code, r.json()) == (404, error(404, "Permission not found"))
    r = await client.delete(f"{base}/teams/{team_id}", headers=h)
    assert r.status_code == 204
    assert (await client.get(f"/v1/spaces/{space}", headers=a.headers)).status_code == 404
    assert (await client.get(f"/v1/orgs/{org_id}/members/{a.id}/spaces", headers=h)).json() == {
        "items": [],
        "count": 0,
    }


async def test_grant_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    outsider = await factories.user(db)
    space = await _space(client, org_id, admin.headers, visibility="unlisted")
    base = f"/v1/spaces/{space}/permissions"
    before = await snapshot(db)
    r = await client.post(
        base, json={"role": "read", "users": [outsider.id]}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Invalid body field 'users': not members of the organization: {outsider.id}"),
    )
    r = await client.post(base, json={"role": "read", "teams": ["nope"]}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'teams': no such teams: nope"),
    )
    r = await client.post(base, json={"role": "read"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field: give 'users' and/or 'teams'"),
    )
    r = await client.post(base, json={"role": "read", "users": [editor.id]}, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only admins of the space can manage its permissions"),
    )
    r = await client.patch(
        f"{base}/users/{editor.id}", json={"role": "read"}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (404, error(404, "Permission not found"))
    assert await snapshot(db) == before


async def test_collection_grants_flow_to_spaces(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    h = admin.headers
    r = await client.post(f"/v1/orgs/{org_id}/collections", json={"title": "Team docs"}, headers=h)
    collection = r.json()["id"]
    space = await _space(client, org_id, h, parent=collection)
    assert (await client.get(f"/v1/spaces/{space}", headers=guest.headers)).status_code == 404
    r = await client.post(
        f"/v1/collections/{collection}/permissions",
        json={"role": "comment", "users": [guest.id]},
        headers=h,
    )
    assert r.status_code == 204
    r = await client.get(f"/v1/spaces/{space}", headers=guest.headers)
    assert (r.status_code, r.json()["permissions"]["comment"], r.json()["permissions"]["edit"]) == (
        200,
        True,
        False,
    )
    r = await client.get(f"/v1/collections/{collection}/permissions/users", headers=h)
    assert r.json() == {"items": [{"permission": "comment", "user": user_body(guest)}], "count": 1}
    r = await client.get(f"/v1/collections/{collection}/permissions/aggregate", headers=h)
    assert {(i["user"]["id"], i["permission"]) for i in r.json()["items"]} == {
        (admin.id, "admin"),
        (guest.id, "comment"),
    }
    # role null removes the grant
    r = await client.post(
        f"/v1/collections/{collection}/permissions",
        json={"role": None, "users": [guest.id]},
        headers=h,
    )
    assert r.status_code == 204
    assert (await client.get(f"/v1/spaces/{space}", headers=guest.headers)).status_code == 404


async def test_invite_links_to_content(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    space = await _space(client, org_id, h)
    r = await client.post(
        f"/v1/orgs/{org_id}/link-invites", json={"level": "comment", "space": space}, headers=h
    )
    assert r.status_code == 201
    invite = r.json()
    space_body = (await client.get(f"/v1/spaces/{space}", headers=h)).json()
    assert invite == {
        "object": "invite",
        "id": invite["id"],
        "level": "comment",
        "space": space_body,
        "redundant": False,
    }
    r = await client.post(
        f"/v1/orgs/{org_id}/link-invites", json={"level": "read", "space": "nope"}, headers=h
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'space': space 'nope' not found"),
    )
    r = await client.post(
        f"/v1/orgs/{org_id}/link-invites", json={"role": "read", "space": space}, headers=h
    )
    assert r.status_code == 400

    clock.advance(timedelta(seconds=1))
    newcomer = await factories.user(db)
    r = await client.post(f"/v1/orgs/{org_id}/invites/{invite['id']}", headers=newcomer.headers)
    assert r.status_code == 200
    assert (r.json()["role"], r.json()["spaces"]) == (None, 1)  # a guest with one space
    r = await client.get(f"/v1/spaces/{space}", headers=newcomer.headers)
    assert r.json()["permissions"]["comment"] is True and r.json()["permissions"]["edit"] is False
    r = await client.get(f"/v1/orgs/{org_id}/spaces", headers=newcomer.headers)
    assert [s["id"] for s in r.json()["items"]] == [space]

    r = await client.post(f"/v1/orgs/{org_id}/collections", json={"title": "C"}, headers=h)
    collection = r.json()["id"]
    r = await client.post(
        f"/v1/orgs/{org_id}/link-invites",
        json={"level": "edit", "collection": collection},
        headers=h,
    )
    assert (r.json()["level"], r.json()["collection"]["id"]) == ("edit", collection)
    r = await client.patch(
        f"/v1/orgs/{org_id}/link-invites/{r.json()['id']}", json={"level": None}, headers=h
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'level': an invite to content needs a level"),
    )


async def test_space_custom_fields(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    h = admin.headers
    space = await _space(client, org_id, h, visibility="unlisted")
    for body in (
        {"name": "audience", "type": "select:single", "options": ["internal", "public"]},
        {"name": "tags", "type": "tags"},
        {"name": "pages", "type": "number"},
    ):
        clock.advance(timedelta(seconds=1))
        assert (
            await client.post(f"/v1/orgs/{org_id}/custom-fields", json=body, headers=h)
        ).status_code == 201
    url = f"/v1/spaces/{space}/custom-fields"
    r = await client.patch(
        url,
        json={"values": {"audience": {"value": "public"}, "tags": {"value": ["a", "b"]}}},
        headers=h,
    )
    assert r.status_code == 204
    r = await client.get(url, headers=reader.headers)
    assert [(i["customField"]["name"], i.get("value")) for i in r.json()] == [
        ("audience", "public"),
        ("tags", ["a", "b"]),
        ("pages", None),
    ]
    before = await snapshot(db)
    for values, message in (
        ({"audience": {"value": "secret"}}, "Invalid body field 'values.audience.value'"),
        ({"nope": {"value": 1}}, "Invalid body field 'values': unknown custom fields: nope"),
        (
            {"pages": {"value": 3}, "tags": {"value": "not-a-list"}},
            "Invalid body field 'values.tags.value'",
        ),
    ):
        r = await client.patch(url, json={"values": values}, headers=h)
        assert r.status_code == 400 and r.json()["error"]["message"].startswith(message), r.text
    r = await client.patch(url, json={"values": {"pages": {"value": 3}}}, headers=reader.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "You cannot edit this space's custom fields"),
    )
    assert await snapshot(db) == before
    r = await client.patch(url, json={"values": {"tags": {"value": None}}}, headers=h)
    assert r.status_code == 204
    r = await client.get(url, headers=h)
    assert [i.get("value") for i in r.json()] == ["public", None, None]


async def test_share_key_opens_a_share_link_space(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    space = await _space(client, org_id, admin.headers, visibility="share-link")
    # Admins read the secret link from the space's published URL.
    published = (await client.get(f"/v1/spaces/{space}", headers=admin.headers)).json()["urls"]
    prefix = f"http://testserver/s/{space}/?shareKey="
    assert published["published"].startswith(prefix)
    key = published["published"].removeprefix(prefix)
    assert len(key) >= 32
    r = await client.get(f"/v1/spaces/{space}", headers=guest.headers)
    assert r.status_code == 404
    r = await client.get(f"/v1/spaces/{space}", params={"shareKey": "wrong"}, headers=guest.headers)
    assert r.status_code == 404
    r = await client.get(f"/v1/spaces/{space}", params={"shareKey": key}, headers=guest.headers)
    assert r.status_code == 200
    readable = {"view", "access"}
    assert r.json()["permissions"] == {k: k in readable for k in r.json()["permissions"]}
    assert len(r.json()["permissions"]) == 10
    # The key opens nothing but reading, and only while the space is a share-link space.
    r = await client.patch(
        f"/v1/spaces/{space}", json={"visibility": "private"}, headers=admin.headers
    )
    assert r.status_code == 200
    r = await client.get(f"/v1/spaces/{space}", params={"shareKey": key}, headers=guest.headers)
    assert r.status_code == 404


async def test_removed_member_loses_content_access(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    space = await _space(client, org_id, admin.headers)
    r = await client.post(
        f"/v1/spaces/{space}/permissions",
        json={"role": "admin", "users": [editor.id]},
        headers=admin.headers,
    )
    assert r.status_code == 204
    assert (await client.get(f"/v1/spaces/{space}", headers=editor.headers)).status_code == 200
    assert (
        await client.delete(f"/v1/orgs/{org_id}/members/{editor.id}", headers=admin.headers)
    ).status_code == 204
    for method, url, body in (
        ("GET", f"/v1/spaces/{space}", None),
        ("PATCH", f"/v1/spaces/{space}", {"title": "Mine now"}),
    ):
        r = await client.request(method, url, json=body, headers=editor.headers)
        assert (r.status_code, r.json()) == (404, error(404, "Space not found"))
    r = await client.get(f"/v1/spaces/{space}/permissions/users", headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}


async def test_invite_to_a_deleted_space_leads_nowhere(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await _space(client, org_id, admin.headers)
    r = await client.post(
        f"/v1/orgs/{org_id}/link-invites",
        json={"level": "admin", "space": space},
        headers=admin.headers,
    )
    invite = r.json()["id"]
    assert (await client.delete(f"/v1/spaces/{space}", headers=admin.headers)).status_code == 205
    stranger = await factories.user(db)
    before = await snapshot(db)
    r = await client.post(f"/v1/orgs/{org_id}/invites/{invite}", headers=stranger.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Invite not found"))
    assert await snapshot(db) == before
    r = await client.get(f"/v1/orgs/{org_id}/content-link-invites", headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}
    assert (
        await client.post(f"/v1/spaces/{space}/restore", headers=admin.headers)
    ).status_code == 200
    r = await client.get(f"/v1/orgs/{org_id}/content-link-invites", headers=admin.headers)
    assert [i["id"] for i in r.json()["items"]] == [invite]


async def test_collection_creator_administers_it(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (_, creator, reader) = await factories.org_with_members(db, "create", "read")
    r = await client.post(
        f"/v1/orgs/{org_id}/collections", json={"title": "Mine"}, headers=creator.headers
    )
    collection = r.json()["id"]
    assert r.json()["permissions"] == {
        "view": True,
        "admin": True,
        "viewInviteLinks": True,
        "create": True,
    }
    r = await client.patch(
        f"/v1/collections/{collection}", json={"title": "Renamed"}, headers=creator.headers
    )
    assert (r.status_code, r.json()["title"]) == (200, "Renamed")
    r = await client.patch(
        f"/v1/collections/{collection}", json={"title": "X"}, headers=reader.headers
    )
    assert r.status_code in (403, 404)


async def test_a_members_spaces_as_another_member_sees_them(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Both callers' visibility in one statement: each with its own grants (the member's
    spaces that the caller may see too), never one caller's ids standing in for the other's."""
    org_id, (admin, a, b) = await factories.org_with_members(db, "read", "read")
    ids = {}
    for title, readers in (("Only A", [a]), ("Only B", [b]), ("Both", [a, b])):
        space = await factories.api_space(client, org_id, admin, title=title, default_level=None)
        body = {"role": "read", "users": [who.id for who in readers]}
        r = await client.post(
            f"/v1/spaces/{space['id']}/permissions", json=body, headers=admin.headers
        )
        assert r.status_code == 204, r.text
        ids[title] = space["id"]
    r = await client.get(f"/v1/orgs/{org_id}/members/{a.id}/spaces", headers=b.headers)
    assert r.status_code == 200, r.text
    assert [(i["permission"], i["space"]["id"]) for i in r.json()["items"]] == [
        ("read", ids["Both"])
    ]
    assert r.json()["count"] == 1
    r = await client.get(f"/v1/orgs/{org_id}/members/{a.id}/spaces", headers=admin.headers)
    assert sorted(i["space"]["id"] for i in r.json()["items"]) == sorted(
        [ids["Only A"], ids["Both"]]
    )


async def test_direct_and_team_grants_count_together(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A member's own grants and their teams' are one set on every read path (a space, a
    collection, the organization's listing): on one target the highest counts, whichever way
    it came."""
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    h = admin.headers
    r = await client.put(
        f"/v1/orgs/{org_id}/teams", json={"title": "T", "members": [guest.id]}, headers=h
    )
    team = r.json()["id"]
    r = await client.post(f"/v1/orgs/{org_id}/collections", json={"title": "C"}, headers=h)
    collection = r.json()["id"]
    team_higher, direct_higher, team_only = [await _space(client, org_id, h) for _ in range(3)]
    hidden = await _space(client, org_id, h)
    for target, body in (
        (f"spaces/{team_higher}", {"role": "read", "users": [guest.id]}),
        (f"spaces/{team_higher}", {"role": "edit", "teams": [team]}),
        (f"spaces/{direct_higher}", {"role": "edit", "users": [guest.id]}),
        (f"spaces/{direct_higher}", {"role": "read", "teams": [team]}),
        (f"spaces/{team_only}", {"role": "comment", "teams": [team]}),
        (f"collections/{collection}", {"role": "review", "teams": [team]}),
    ):
        r = await client.post(f"/v1/{target}/permissions", json=body, headers=h)
        assert r.status_code == 204, r.text
    for space, can_edit, can_comment in (
        (team_higher, True, True),
        (direct_higher, True, True),
        (team_only, False, True),
    ):
        r = await client.get(f"/v1/spaces/{space}", headers=guest.headers)
        assert r.status_code == 200, (space, r.text)
        assert (r.json()["permissions"]["edit"], r.json()["permissions"]["comment"]) == (
            can_edit,
            can_comment,
        )
    r = await client.get(f"/v1/spaces/{hidden}", headers=guest.headers)
    assert r.status_code == 404
    r = await client.get(f"/v1/collections/{collection}", headers=guest.headers)
    assert (r.status_code, r.json()["permissions"]["view"]) == (200, True)
    r = await client.get(f"/v1/orgs/{org_id}/spaces", headers=guest.headers)
    assert {i["id"] for i in r.json()["items"]} == {team_higher, direct_higher, team_only}


async def test_a_teams_spaces_count_its_collections(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """GitBook's Team.spaces, "the count of spaces this team has access to": granted directly,
    or through a collection granted to it at any depth; deleted spaces are not counted."""
    org_id, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    r = await client.put(f"/v1/orgs/{org_id}/teams", json={"title": "Writers"}, headers=h)
    team = r.json()["id"]
    outer = (await factories.api_collection(client, org_id, admin, title="Outer"))["id"]
    inner = (await factories.api_collection(client, org_id, admin, title="In", parent=outer))["id"]
    other = (await factories.api_collection(client, org_id, admin, title="Other"))["id"]
    in_outer = await _space(client, org_id, h, parent=outer)
    in_inner = await _space(client, org_id, h, parent=inner)
    await _space(client, org_id, h, parent=other)
    loose = await _space(client, org_id, h)

    async def counted() -> int:
        listed = (await client.get(f"/v1/orgs/{org_id}/teams", headers=h)).json()["items"]
        one = (await client.get(f"/v1/orgs/{org_id}/teams/{team}", headers=h)).json()
        assert [t["spaces"] for t in listed] == [one["spaces"]]
        return int(one["spaces"])

    assert await counted() == 0
    grant = {"role": "edit", "teams": [team]}
    r = await client.post(f"/v1/collections/{outer}/permissions", json=grant, headers=h)
    assert r.status_code == 204, r.text
    assert await counted() == 2  # in_outer, and in_inner below it
    r = await client.post(f"/v1/spaces/{loose}/permissions", json=grant, headers=h)
    assert r.status_code == 204, r.text
    r = await client.post(f"/v1/spaces/{in_inner}/permissions", json=grant, headers=h)
    assert await counted() == 3  # a space reached twice counts once
    assert (await client.delete(f"/v1/spaces/{in_outer}", headers=h)).status_code == 205
    assert await counted() == 2
