from __future__ import annotations

from datetime import timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from tests import factories
from tests.helpers import error, member_body, org_body, org_permissions, snapshot, team_body


async def test_team_lifecycle(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, a, b) = await factories.org_with_members(db, "edit", "read")
    url = f"/v1/orgs/{org_id}/teams"
    r = await client.put(
        url, json={"title": "Writers", "members": [a.id, b.email]}, headers=admin.headers
    )
    assert r.status_code == 201
    team_id = r.json()["id"]
    assert r.json() == team_body(team_id, "Writers", members=2)

    r = await client.get(f"{url}/{team_id}", headers=a.headers)
    assert r.json() == team_body(team_id, "Writers", members=2, admin=False)
    r = await client.patch(f"{url}/{team_id}", json={"title": "Editors"}, headers=admin.headers)
    assert r.json() == team_body(team_id, "Editors", members=2)
    r = await client.patch(f"{url}/{team_id}", json={"title": "Nope"}, headers=a.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can rename teams"),
    )

    r = await client.get(f"{url}/{team_id}/members", headers=admin.headers)
    assert r.json() == {
        "items": [
            {
                "organization": member_body(m, role, teams=1),
                "team": {"role": "member"},
                "permissions": {"view": True},
            }
            for m, role in sorted([(a, "edit"), (b, "read")], key=lambda p: p[0].id)
        ],
        "count": 2,
    }
    r = await client.get(f"/v1/orgs/{org_id}/members/{a.id}/teams", headers=admin.headers)
    assert r.json() == {
        "items": [{"team": team_body(team_id, "Editors", members=2), "member": {"role": "member"}}],
        "count": 1,
    }
    r = await client.get(
        f"/v1/orgs/{org_id}/members/{a.id}/teams", params={"title": "zzz"}, headers=admin.headers
    )
    assert r.json() == {"items": [], "count": 0}

    r = await client.delete(f"{url}/{team_id}", headers=a.headers)
    assert r.status_code == 403
    r = await client.delete(f"{url}/{team_id}", headers=admin.headers)
    assert r.status_code == 204
    r = await client.get(f"{url}/{team_id}", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Team not found"))
    r = await client.get(f"/v1/orgs/{org_id}/members/{a.id}", headers=admin.headers)
    assert r.json()["teams"] == 0


async def test_create_team_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    outsider = await factories.user(db)
    before = await snapshot(db)
    r = await client.put(f"/v1/orgs/{org_id}/teams", json={"title": "X"}, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can create teams"),
    )
    r = await client.put(
        f"/v1/orgs/{org_id}/teams",
        json={"title": "X", "members": [outsider.id]},
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Not members of the organization: {outsider.id}"),
    )
    assert await snapshot(db) == before


async def test_list_teams_filters(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, owner, guest) = await factories.org_with_members(db, "edit", None)
    url = f"/v1/orgs/{org_id}/teams"
    ids = []
    for title in ("Alpha", "Beta", "alphabet"):
        r = await client.put(url, json={"title": title}, headers=admin.headers)
        ids.append(r.json()["id"])
        clock.advance(timedelta(seconds=1))
    await client.put(
        f"{url}/{ids[1]}/members/{owner.id}", json={"role": "owner"}, headers=admin.headers
    )

    r = await client.get(url, params={"title": "ALPHA"}, headers=admin.headers)
    assert [t["id"] for t in r.json()["items"]] == [ids[0], ids[2]]
    r = await client.get(url, params={"owner": owner.id}, headers=admin.headers)
    assert [t["id"] for t in r.json()["items"]] == [ids[1]]
    r = await client.get(url, params={"owner": admin.id}, headers=admin.headers)
    assert [t["id"] for t in r.json()["items"]] == ids
    r = await client.get(url, params={"limit": 2}, headers=admin.headers)
    page2 = await client.get(
        url, params={"limit": 2, "page": r.json()["next"]["page"]}, headers=admin.headers
    )
    assert [t["id"] for t in r.json()["items"] + page2.json()["items"]] == ids
    r = await client.get(url, headers=guest.headers)
    assert (r.status_code, r.json()) == (403, error(403, "Guests cannot list teams"))


async def test_bulk_membership_update(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, a, b, c) = await factories.org_with_members(db, "edit", "read", "comment")
    r = await client.put(
        f"/v1/orgs/{org_id}/teams", json={"title": "T", "members": [c.id]}, headers=admin.headers
    )
    team = f"/v1/orgs/{org_id}/teams/{r.json()['id']}"
    r = await client.put(
        f"{team}/members",
        json={
            "add": [a.email, b.id],
            "remove": [b.email, c.id],
            "memberships": {a.id: {"role": "owner"}},
        },
        headers=admin.headers,
    )
    assert r.status_code == 204
    r = await client.get(f"{team}/members", headers=admin.headers)
    assert [(i["organization"]["id"], i["team"]["role"]) for i in r.json()["items"]] == [
        (a.id, "owner")
    ]

    # An owner manages the team's members; other members cannot.
    r = await client.put(f"{team}/members/{b.id}", headers=a.headers)
    assert r.status_code == 204
    r = await client.put(f"{team}/members/{c.id}", json={"role": "owner"}, headers=b.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins and the team's owners can manage its members"),
    )
    r = await client.delete(f"{team}/members/{b.id}", headers=a.headers)
    assert r.status_code == 204
    r = await client.delete(f"{team}/members/{b.id}", headers=a.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Team member not found"))
    r = await client.put(f"{team}/members/nobody", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Member not found"))
    r = await client.get(team, headers=a.headers)
    assert r.json()["permissions"] == {"admin": True, "view": True}
    r = await client.get(f"/v1/orgs/{org_id}", headers=a.headers)
    assert r.json() == org_body(org_id, "edit") | {
        "permissions": org_permissions("edit", owns_team=True)
    }

    before = await snapshot(db)
    r = await client.put(
        f"{team}/members", json={"add": ["ghost@nowhere.org"]}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Not members of the organization: ghost@nowhere.org"),
    )
    assert await snapshot(db) == before


async def test_removing_member_drops_team_memberships(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, a) = await factories.org_with_members(db, "edit")
    r = await client.put(
        f"/v1/orgs/{org_id}/teams", json={"title": "T", "members": [a.id]}, headers=admin.headers
    )
    team_id = r.json()["id"]
    await client.delete(f"/v1/orgs/{org_id}/members/{a.id}", headers=admin.headers)
    r = await client.get(f"/v1/orgs/{org_id}/teams/{team_id}", headers=admin.headers)
    assert r.json()["members"] == 0


async def test_memberships_naming_one_user_twice(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, a) = await factories.org_with_members(db, "edit")
    r = await client.put(f"/v1/orgs/{org_id}/teams", json={"title": "T"}, headers=admin.headers)
    team = f"/v1/orgs/{org_id}/teams/{r.json()['id']}"
    r = await client.put(
        f"{team}/members",
        json={"memberships": {a.id: {"role": "member"}, a.email: {"role": "owner"}}},
        headers=admin.headers,
    )
    assert r.status_code == 204
    r = await client.get(f"{team}/members", headers=admin.headers)
    assert [(i["organization"]["id"], i["team"]["role"]) for i in r.json()["items"]] == [
        (a.id, "owner")
    ]


async def test_a_guest_owner_manages_their_team(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, guest, other) = await factories.org_with_members(db, None, "read")
    r = await client.put(
        f"/v1/orgs/{org_id}/teams", json={"title": "Partners"}, headers=admin.headers
    )
    team = f"/v1/orgs/{org_id}/teams/{r.json()['id']}"
    r = await client.put(
        f"{team}/members/{guest.id}", json={"role": "owner"}, headers=admin.headers
    )
    assert r.status_code == 204
    r = await client.get(team, headers=guest.headers)
    assert (r.status_code, r.json()["permissions"]) == (200, {"admin": True, "view": True})
    r = await client.put(f"{team}/members/{other.id}", headers=guest.headers)
    assert r.status_code == 204
    r = await client.get(f"/v1/orgs/{org_id}/teams", headers=guest.headers)
    assert r.status_code == 403  # the organization's team list stays closed to guests


async def test_a_guest_member_does_not_see_the_team(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    r = await client.put(
        f"/v1/orgs/{org_id}/teams",
        json={"title": "T", "members": [guest.id]},
        headers=admin.headers,
    )
    team = f"/v1/orgs/{org_id}/teams/{r.json()['id']}"
    for url in (team, f"{team}/members"):
        r = await client.get(url, headers=guest.headers)
        assert (r.status_code, r.json()) == (403, error(403, "Guests cannot view teams"))
