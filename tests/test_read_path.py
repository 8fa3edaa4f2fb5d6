"""The read path keeps every promise on every process: two app instances (two API processes of
one install) on the same database; a change made through one is obeyed by the other on the
very next request. Nothing on the read path that depends on permissions is kept across requests
(ARCHITECTURE.md, "What a read keeps"), and these tests would hold any such cache to the same
promise: each read before a change below is made twice, so the one after it follows a repeat.
The last test runs them all across two real `docshelf serve` processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.auth.service import revoke_token
from docshelf.config import Settings
from docshelf.kit.db import unit_of_work
from tests import factories
from tests.helpers import error, second_app
from tests.server import Server


async def twice(client: httpx.AsyncClient, path: str, headers: dict[str, str]) -> httpx.Response:
    """Reads twice and insists on the same answer: whatever the read path may keep from the
    first read, the read after the next change follows it."""
    first = await client.get(path, headers=headers)
    again = await client.get(path, headers=headers)
    assert (again.status_code, again.content) == (first.status_code, first.content)
    return again


@pytest.fixture
async def other(settings: Settings, app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A second API process of the same install (its own engine and connections)."""
    async with second_app(settings) as c:
        yield c


async def test_a_revoked_token_is_refused_by_the_other_process_at_once(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, visibility="public")
    for path in (f"/v1/orgs/{org_id}", f"/v1/spaces/{space['id']}"):
        assert (await twice(other, path, headers=reader.headers)).status_code == 200
    async with unit_of_work(db) as conn:
        await revoke_token(conn, reader.token)
    for path in (f"/v1/orgs/{org_id}", f"/v1/spaces/{space['id']}"):
        r = await twice(other, path, headers=reader.headers)
        assert (r.status_code, r.json()) == (401, error(401, "Invalid or revoked API token"))


