from __future__ import annotations

from datetime import timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from tests import factories
from tests.helpers import error, member_body, snapshot


async def test_link_invite_lifecycle_and_join(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    url = f"/v1/orgs/{org_id}/link-invites"
    r = await client.post(url, json={"role": "comment"}, headers=admin.headers)
    assert r.status_code == 201
    first = r.json()["id"]
    assert r.json() == {"object": "invite", "id": first, "role": "comment", "redundant": False}
    clock.advance(timedelta(seconds=1))
    r = await client.post(url, json={"role": "comment"}, headers=admin.headers)
    second = r.json()["id"]
    assert r.json() == {"object": "invite", "id": second, "role": "comment", "redundant": True}
    r = await client.patch(f"{url}/{second}", json={"level": "read"}, headers=admin.headers)
    assert r.json() == {"object": "invite", "id": second, "role": "read", "redundant": False}
    r = await client.get(url, headers=admin.headers)
    assert r.json()["count"] == 2
    # Others cannot list the organization's links; the links to content they administer are
    # under content-link-invites: here none.
    r = await client.get(url, headers=editor.headers)
    assert r.json() == error(403, "You cannot view this organization's invite links")
    r = await client.get(f"/v1/orgs/{org_id}/content-link-invites", headers=editor.headers)
    assert (r.status_code, r.json()) == (200, {"items": [], "count": 0})

    newcomer = await factories.user(db)
    joined = member_body(newcomer, "comment") | {"joinedAt": "2026-01-02T03:04:06.678Z"}
    r = await client.post(f"/v1/orgs/{org_id}/invites/{first}", headers=newcomer.headers)
    assert (r.status_code, r.json()) == (200, joined)
    # Joining again with a lower role keeps the higher one.
    r = await client.post(f"/v1/orgs/{org_id}/invites/{second}", headers=newcomer.headers)
    assert r.json() == joined
    r = await client.get(f"/v1/orgs/{org_id}", headers=newcomer.headers)
    assert r.status_code == 200

    r = await client.delete(f"{url}/{first}", headers=admin.headers)
    assert r.status_code == 205
    stranger = await factories.user(db)
    r = await client.post(f"/v1/orgs/{org_id}/invites/{first}", headers=stranger.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Invite not found"))


async def test_disabled_invite_links_refuse_joining(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    r = await client.post(
        f"/v1/orgs/{org_id}/link-invites", json={"role": None}, headers=admin.headers
    )
    invite = r.json()["id"]
    assert r.json()["role"] is None
    await client.patch(f"/v1/orgs/{org_id}", json={"inviteLinks": False}, headers=admin.headers)
    stranger = await factories.user(db)
    before = await snapshot(db)
    r = await client.post(f"/v1/orgs/{org_id}/invites/{invite}", headers=stranger.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Invite links are disabled for this organization"),
    )
    assert await snapshot(db) == before


async def test_update_invite_needs_exactly_one_of_role_or_level(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    r = await client.post(
        f"/v1/orgs/{org_id}/link-invites", json={"role": "read"}, headers=admin.headers
    )
    url = f"/v1/orgs/{org_id}/link-invites/{r.json()['id']}"
    for body in ({}, {"role": "read", "level": "edit"}):
        r = await client.patch(url, json=body, headers=admin.headers)
        assert (r.status_code, r.json()) == (
            400,
            error(400, "Invalid body field: exactly one of 'role' or 'level' is required"),
        )


async def test_content_admins_list_the_links_to_their_content(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, creator) = await factories.org_with_members(db, "create")
    mine = await factories.api_space(client, org_id, creator, title="Mine")
    assert mine["permissions"]["viewInviteLinks"] is True
    theirs = await factories.api_space(client, org_id, admin, title="Theirs", visibility="unlisted")
    url = f"/v1/orgs/{org_id}/link-invites"
    r = await client.post(url, json={"level": "read", "space": mine["id"]}, headers=creator.headers)
    assert r.status_code == 201
    own_link = r.json()["id"]
    r = await client.post(url, json={"level": "read", "space": theirs["id"]}, headers=admin.headers)
    assert r.status_code == 201
    r = await client.post(url, json={"role": "read"}, headers=admin.headers)
    org_link = r.json()["id"]
    content = f"/v1/orgs/{org_id}/content-link-invites"
    r = await client.get(content, headers=creator.headers)
    assert [i["id"] for i in r.json()["items"]] == [own_link]
    assert r.json()["count"] == 1
    r = await client.get(content, headers=admin.headers)
    assert r.json()["count"] == 2
    r = await client.get(content, params={"space": theirs["id"]}, headers=admin.headers)
    assert [i["space"]["id"] for i in r.json()["items"]] == [theirs["id"]]
    # The organization's list holds only organization invites, for its admins.
    r = await client.get(url, headers=admin.headers)
    assert [(i["id"], i["role"]) for i in r.json()["items"]] == [(org_link, "read")]
    r = await client.get(url, headers=creator.headers)
    assert r.json() == error(403, "You cannot view this organization's invite links")
