"""Listings cost one page: counts carried by the cursor, visibility without per-item parameters,
collection trees of any size, moves that write few rows."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.authz.content import ContentScope
from docshelf.collection import ordering
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.models import collections, content_objects, members, spaces
from tests import factories
from tests.helpers import error, executed, snapshot


async def test_count_is_taken_on_the_first_page_and_carried(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, *_) = await factories.org_with_members(db, "read", "read", "read")
    url = f"/v1/orgs/{org_id}/members"
    first = (await client.get(url, params={"limit": 2}, headers=admin.headers)).json()
    assert first["count"] == 4 and len(first["items"]) == 2
    # Someone joins between pages: the paging goes on with the count it began with.
    late = await factories.user(db)
    await factories.member(db, org=org_id, who=late, role="read")
    second = (
        await client.get(
            url, params={"limit": 2, "page": first["next"]["page"]}, headers=admin.headers
        )
    ).json()
    assert second["count"] == 4
    fresh = (await client.get(url, params={"limit": 2}, headers=admin.headers)).json()
    assert fresh["count"] == 5

    # The cursor belongs to its listing: another sort refuses it and changes nothing.
    before = await snapshot(db)
    r = await client.get(
        url,
        params={"limit": 2, "sort": "name", "page": first["next"]["page"]},
        headers=admin.headers,
    )
    assert r.json() == error(
        400, "Invalid query parameter 'page': not a cursor returned by this listing"
    )
    assert await snapshot(db) == before


async def test_a_first_page_holding_the_whole_listing_is_counted_without_a_statement(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, *_) = await factories.org_with_members(db, "read", "read")
    url = f"/v1/orgs/{org_id}/members"
    counts: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT COUNT(*)"):
            counts.append(statement)

    sa.event.listen(sa.Engine, "before_cursor_execute", seen)
    try:
        # The whole listing on its first page, exactly full, past it, and asked for none.
        pages = [
            (await client.get(url, params=p, headers=admin.headers)).json()
            for p in ({}, {"limit": 3}, {"limit": 2}, {"limit": 0})
        ]
    finally:
        sa.event.remove(sa.Engine, "before_cursor_execute", seen)
    assert [(len(p["items"]), p["count"], "next" in p) for p in pages] == [
        (3, 3, False),
        (3, 3, False),
        (2, 3, True),
        (0, 3, False),
    ]
    # Counted apart only where the page could not tell: past it, and when asked for none.
    assert len(counts) == 2


def _statement(clause: sa.ColumnElement[bool]) -> sa.Select[Any]:
    table = collections if "collections" in str(clause) else spaces
    return sa.select(sa.func.count()).select_from(table).where(clause)


async def test_visibility_sql_has_one_parameter_per_list_whatever_the_tree(
    db: AsyncEngine,
) -> None:
    """40,000 collections, each granted: the clauses still carry a handful of parameters (the
    ids travel as one JSON array), and the database runs them."""
    ids = [f"c{i:05d}" for i in range(40_000)]
    scope = ContentScope(
        org_id="o",
        user_id="u",
        is_member=True,
        org_role="read",
        tree={c: ("", "inherit") for c in ids},
        grants={("collection", c): "admin" for c in ids} | {("space", c): "read" for c in ids},
    )
    collections_clause, values = scope.visible_collections()
    clauses = [
        scope.visible_spaces_clause(),
        collections_clause.params(values),
        scope.administered_spaces_clause(),
    ]
    for dialect in (sqlite.dialect(), postgresql.dialect()):
        for clause in clauses:
            compiled = _statement(clause).compile(dialect=dialect)
            assert len(compiled.params) < 12 and "json" in str(compiled).lower()
            assert ")) = 1" not in str(compiled)
    async with db.connect() as conn:
        for clause in clauses:
            assert (await conn.execute(_statement(clause))).scalar() == 0


async def test_deep_and_wide_collection_trees(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    """A member granted the top of a 200-deep chain reads the space at its bottom (the space
    request loads only that chain); 3,000 sibling collections list and page as before."""
    org_id, (admin, reader) = await factories.org_with_members(db, None)
    now = utcnow()
    chain = [f"deep{i:04d}" for i in range(200)]
    wide = [f"wide{i:04d}" for i in range(3000)]
    async with unit_of_work(db) as conn:
        rows = [
            {
                "id": cid,
                "organization_id": org_id,
                "parent_id": chain[i - 1] if i else None,
                "title": cid,
                "default_level": "inherit",
                "position": 0,
                "created_at": now,
                "updated_at": now,
            }
            for i, cid in enumerate(chain)
        ] + [
            {
                "id": cid,
                "organization_id": org_id,
                "parent_id": None,
                "title": cid,
                "default_level": "inherit",
                "position": i + 1,
                "created_at": now,
                "updated_at": now,
            }
            for i, cid in enumerate(wide)
        ]
        await conn.execute(sa.insert(collections), rows)
    space = await factories.api_space(
        client, org_id, admin, parent=chain[-1], visibility="in-collection"
    )
    r = await client.get(f"/v1/spaces/{space['id']}", headers=reader.headers)
    assert r.json() == error(404, "Space not found")
    r = await client.post(
        f"/v1/collections/{chain[0]}/permissions",
        json={"role": "read", "users": [reader.id]},
        headers=admin.headers,
    )
    assert r.status_code == 204, r.text
    r = await client.get(f"/v1/spaces/{space['id']}", headers=reader.headers)
    assert r.status_code == 200 and r.json()["id"] == space["id"]
    r = await client.get(f"/v1/collections/{chain[-1]}/spaces", headers=reader.headers)
    assert [s["id"] for s in r.json()["items"]] == [space["id"]]
    r = await client.get(f"/v1/orgs/{org_id}/spaces", headers=reader.headers)
    assert [s["id"] for s in r.json()["items"]] == [space["id"]]
    r = await client.get(f"/v1/orgs/{org_id}/collections", headers=admin.headers)
    assert r.json()["count"] == 3200

    # Moving the top of the chain under its bottom is refused; the chain is unchanged.
    before = await snapshot(db)
    r = await client.post(
        f"/v1/collections/{chain[0]}/move", json={"parent": chain[-1]}, headers=admin.headers
    )
    assert r.json() == error(
        400, "Invalid body field 'parent': a collection cannot move into itself or a descendant"
    )
    assert await snapshot(db) == before
    # Deleting the top removes the whole chain and soft-deletes the space.
    r = await client.delete(f"/v1/collections/{chain[0]}", headers=admin.headers)
    assert r.status_code == 205
    async with db.connect() as conn:
        left = (await conn.execute(sa.select(sa.func.count()).select_from(collections))).scalar()
    assert left == 3000


async def _live(client: httpx.AsyncClient, sid: str, who: Any, changes: list[Any]) -> Any:
    r = await client.post(
        f"/v1/spaces/{sid}/content", json={"changes": changes}, headers=who.headers
    )
    assert r.status_code == 200, r.text
    return r.json()


async def test_revision_changes_are_bounded_by_limit_with_the_same_answers(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Any `limit` shows a prefix of the whole list and the same total (`more`), whether the
    changes are creations, deletions, moves, edits, record-only changes or files."""
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    sid = space["id"]
    ids: dict[str, str] = {}
    for start in range(0, 240, 50):
        body = await _live(
            client,
            sid,
            admin,
            [
                {
                    "operation": "insert_page",
                    "title": f"Page {i}",
                    "ref": f"p{i}",
                    "document": {"markdown": f"text {i}"},
                }
                for i in range(start, min(start + 50, 240))
            ],
        )
        ids |= {c["ref"]: c["page"]["id"] for c in body["changes"] if "ref" in c}
    changes: list[Any] = []
    for i in range(0, 240, 3):
        changes.append({"operation": "delete_page", "page": ids[f"p{i}"]})
    for i in range(1, 240, 6):
        changes.append({"operation": "update_page", "page": ids[f"p{i}"], "title": f"T{i}"})
    for i in range(2, 240, 9):
        # A move and an edit: two changes for one page; its new parent shows nothing.
        changes.append(
            {
                "operation": "update_page",
                "page": ids[f"p{i}"],
                "into": ids["p4"],
                "document": {"markdown": "moved"},
            }
        )
    changes.append(
        {
            "operation": "insert_files",
            "files": [
                {"name": f"f{i}.txt", "base64": "YQ==", "contentType": "text/plain"}
                for i in range(5)
            ],
        }
    )
    changes += [
        {"operation": "insert_page", "title": f"New {i}", "document": {"markdown": "n"}}
        for i in range(30)
    ]
    cr = (await client.post(f"/v1/spaces/{sid}/change-requests", headers=admin.headers)).json()
    for start in range(0, len(changes), 50):
        r = await client.post(
            f"/v1/spaces/{sid}/change-requests/{cr['id']}/content",
            json={"changes": changes[start : start + 50]},
            headers=admin.headers,
        )
        assert r.status_code == 200, r.text
    url = f"/v1/spaces/{sid}/change-requests/{cr['id']}/changes"
    whole = (await client.get(url, params={"limit": 1000}, headers=admin.headers)).json()
    total = len(whole["changes"])
    assert "more" not in whole
    assert total == 80 + 40 + 2 * 27 + 5 + 30
    assert [c["type"] for c in whole["changes"][-5:]] == ["file_created"] * 5
    for limit in (0, 1, 10, 99, 100, 101, 150, 188, 209, 300):
        got = (await client.get(url, params={"limit": limit}, headers=admin.headers)).json()
        assert got["changes"] == whole["changes"][:limit]
        assert got.get("more") == (total - limit if total > limit else None)