async def test_a_removed_member_is_refused_by_the_other_process_at_once(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    space = await factories.api_space(client, org_id, admin, visibility="public")
    assert (await twice(other, f"/v1/orgs/{org_id}", headers=editor.headers)).status_code == 200
    assert (
        await twice(other, f"/v1/spaces/{space['id']}", headers=editor.headers)
    ).status_code == 200
    r = await client.delete(f"/v1/orgs/{org_id}/members/{editor.id}", headers=admin.headers)
    assert r.status_code == 204, r.text
    r = await twice(other, f"/v1/orgs/{org_id}", headers=editor.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Organization not found"))
    r = await twice(other, f"/v1/spaces/{space['id']}", headers=editor.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Space not found"))


async def test_a_changed_role_is_obeyed_by_the_other_process_at_once(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, member) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, visibility="public")
    before_org = (await twice(other, f"/v1/orgs/{org_id}", headers=member.headers)).json()
    before_space = (await twice(other, f"/v1/spaces/{space['id']}", headers=member.headers)).json()
    assert before_org["permissions"]["admin"] is False
    assert before_space["permissions"]["admin"] is False
    r = await client.patch(
        f"/v1/orgs/{org_id}/members/{member.id}", json={"role": "admin"}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    after_org = (await twice(other, f"/v1/orgs/{org_id}", headers=member.headers)).json()
    after_space = (await twice(other, f"/v1/spaces/{space['id']}", headers=member.headers)).json()
    assert after_org["permissions"]["admin"] is True
    assert after_space["permissions"]["admin"] is True
    # And back down: a lowered role is obeyed as promptly as a raised one.
    r = await client.patch(
        f"/v1/orgs/{org_id}/members/{member.id}", json={"role": "read"}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    assert (await twice(other, f"/v1/orgs/{org_id}", headers=member.headers)).json() == before_org
    r = await twice(other, f"/v1/spaces/{space['id']}", headers=member.headers)
    assert r.json() == before_space


async def test_a_deleted_space_is_refused_by_the_other_process_at_once(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, visibility="public")
    assert (
        await twice(other, f"/v1/spaces/{space['id']}", headers=reader.headers)
    ).status_code == 200
    r = await client.delete(f"/v1/spaces/{space['id']}", headers=admin.headers)
    assert r.status_code == 205, r.text
    r = await twice(other, f"/v1/spaces/{space['id']}", headers=reader.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Space not found"))


async def test_a_removed_grant_is_obeyed_by_the_other_process_at_once(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    space = await factories.api_space(client, org_id, admin)
    url = f"/v1/spaces/{space['id']}/permissions"
    r = await client.post(url, json={"users": [guest.id], "role": "edit"}, headers=admin.headers)
    assert r.status_code == 204, r.text
    r = await twice(other, f"/v1/spaces/{space['id']}", headers=guest.headers)
    assert (r.status_code, r.json()["permissions"]["edit"]) == (200, True)
    r = await client.post(url, json={"users": [guest.id], "role": None}, headers=admin.headers)
    assert r.status_code == 204, r.text
    r = await twice(other, f"/v1/spaces/{space['id']}", headers=guest.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Space not found"))


async def test_two_real_server_processes_keep_every_promise(
    settings: Settings, db: AsyncEngine, tmp_path: Path
) -> None:
    """The same promises across two `docshelf serve` processes on one database (on PostgreSQL
    the scale path's stateless API processes): each change is made through process A, or on
    the database for a revoked token, and obeyed by process B's very next request."""
    org_id, (admin, member, guest, gone, reader) = await factories.org_with_members(
        db, "read", None, "read", "read"
    )
    servers = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        servers.append(Server(settings, tmp_path / name))
    try:
        for server in servers:
            server.start()
        async with (
            httpx.AsyncClient(base_url=servers[0].base) as on_a,
            httpx.AsyncClient(base_url=servers[1].base) as on_b,
        ):
            r = await on_a.post(
                f"/v1/orgs/{org_id}/spaces", json={"title": "Two"}, headers=admin.headers
            )
            assert r.status_code == 201, r.text
            org_path, space_path = f"/v1/orgs/{org_id}", f"/v1/spaces/{r.json()['id']}"
            grants = f"{space_path}/permissions"
            edit = {"users": [guest.id, reader.id], "role": "edit"}
            assert (await on_a.post(grants, json=edit, headers=admin.headers)).status_code == 204
            assert (await twice(on_b, space_path, headers=guest.headers)).status_code == 200
            assert (await twice(on_b, org_path, headers=gone.headers)).status_code == 200
            r = await twice(on_b, org_path, headers=member.headers)
            assert r.json()["permissions"]["admin"] is False

            async with unit_of_work(db) as conn:
                await revoke_token(conn, gone.token)
            r = await twice(on_b, org_path, headers=gone.headers)
            assert (r.status_code, r.json()) == (401, error(401, "Invalid or revoked API token"))

            member_path = f"{org_path}/members/{member.id}"
            r = await on_a.patch(member_path, json={"role": "admin"}, headers=admin.headers)
            assert r.status_code == 200, r.text
            r = await twice(on_b, org_path, headers=member.headers)
            assert r.json()["permissions"]["admin"] is True

            revoke = {"users": [guest.id], "role": None}
            assert (await on_a.post(grants, json=revoke, headers=admin.headers)).status_code == 204
            r = await twice(on_b, space_path, headers=guest.headers)
            assert (r.status_code, r.json()) == (404, error(404, "Space not found"))

            assert (await on_a.delete(member_path, headers=admin.headers)).status_code == 204
            r = await twice(on_b, org_path, headers=member.headers)
            assert (r.status_code, r.json()) == (404, error(404, "Organization not found"))

            assert (await twice(on_b, space_path, headers=reader.headers)).status_code == 200
            assert (await on_a.delete(space_path, headers=admin.headers)).status_code == 205
            r = await twice(on_b, space_path, headers=reader.headers)
            assert (r.status_code, r.json()) == (404, error(404, "Space not found"))
    finally:
        for server in servers:
            server.stop()


async def test_content_moves_and_goes_on_the_other_process_at_once(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A revision read is kept by its id (it never changes): a new head is read at once, and
    a deleted space's revisions are refused, on the process that kept them."""
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, editMode="live")
    sid = space["id"]

    async def edit(title: str) -> str:
        change = {"operation": "insert_page", "title": title, "document": {"markdown": title}}
        r = await client.post(
            f"/v1/spaces/{sid}/content", json={"changes": [change]}, headers=admin.headers
        )
        assert r.status_code == 200, r.text
        return str(r.json()["revision"])

    first = await edit("One")
    r = await twice(other, f"/v1/spaces/{sid}/content", headers=reader.headers)
    assert (r.json()["id"], [p["title"] for p in r.json()["pages"]]) == (first, ["One"])
    second = await edit("Two")
    r = await twice(other, f"/v1/spaces/{sid}/content", headers=reader.headers)
    assert (r.json()["id"], [p["title"] for p in r.json()["pages"]]) == (second, ["One", "Two"])
    old = f"/v1/spaces/{sid}/revisions/{first}"
    assert [p["title"] for p in (await twice(other, old, reader.headers)).json()["pages"]] == [
        "One"
    ]
    r = await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)
    assert r.status_code == 205, r.text
    for path in (f"/v1/spaces/{sid}/content", old):
        r = await twice(other, path, headers=reader.headers)
        assert (r.status_code, r.json()) == (404, error(404, "Space not found")), path


async def test_links_follow_main_and_each_caller_on_the_other_process(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A page of the links listing, and how each page in it is presented, is kept by revision
    (links.service): a new head is read at once; the organization and the space around each
    location carry the permissions of whoever asks."""
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, editMode="live")
    sid = space["id"]

    async def edit(*changes: dict[str, object]) -> dict[str, str]:
        r = await client.post(
            f"/v1/spaces/{sid}/content", json={"changes": list(changes)}, headers=admin.headers
        )
        assert r.status_code == 200, r.text
        return {c["ref"]: c["page"]["id"] for c in r.json()["changes"] if "ref" in c}

    ids = await edit(
        {"operation": "insert_page", "title": "Target", "ref": "t", "document": {"markdown": "T"}},
        {
            "operation": "insert_page",
            "title": "Source",
            "ref": "s",
            "document": {"markdown": "[t](target.md) [gone](missing.md)\n"},
        },
    )
    links = f"/v1/spaces/{sid}/links"

    def seen(listing: dict[str, object]) -> list[tuple[str, str]]:
        items = listing["items"]
        assert isinstance(items, list)
        return sorted(
            (i["status"], i.get("targetReference", {}).get("page", {}).get("title", "?"))
            for i in items
        )

    r = await twice(other, links, headers=reader.headers)
    assert seen(r.json()) == [("broken", "?"), ("ok", "Target")]
    assert (r.json()["count"], r.json()["stats"]["broken"]["total"]) == (2, 1)
    as_reader = r.json()["items"][0]["locationReferences"][0]
    r = await twice(other, links, headers=admin.headers)
    as_admin = r.json()["items"][0]["locationReferences"][0]
    assert (as_reader["page"], as_reader["versionContext"]) == (
        as_admin["page"],
        as_admin["versionContext"],
    )
    assert as_reader["space"]["permissions"]["edit"] is False
    assert as_admin["space"]["permissions"]["edit"] is True
    assert as_admin["organization"]["permissions"]["admin"] is True
    assert as_reader["organization"]["permissions"]["admin"] is False

    # The target is renamed, then goes, then the source links to a new page: the other process
    # follows each move, the pages presented in it included.
    await edit({"operation": "update_page", "page": ids["t"], "title": "Renamed"})
    r = await twice(other, links, headers=reader.headers)
    assert seen(r.json()) == [("broken", "?"), ("ok", "Renamed")]
    await edit({"operation": "delete_page", "page": ids["t"]})
    r = await twice(other, links, headers=reader.headers)
    assert seen(r.json()) == [("broken", "?"), ("broken", "?")]
    assert (r.json()["count"], r.json()["stats"]["broken"]["total"]) == (2, 2)
    await edit(
        {"operation": "insert_page", "title": "Missing", "document": {"markdown": "M"}},
        {
            "operation": "update_page",
            "page": ids["s"],
            "document": {"markdown": "[t](target.md) [here](missing.md)\n"},
        },
    )
    r = await twice(other, links, headers=reader.headers)
    assert seen(r.json()) == [("broken", "?"), ("ok", "Missing")]
    page_links = f"/v1/spaces/{sid}/content/page/{ids['s']}/links"
    r = await twice(other, page_links, headers=reader.headers)
    assert seen(r.json()) == [("broken", "?"), ("ok", "Missing")]
