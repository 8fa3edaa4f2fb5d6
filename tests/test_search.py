"""Search over HTTP: the same expectations on SQLite (FTS5) and PostgreSQL (full-text search)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from docshelf.search.engine import CANDIDATES
from docshelf.search.service import BROAD_PAGES_PER_SPACE
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error


async def live(client: httpx.AsyncClient, sid: str, who: Who, *pages: tuple[str, str]) -> list[str]:
    r = await client.post(
        f"/v1/spaces/{sid}/content",
        json={
            "changes": [
                {"operation": "insert_page", "title": t, "document": {"markdown": m}}
                for t, m in pages
            ]
        },
        headers=who.headers,
    )
    assert r.status_code == 200, r.text
    return [c["page"]["id"] for c in r.json()["changes"]]


def titles(body: dict[str, Any]) -> list[str]:
    return [item["title"] for item in body["items"]]


async def test_space_search_ranks_and_sections(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, editMode="live", visibility="unlisted")
    sid = space["id"]
    body_id, title_id, _ = await live(
        client,
        sid,
        admin,
        ("Overview", "Intro text.\n\n## Deploying\n\nUse the kubernetes operator to deploy.\n"),
        ("Kubernetes", "All about clusters.\n"),
        ("Unrelated", "Nothing to see.\n"),
    )
    url = f"/v1/spaces/{sid}/search"
    r = await client.get(url, params={"query": "kubernetes"}, headers=reader.headers)
    assert r.status_code == 200, r.text
    found = r.json()
    assert titles(found) == ["Kubernetes", "Overview"]  # a title match ranks first
    assert found["count"] == 2
    overview = found["items"][1]
    assert overview["id"] == body_id
    assert overview["path"] == "overview"
    assert overview["urls"] == {"app": f"{BASE}/s/{sid}/pages/{body_id}"}
    section = next(s for s in overview["sections"] if s["title"] == "Deploying")
    assert section["path"] == "overview#deploying"
    assert "kubernetes" in section["body"].lower()
    assert section["urls"] == {"app": f"{BASE}/s/{sid}/pages/{body_id}#deploying"}
    # GitBook 0.202's fields: the engine's score (best first), rank, ancestors, description.
    first_hit = found["items"][0]
    assert [i["rank"] for i in found["items"]] == [1, 2]
    assert first_hit["score"] >= overview["score"] > 0 and section["score"] == overview["score"]
    assert overview["ancestors"] == [] and overview["description"] == ""

    # Pagination keeps the rank.
    r = await client.get(url, params={"query": "kubernetes", "limit": 1}, headers=reader.headers)
    first = r.json()
    assert titles(first) == ["Kubernetes"] and first["count"] == 2
    r = await client.get(
        url,
        params={"query": "kubernetes", "limit": 1, "page": first["next"]["page"]},
        headers=reader.headers,
    )
    assert titles(r.json()) == ["Overview"] and "next" not in r.json()
    assert r.json()["items"][0]["rank"] == 2

    # The index follows main: a deleted page disappears, a renamed one is found by its new title.
    await client.post(
        f"/v1/spaces/{sid}/content",
        json={
            "changes": [
                {"operation": "delete_page", "page": title_id},
                {"operation": "update_page", "page": body_id, "title": "Operators"},
            ]
        },
        headers=admin.headers,
    )
    r = await client.get(url, params={"query": "kubernetes"}, headers=reader.headers)
    assert titles(r.json()) == ["Operators"]
    r = await client.get(url, params={"query": "operators"}, headers=reader.headers)
    assert titles(r.json()) == ["Operators"]

    # Bad queries.
    for bad in ("", "   "):
        r = await client.get(url, params={"query": bad}, headers=reader.headers)
        assert r.json() == error(400, "Invalid query parameter 'query': must not be empty")
    r = await client.get(url, params={"query": "x" * 513}, headers=reader.headers)
    assert r.status_code == 400
    r = await client.get(url, headers=reader.headers)
    assert r.status_code == 400
    for hostile in ('"', "*", "a:b", "NEAR(", "'; DROP TABLE spaces; --", "ünïcode"):
        r = await client.get(url, params={"query": hostile}, headers=reader.headers)
        assert r.status_code == 200, (hostile, r.text)


async def test_organization_search_respects_visibility(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, member) = await factories.org_with_members(db, "read")
    shared = await factories.api_space(
        client, org_id, admin, title="Shared", visibility="unlisted", editMode="live"
    )
    private = await factories.api_space(
        client, org_id, admin, title="Secret", editMode="live", default_level=None
    )
    gone = await factories.api_space(
        client, org_id, admin, title="Gone", visibility="unlisted", editMode="live"
    )
    for space in (shared, private, gone):
        await live(client, space["id"], admin, ("Billing", "How invoices work.\n"))
    assert (
        await client.delete(f"/v1/spaces/{gone['id']}", headers=admin.headers)
    ).status_code == 205
    url = f"/v1/orgs/{org_id}/search"
    r = await client.get(url, params={"query": "invoices"}, headers=member.headers)
    assert r.status_code == 200, r.text
    assert [(i["id"], titles({"items": i["pages"]})) for i in r.json()["items"]] == [
        (shared["id"], ["Billing"])
    ]
    (item,) = r.json()["items"]
    assert item["type"] == "space" and item["score"] == item["pages"][0]["score"] > 0
    assert item["pages"][0]["rank"] == 1
    r = await client.get(url, params={"query": "invoices"}, headers=admin.headers)
    assert sorted(i["title"] for i in r.json()["items"]) == ["Secret", "Shared"]
    # Restored: searchable again.
    clock.advance(timedelta(days=1))
    await client.post(f"/v1/spaces/{gone['id']}/restore", headers=admin.headers)
    r = await client.get(url, params={"query": "invoices"}, headers=admin.headers)
    assert sorted(i["title"] for i in r.json()["items"]) == ["Gone", "Secret", "Shared"]
    # Outsiders get the organization's 404.
    outsider = await factories.user(db)
    r = await client.get(url, params={"query": "invoices"}, headers=outsider.headers)
    assert r.json() == error(404, "Organization not found")
    r = await client.get(
        f"/v1/spaces/{private['id']}/search",
        params={"query": "invoices"},
        headers=member.headers,
    )
    assert r.json() == error(404, "Space not found")


async def test_a_broad_query_pages_with_cursors_and_an_estimated_count(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, editMode="live", visibility="unlisted")
    sid = space["id"]
    # One section a page, past engine.CANDIDATES sections; a title match written first.
    await live(client, sid, admin, ("Webhook guide", "All about them.\n"))
    pages = [(f"Page {i}", f"A webhook mentioned in page {i}.\n") for i in range(CANDIDATES + 20)]
    for start in range(0, len(pages), 50):
        await live(client, sid, admin, *pages[start : start + 50])
    url = f"/v1/spaces/{sid}/search"

    seen: list[str] = []
    params: dict[str, Any] = {"query": "webhook", "limit": 40}
    counts = set()
    while True:
        r = await client.get(url, params=params, headers=reader.headers)
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) <= {"items", "count", "next"}
        counts.add(body["count"])
        seen += [item["title"] for item in body["items"]]
        if "next" not in body:
            break
        params["page"] = body["next"]["page"]
    # The count is the same on every page. Only the candidates are served (CANDIDATES
    # sections and the title match, which may be one of them), each once, title matches first.
    assert len(seen) == len(set(seen)) and CANDIDATES <= len(seen) <= CANDIDATES + 1
    (count,) = counts
    if db.dialect.name == "postgresql":
        assert count >= len(seen)  # the planner's estimate, never below what is served
    else:
        assert count == CANDIDATES + 21  # matching sections x pages per section: exact here
    assert seen[0] == "Webhook guide"
    # A selective query: exact count, every page served.
    r = await client.get(url, params={"query": "page 7", "limit": 5}, headers=reader.headers)
    assert r.json()["count"] == 1 and titles(r.json()) == ["Page 7"]

    # The organization: a broad query lists a space's best few pages, title matches first.
    r = await client.get(
        f"/v1/orgs/{org_id}/search", params={"query": "webhook"}, headers=reader.headers
    )
    (item,) = r.json()["items"]
    assert r.json()["count"] == 1 and "next" not in r.json()
    assert item["id"] == sid and len(item["pages"]) == BROAD_PAGES_PER_SPACE
    assert item["pages"][0]["title"] == "Webhook guide"
    assert [p["title"] for p in item["pages"][1:]] == seen[1:BROAD_PAGES_PER_SPACE]
    # Selective: every page of the space among the best.
    r = await client.get(
        f"/v1/orgs/{org_id}/search", params={"query": "page 1"}, headers=reader.headers
    )
    assert [p["title"] for p in r.json()["items"][0]["pages"]] == ["Page 1"]