async def test_aggregate_equals_each_members_resolved_role(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """The aggregate, now one SQL statement per page, names exactly the members (and roles)
    the in-memory resolver gives, for collections and spaces under several default levels."""
    org_id, people = await factories.org_with_members(
        db, None, "read", "comment", "edit", "create", "admin", "read"
    )
    admin, guest, reader, commenter, *_, other = people
    h = admin.headers
    team = (
        await client.put(
            f"/v1/orgs/{org_id}/teams",
            json={"title": "T", "members": [guest.id, reader.id]},
            headers=h,
        )
    ).json()["id"]
    top = await factories.api_collection(client, org_id, admin, title="Top")
    mid = await factories.api_collection(client, org_id, admin, title="Mid", parent=top["id"])
    await client.patch(f"/v1/collections/{top['id']}", json={"defaultLevel": "comment"}, headers=h)
    await client.patch(f"/v1/collections/{mid['id']}", json={"defaultLevel": "inherit"}, headers=h)
    await client.post(
        f"/v1/collections/{top['id']}/permissions",
        json={"role": "review", "teams": [team]},
        headers=h,
    )
    await client.post(
        f"/v1/collections/{mid['id']}/permissions",
        json={"role": "create", "users": [commenter.id]},
        headers=h,
    )
    inside = await factories.api_space(client, org_id, admin, parent=mid["id"])
    private = await factories.api_space(client, org_id, admin, visibility="private")
    await client.post(
        f"/v1/spaces/{private['id']}/permissions",
        json={"role": "edit", "users": [other.id], "teams": [team]},
        headers=h,
    )
    unlisted = await factories.api_space(client, org_id, admin, visibility="unlisted")
    r = await client.patch(f"/v1/spaces/{unlisted['id']}", json={"defaultLevel": "read"}, headers=h)
    assert r.status_code == 200, r.text
    targets = [
        ("collection", top["id"], "collections"),
        ("collection", mid["id"], "collections"),
        ("space", inside["id"], "spaces"),
        ("space", private["id"], "spaces"),
        ("space", unlisted["id"], "spaces"),
    ]
    async with db.connect() as conn:
        for kind, tid, path in targets:
            expected = {}
            for who in people:
                scope = await ContentScope.load(conn, org_id, who.id)
                if kind == "collection":
                    got = scope.collection_role(tid)
                else:
                    row = (
                        (await conn.execute(sa.select(spaces).where(spaces.c.id == tid)))
                        .mappings()
                        .one()
                    )
                    got = scope.space_role(row)
                if got is not None:
                    expected[who.id] = got
            if kind == "space":
                # The batch resolver (requested reviewers) gives each member the same role.
                members_roles = {
                    r.user_id: r.role
                    for r in await conn.execute(
                        sa.select(members.c.user_id, members.c.role).where(
                            members.c.organization_id == org_id
                        )
                    )
                }
                batch = await ContentScope.near_members(
                    conn, org_id, members_roles, row["parent_id"]
                )
                assert {
                    uid: role
                    for uid, scope in batch.items()
                    if (role := scope.space_role(row)) is not None
                } == {uid: role for uid, role in expected.items() if uid in members_roles}
            for role in (None, "read", "review", "create", "admin"):
                params: dict[str, Any] = {"limit": 2}
                if role:
                    params["role"] = role
                seen: dict[str, str] = {}
                while True:
                    r = await client.get(
                        f"/v1/{path}/{tid}/permissions/aggregate", params=params, headers=h
                    )
                    body = r.json()
                    seen |= {i["user"]["id"]: i["permission"] for i in body["items"]}
                    want = {u: x for u, x in expected.items() if role is None or x == role}
                    assert body["count"] == len(want)
                    if "next" not in body:
                        break
                    params["page"] = body["next"]["page"]
                assert seen == want, (kind, tid, role)


async def test_a_move_writes_one_row_until_a_gap_closes(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    folder = await factories.api_collection(client, org_id, admin, title="Folder")
    items = [
        ("space", (await factories.api_space(client, org_id, admin, parent=folder["id"]))["id"])
        for _ in range(8)
    ]

    async def positions() -> dict[str, int]:
        async with db.connect() as conn:
            rows = await conn.execute(sa.select(spaces.c.id, spaces.c.position))
            return {r.id: r.position for r in rows}

    async def order() -> list[Any]:
        async with db.connect() as conn:
            return await ordering.siblings(conn, org_id, folder["id"])

    assert await order() == items
    expected = list(items)
    # Moving the last one before the second again and again halves one gap until it closes;
    # the order always matches the pure placement.
    for _ in range(14):
        before = await positions()
        moving = expected[-1]
        r = await client.post(
            f"/v1/spaces/{moving[1]}/move",
            json={"position": {"before": {"type": "space", "space": expected[1][1]}}},
            headers=admin.headers,
        )
        assert r.status_code == 200, r.text
        expected = ordering.place(expected, moving, before=expected[1], after=None)
        assert await order() == expected
        after = await positions()
        changed = {k for k in after if after[k] != before[k]}
        assert changed == {moving[1]} or changed == {i for _, i in expected[1:]}


async def test_duplicate_copies_what_the_head_reaches(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A space with history: the copy holds the head's objects only, reads the same content,
    lists the same links and finds the same pages, and edits on from there."""
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    sid = space["id"]
    body = await _live(
        client,
        sid,
        admin,
        [
            {
                "operation": "insert_page",
                "title": f"Page {i}",
                "ref": f"p{i}",
                "document": {"markdown": f"zebra {i} [next](page-{i + 1}.md) [gone](gone.md)"},
            }
            for i in range(6)
        ],
    )
    ids = {c["ref"]: c["page"]["id"] for c in body["changes"] if "ref" in c}
    for round_ in range(3):  # history the copy must not carry
        await _live(
            client,
            sid,
            admin,
            [
                {
                    "operation": "update_page",
                    "page": ids["p0"],
                    "document": {"markdown": f"old text {round_}"},
                }
            ],
        )
    await _live(client, sid, admin, [{"operation": "delete_page", "page": ids["p5"]}])
    r = await client.post(f"/v1/spaces/{sid}/duplicate", headers=admin.headers)
    assert r.status_code in (200, 201), r.text
    cid = r.json()["id"]

    async def objects_of(space_id: str) -> int:
        async with db.connect() as conn:
            return int(
                (
                    await conn.execute(
                        sa.select(sa.func.count())
                        .select_from(content_objects)
                        .where(content_objects.c.space_id == space_id)
                    )
                ).scalar_one()
            )

    assert 0 < await objects_of(cid) < await objects_of(sid)
    for path in ("content/pages", f"content/page/{ids['p0']}", f"content/page/{ids['p1']}"):
        a = (await client.get(f"/v1/spaces/{sid}/{path}", headers=admin.headers)).json()
        b = (await client.get(f"/v1/spaces/{cid}/{path}", headers=admin.headers)).json()
        text = orjson.dumps(a.get("pages", a.get("markdown"))).decode()
        assert text.replace(sid, cid) == orjson.dumps(b.get("pages", b.get("markdown"))).decode()

    def shape(listing: dict[str, Any]) -> list[Any]:
        return [
            (i["status"], [loc["page"]["id"] for loc in i["locationReferences"]])
            for i in listing["items"]
        ]

    la = (await client.get(f"/v1/spaces/{sid}/links", headers=admin.headers)).json()
    lb = (await client.get(f"/v1/spaces/{cid}/links", headers=admin.headers)).json()
    assert shape(la) == shape(lb) and la["count"] == lb["count"] and la["stats"] == lb["stats"]
    sa_ = (
        await client.get(
            f"/v1/spaces/{sid}/search", params={"query": "zebra"}, headers=admin.headers
        )
    ).json()
    sb = (
        await client.get(
            f"/v1/spaces/{cid}/search", params={"query": "zebra"}, headers=admin.headers
        )
    ).json()
    assert sb["count"] == sa_["count"] == 4
    # The copy edits on from its head, and its index follows.
    await _live(client, cid, admin, [{"operation": "delete_page", "page": ids["p3"]}])
    lb = (await client.get(f"/v1/spaces/{cid}/links", headers=admin.headers)).json()
    assert lb["stats"]["broken"]["total"] == la["stats"]["broken"]["total"] + 1


async def test_a_cursor_only_continues_its_own_listing(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_a, (admin_a,) = await factories.org_with_members(db)
    org_b, (admin_b,) = await factories.org_with_members(db)
    made: dict[str, list[str]] = {}
    for org, admin in ((org_a, admin_a), (org_b, admin_b)):
        for title in ("One", "Two"):
            space = await factories.api_space(client, org, admin, title=title)
            made.setdefault(org, []).append(space["id"])
    await factories.member(db, org=org_b, who=admin_a, role="admin")
    first = await client.get(f"/v1/orgs/{org_a}/spaces?limit=1", headers=admin_a.headers)
    cursor = first.json()["next"]["page"]
    same = await client.get(
        f"/v1/orgs/{org_a}/spaces?limit=1&page={cursor}", headers=admin_a.headers
    )
    assert same.status_code == 200
    other = await client.get(
        f"/v1/orgs/{org_b}/spaces?limit=1&page={cursor}", headers=admin_a.headers
    )
    assert (other.status_code, other.json()) == (
        400,
        error(400, "Invalid query parameter 'page': not a cursor returned by this listing"),
    )

    # A listing built once with named parameters (the members' roles on a space): its values
    # are its identity, so a cursor of one space's does not continue another's.
    one, two = (f"/v1/spaces/{sid}/permissions/aggregate?limit=1" for sid in made[org_b])
    first = await client.get(one, headers=admin_a.headers)
    assert first.json()["count"] == 2
    cursor = first.json()["next"]["page"]
    same = await client.get(f"{one}&page={cursor}", headers=admin_a.headers)
    assert same.status_code == 200 and same.json()["count"] == 2
    assert same.json()["items"] != first.json()["items"]
    other = await client.get(f"{two}&page={cursor}", headers=admin_a.headers)
    assert (other.status_code, other.json()) == (
        400,
        error(400, "Invalid query parameter 'page': not a cursor returned by this listing"),
    )

    # Its page statements were built once: the other space's pages run the same ones.
    def pages(statements: list[Any]) -> set[int]:
        return {id(s) for s in statements if "docshelf_page_limit" in str(s)}

    async with executed() as kept:
        cursor = (await client.get(one, headers=admin_a.headers)).json()["next"]["page"]
        assert (
            await client.get(f"{one}&page={cursor}", headers=admin_a.headers)
        ).status_code == 200
    async with executed() as again:
        cursor = (await client.get(two, headers=admin_a.headers)).json()["next"]["page"]
        assert (
            await client.get(f"{two}&page={cursor}", headers=admin_a.headers)
        ).status_code == 200
    assert len(pages(kept)) == 2
    assert pages(again) == pages(kept)


async def test_listings_and_look_ups_run_statements_built_once(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Two organizations alike, each read by its admin and by a member: every route below runs
    the very same statement objects in both (its values are parameters), so none is built, or
    walked for its cache key, per request."""

    async def made(org: str, admin: factories.Who) -> dict[str, str]:
        h = admin.headers
        collection = await factories.api_collection(client, org, admin, title="Guides")
        space = await factories.api_space(client, org, admin, title="Handbook")
        await factories.api_space(client, org, admin, title="Inner", parent=collection["id"])
        sid = space["id"]
        team = await client.put(f"/v1/orgs/{org}/teams", json={"title": "Ops"}, headers=h)
        assert team.status_code == 201, team.text
        site = await client.post(f"/v1/orgs/{org}/sites", json={"title": "Docs"}, headers=h)
        assert site.status_code == 201, site.text
        cr = {"subject": "Edit"}
        r = await client.post(f"/v1/spaces/{sid}/change-requests", json=cr, headers=h)
        assert r.status_code == 201, r.text
        return {
            "org": org,
            "space": sid,
            "site": site.json()["id"],
            "collection": collection["id"],
            "me": admin.id,
        }

    routes = [
        "/v1/orgs",
        "/v1/orgs/{org}/members",
        "/v1/orgs/{org}/members?search=a&role=admin",
        "/v1/orgs/{org}/teams",
        "/v1/orgs/{org}/teams?title=o",
        "/v1/orgs/{org}/members/{me}/teams",
        "/v1/orgs/{org}/collections",
        "/v1/orgs/{org}/spaces",
        "/v1/collections/{collection}/spaces",
        "/v1/orgs/{org}/sites",
        "/v1/orgs/{org}/sites?title=d&published=false",
        "/v1/orgs/{org}/sites/{site}/site-spaces",
        "/v1/spaces/{space}/change-requests",
        "/v1/spaces/{space}/change-requests?contributor={me}",
        "/v1/spaces/{space}/links",
        "/v1/spaces/{space}/links?status=in-app",
    ]
    worlds = []
    for _ in range(2):
        org, (admin, reader) = await factories.org_with_members(db, "read")
        worlds.append((await made(org, admin), (admin, reader)))

    async def run(route: str, world: dict[str, str], who: factories.Who) -> list[Any]:
        async with executed() as statements:
            r = await client.get(route.format(**world), headers=who.headers)
        assert r.status_code == 200, (route, r.text)
        return statements

    for route in routes:
        for caller in (0, 1):
            (world_a, people_a), (world_b, people_b) = worlds
            # Anything built or kept lazily (a site's structure, under its version), built.
            await run(route, world_a, people_a[caller])
            await run(route, world_b, people_b[caller])
            # Both lists held while compared: an object freed and another built in its place
            # could share its id.
            ran_a = await run(route, world_a, people_a[caller])
            ran_b = await run(route, world_b, people_b[caller])
            assert len(ran_a) == len(ran_b), (route, caller)
            assert all(x is y for x, y in zip(ran_a, ran_b, strict=True)), (
                route,
                caller,
                [str(x)[:300] for x, y in zip(ran_a, ran_b, strict=True) if x is not y],
            )
