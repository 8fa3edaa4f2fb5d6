from __future__ import annotations

from datetime import timedelta

import httpx
import jwt
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from tests import factories
from tests.helpers import error, member_body, snapshot


async def test_list_members_filters_sorts_and_pages(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    admin = await factories.user(db, name="Zed Admin", email="zed@acme.io")
    org_id = await factories.organization(db, owner=admin)
    clock.advance(timedelta(minutes=1))
    amy = await factories.user(db, name="Amy", email="amy@acme.io")
    await factories.member(db, org=org_id, who=amy, role="edit")
    clock.advance(timedelta(minutes=1))
    guest = await factories.user(db, name="Guest Person", email="g@else.org")
    await factories.member(db, org=org_id, who=guest, role=None)
    h = admin.headers

    r = await client.get(f"/v1/orgs/{org_id}/members", headers=h)
    assert r.status_code == 200
    body = r.json()
    assert [m["id"] for m in body["items"]] == [guest.id, amy.id, admin.id]  # joinedAt desc
    assert body["count"] == 3 and "next" not in body
    assert body["items"][2] == member_body(admin, "admin")

    r = await client.get(f"/v1/orgs/{org_id}/members", params={"role": "guest"}, headers=h)
    assert [m["id"] for m in r.json()["items"]] == [guest.id]
    r = await client.get(f"/v1/orgs/{org_id}/members", params={"role": "edit"}, headers=h)
    assert [m["id"] for m in r.json()["items"]] == [amy.id]
    r = await client.get(f"/v1/orgs/{org_id}/members", params={"search": "ACME.io"}, headers=h)
    assert {m["id"] for m in r.json()["items"]} == {admin.id, amy.id}
    r = await client.get(f"/v1/orgs/{org_id}/members", params={"search": "%"}, headers=h)
    assert r.json() == {"items": [], "count": 0}
    r = await client.get(
        f"/v1/orgs/{org_id}/members", params={"sort": "name", "order": "asc"}, headers=h
    )
    assert [m["id"] for m in r.json()["items"]] == [amy.id, guest.id, admin.id]

    # Keyset pages in name order, one at a time, visit everyone once.
    seen, page = [], None
    while True:
        params = {"sort": "name", "order": "asc", "limit": 1, **({"page": page} if page else {})}
        r = await client.get(f"/v1/orgs/{org_id}/members", params=params, headers=h)
        seen += [m["id"] for m in r.json()["items"]]
        assert r.json()["count"] == 3
        if "next" not in r.json():
            break
        page = r.json()["next"]["page"]
    assert seen == [amy.id, guest.id, admin.id]

    # A cursor from one sort cannot continue another.
    r = await client.get(f"/v1/orgs/{org_id}/members", params={"limit": 1}, headers=h)
    cursor = r.json()["next"]["page"]
    r = await client.get(
        f"/v1/orgs/{org_id}/members", params={"sort": "name", "page": cursor}, headers=h
    )
    assert r.status_code == 400

    # lastSeenAt lists only members seen at least once.
    assert (await client.post(f"/v1/orgs/{org_id}/ping", headers=amy.headers)).status_code == 200
    r = await client.get(f"/v1/orgs/{org_id}/members", params={"sort": "lastSeenAt"}, headers=h)
    assert r.json() == {
        "items": [
            member_body(amy, "edit", last_seen="2026-01-02T03:06:05.678Z")
            | {"joinedAt": "2026-01-02T03:05:05.678Z"}
        ],
        "count": 1,
    }


async def test_guests_cannot_list_members(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    r = await client.get(f"/v1/orgs/{org_id}/members", headers=guest.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Guests cannot list the organization's members"),
    )
    r = await client.get(f"/v1/orgs/{org_id}/members/{admin.id}", headers=guest.headers)
    assert r.status_code == 403
    r = await client.get(f"/v1/orgs/{org_id}/members/{guest.id}", headers=guest.headers)
    assert r.json() == member_body(guest, None)


async def test_change_role_and_last_admin_rule(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    url = f"/v1/orgs/{org_id}/members"
    r = await client.patch(f"{url}/{editor.id}", json={"role": "admin"}, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can change member roles"),
    )
    r = await client.patch(f"{url}/{editor.id}", json={"role": "review"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (200, member_body(editor, "review"))
    r = await client.patch(f"{url}/{editor.id}", json={"role": None}, headers=admin.headers)
    assert r.json() == member_body(editor, None)

    before = await snapshot(db)
    r = await client.patch(f"{url}/{admin.id}", json={"role": "edit"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        409,
        error(409, "Cannot demote the last admin of the organization"),
    )
    r = await client.delete(f"{url}/{admin.id}", headers=admin.headers)
    assert (r.status_code, r.json()) == (
        409,
        error(409, "Cannot remove the last admin of the organization"),
    )
    assert await snapshot(db) == before

    # With a second admin, the first may step down.
    await client.patch(f"{url}/{editor.id}", json={"role": "admin"}, headers=admin.headers)
    r = await client.patch(f"{url}/{admin.id}", json={"role": "read"}, headers=admin.headers)
    assert r.json() == member_body(admin, "read")
    r = await client.get(f"{url}/nobody", headers=editor.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Member not found"))


async def test_remove_member_and_leave(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, a, b) = await factories.org_with_members(db, "edit", "read")
    url = f"/v1/orgs/{org_id}/members"
    r = await client.delete(f"{url}/{b.id}", headers=a.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can remove members"),
    )
    r = await client.delete(f"{url}/{a.id}", headers=a.headers)  # leaving
    assert r.status_code == 204 and r.content == b""
    r = await client.delete(f"{url}/{b.id}", headers=admin.headers)
    assert r.status_code == 204
    r = await client.get(url, headers=admin.headers)
    assert [m["id"] for m in r.json()["items"]] == [admin.id]


async def test_ping_and_sso(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    r = await client.post(f"/v1/orgs/{org_id}/ping", headers=editor.headers)
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"serviceVisitorClaims", "gitbookVisitorClaims"}
    assert body["serviceVisitorClaims"] == body["gitbookVisitorClaims"]
    claims = jwt.decode(body["serviceVisitorClaims"], options={"verify_signature": False})
    assert claims == {
        "iss": "http://testserver",
        "sub": editor.id,
        "org": org_id,
        "role": "edit",
        "iat": 1767323045,
        "exp": 1767326645,
    }
    r = await client.get(f"/v1/orgs/{org_id}/members/{editor.id}", headers=admin.headers)
    assert r.json() == member_body(editor, "edit", last_seen="2026-01-02T03:04:05.678Z")

    r = await client.post(f"/v1/orgs/{org_id}/members/{editor.id}/sso", headers=editor.headers)
    assert r.status_code == 403
    r = await client.post(f"/v1/orgs/{org_id}/members/{editor.id}/sso", headers=admin.headers)
    assert r.json() == member_body(editor, "edit", sso=True, last_seen="2026-01-02T03:04:05.678Z")


async def test_member_spaces_is_an_empty_listing(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    r = await client.get(f"/v1/orgs/{org_id}/members/{editor.id}/spaces", headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}
    r = await client.get(f"/v1/orgs/{org_id}/members/nobody/spaces", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Member not found"))


async def test_concurrent_demotions_keep_one_admin(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    import asyncio

    org_id, (first, second) = await factories.org_with_members(db, "admin")
    for _ in range(3):
        results = await asyncio.gather(
            client.patch(
                f"/v1/orgs/{org_id}/members/{second.id}",
                json={"role": "read"},
                headers=first.headers,
            ),
            client.patch(
                f"/v1/orgs/{org_id}/members/{first.id}",
                json={"role": "read"},
                headers=second.headers,
            ),
        )
        statuses = sorted(r.status_code for r in results)
        # One demotion wins; the other finds its caller no longer admin (403) or the last
        # admin (409). Never both.
        assert statuses[0] == 200 and statuses[1] in (403, 409), [r.text for r in results]
        r = await client.get(
            f"/v1/orgs/{org_id}/members", params={"role": "admin"}, headers=first.headers
        )
        admins = [m["id"] for m in r.json()["items"]]
        assert len(admins) == 1
        # Restore both as admins for the next round.
        (winner,) = admins
        loser = second if winner == first.id else first
        headers = first.headers if winner == first.id else second.headers
        r = await client.patch(
            f"/v1/orgs/{org_id}/members/{loser.id}", json={"role": "admin"}, headers=headers
        )
        assert r.status_code == 200
