from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from tests import factories
from tests.conftest import BASE
from tests.helpers import TS, error, snapshot

LANGUAGES = [
    "en", "fr", "de", "es", "it", "pt", "pt-br", "ru", "ja", "zh", "zh-tw", "yue", "ko", "ar",
    "hi", "nl", "pl", "tr", "sv", "no", "da", "fi", "el", "cs", "hu", "ro", "th", "vi", "id",
    "ms", "he", "uk", "sk", "bg", "hr", "lt", "lv", "et", "sl",
]  # fmt: skip


def settings_body(
    org_id: str,
    settings_id: str,
    title: str,
    languages: list[str],
    *,
    edit: bool = True,
    created: str = TS,
    updated: str = TS,
) -> dict[str, Any]:
    return {
        "object": "translation-settings",
        "id": settings_id,
        "title": title,
        "languages": languages,
        "createdAt": created,
        "updatedAt": updated,
        "permissions": {"view": True, "edit": edit},
        "urls": {"location": f"{BASE}/v1/orgs/{org_id}/translations/{settings_id}"},
    }


async def test_translation_settings_lifecycle(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    url = f"/v1/orgs/{org_id}/translations"
    r = await client.post(
        url, json={"title": "Europe", "languages": ["fr", "pt-br", "de"]}, headers=admin.headers
    )
    assert r.status_code == 201
    sid = r.json()["id"]
    assert r.json() == settings_body(org_id, sid, "Europe", ["fr", "pt-br", "de"])
    assert r.headers["location"] == f"{BASE}{url}/{sid}"

    r = await client.get(f"{url}/{sid}", headers=editor.headers)
    assert (r.status_code, r.json()) == (
        200,
        settings_body(org_id, sid, "Europe", ["fr", "pt-br", "de"], edit=False),
    )
    r = await client.get(url, headers=editor.headers)
    assert r.json() == {
        "items": [settings_body(org_id, sid, "Europe", ["fr", "pt-br", "de"], edit=False)],
        "count": 1,
    }

    clock.advance(timedelta(minutes=1))
    later = "2026-01-02T03:05:05.678Z"
    r = await client.put(
        f"{url}/{sid}", json={"title": "Asia", "languages": ["ja", "zh-tw"]}, headers=admin.headers
    )
    assert (r.status_code, r.json()) == (
        200,
        settings_body(org_id, sid, "Asia", ["ja", "zh-tw"], updated=later),
    )
    # PUT replaces: leaving `languages` out empties them.
    r = await client.put(f"{url}/{sid}", json={"title": "None yet"}, headers=admin.headers)
    assert r.json() == settings_body(org_id, sid, "None yet", [], updated=later)
    r = await client.get(f"{url}/{sid}", headers=admin.headers)
    assert r.json() == settings_body(org_id, sid, "None yet", [], updated=later)

    r = await client.delete(f"{url}/{sid}", headers=admin.headers)
    assert (r.status_code, r.content) == (205, b"")
    for method in ("GET", "DELETE"):
        r = await client.request(method, f"{url}/{sid}", headers=admin.headers)
        assert (r.status_code, r.json()) == (404, error(404, "Translation settings not found"))
    r = await client.put(f"{url}/{sid}", json={"title": "X"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Translation settings not found"))
    r = await client.get(url, headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}


async def test_every_language_and_none(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    url = f"/v1/orgs/{org_id}/translations"
    r = await client.post(url, json={"title": "All", "languages": LANGUAGES}, headers=admin.headers)
    assert r.json() == settings_body(org_id, r.json()["id"], "All", LANGUAGES)
    r = await client.post(url, json={"title": "T" * 100}, headers=admin.headers)
    assert r.json() == settings_body(org_id, r.json()["id"], "T" * 100, [])


async def test_list_pagination(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    other_org = await factories.organization(db, owner=admin, title="Other")
    url = f"/v1/orgs/{org_id}/translations"
    ids = []
    for title in ("One", "Two", "Three"):
        r = await client.post(url, json={"title": title}, headers=admin.headers)
        ids.append(r.json()["id"])
        clock.advance(timedelta(seconds=1))
    # Another organization's settings never show in this listing.
    await client.post(
        f"/v1/orgs/{other_org}/translations", json={"title": "B"}, headers=admin.headers
    )

    r = await client.get(url, params={"limit": 2}, headers=admin.headers)
    body = r.json()
    assert [i["id"] for i in body["items"]] == ids[:2]
    assert body["count"] == 3 and set(body["next"]) == {"page"}
    r = await client.get(
        url, params={"limit": 2, "page": body["next"]["page"]}, headers=admin.headers
    )
    third = "2026-01-02T03:04:07.678Z"
    assert r.json() == {
        "items": [settings_body(org_id, ids[2], "Three", [], created=third, updated=third)],
        "count": 3,
    }
    r = await client.get(url, params={"limit": 0}, headers=admin.headers)
    assert r.json() == {"items": [], "count": 3}


async def test_pagination_breaks_ties_on_id(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    url = f"/v1/orgs/{org_id}/translations"
    # The clock is frozen: all four share one createdAt, so only the id orders them.
    ids = [
        (await client.post(url, json={"title": f"T{n}"}, headers=admin.headers)).json()["id"]
        for n in range(4)
    ]
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 1}
    while True:
        body = (await client.get(url, params=params, headers=admin.headers)).json()
        seen += [i["id"] for i in body["items"]]
        if "next" not in body:
            break
        params["page"] = body["next"]["page"]
    assert seen == sorted(ids)


async def test_settings_are_scoped_to_their_organization(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_a, (admin,) = await factories.org_with_members(db)
    org_b = await factories.organization(db, owner=admin, title="Other")
    r = await client.post(
        f"/v1/orgs/{org_b}/translations", json={"title": "B"}, headers=admin.headers
    )
    sid = r.json()["id"]
    before = await snapshot(db)
    for method, body in (("GET", None), ("PUT", {"title": "X"}), ("DELETE", None)):
        r = await client.request(
            method, f"/v1/orgs/{org_a}/translations/{sid}", json=body, headers=admin.headers
        )
        assert (r.status_code, r.json()) == (404, error(404, "Translation settings not found"))
    assert await snapshot(db) == before


async def test_bad_languages_change_nothing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    url = f"/v1/orgs/{org_id}/translations"
    r = await client.post(url, json={"title": "Europe", "languages": ["fr"]}, headers=admin.headers)
    item = f"{url}/{r.json()['id']}"
    before = await snapshot(db)
    cases: list[tuple[Any, str]] = [
        (
            {"title": "X", "languages": ["fr", "klingon"]},
            "Invalid body field 'languages.1': unknown language code 'klingon'",
        ),
        (
            {"title": "X", "languages": ["FR"]},
            "Invalid body field 'languages.0': unknown language code 'FR'",
        ),
        (
            {"title": "X", "languages": ["de", "fr", "de"]},
            "Invalid body field 'languages': duplicate language code 'de'",
        ),
        (
            {"title": "X", "languages": [*LANGUAGES, "en"]},
            "Invalid body field 'languages': List should have at most 39 items after validation,"
            " not 40",
        ),
        (
            {"title": "X", "languages": "fr"},
            "Invalid body field 'languages': Input should be a valid list",
        ),
        (
            {"title": "", "languages": []},
            "Invalid body field 'title': String should have at least 1 character",
        ),
        (
            {"title": "T" * 101},
            "Invalid body field 'title': String should have at most 100 characters",
        ),
        ({"languages": ["fr"]}, "Missing required body field 'title'"),
        ({"title": "X", "language": "fr"}, "Unknown body field 'language'"),
    ]
    for method, target in (("POST", url), ("PUT", item)):
        for body, message in cases:
            r = await client.request(method, target, json=body, headers=admin.headers)
            assert (r.status_code, r.json()) == (400, error(400, message)), (method, body)
    assert await snapshot(db) == before


async def test_who_may_do_what(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, creator, guest) = await factories.org_with_members(db, "create", None)
    outsider = await factories.user(db)
    url = f"/v1/orgs/{org_id}/translations"
    r = await client.post(url, json={"title": "Europe"}, headers=admin.headers)
    sid = r.json()["id"]
    item = f"{url}/{sid}"
    before = await snapshot(db)

    # Members below admin read the settings, with `edit` false, and change nothing.
    r = await client.get(item, headers=creator.headers)
    assert r.json() == settings_body(org_id, sid, "Europe", [], edit=False)
    refusals = [
        ("POST", url, {"title": "X"}, "Only organization admins can create translation settings"),
        ("PUT", item, {"title": "X"}, "Only organization admins can update translation settings"),
        ("DELETE", item, None, "Only organization admins can delete translation settings"),
    ]
    for method, target, body, message in refusals:
        r = await client.request(method, target, json=body, headers=creator.headers)
        assert (r.status_code, r.json()) == (403, error(403, message)), method

    # Guests see neither the list nor an item.
    guest_calls = [("GET", url, None), ("GET", item, None), ("PUT", item, {"title": "X"})]
    guest_calls += [("DELETE", item, None)]
    for method, target, body in guest_calls:
        r = await client.request(method, target, json=body, headers=guest.headers)
        assert (r.status_code, r.json()) == (
            403,
            error(403, "Guests cannot view translation settings"),
        ), (method, target)
    r = await client.post(url, json={"title": "X"}, headers=guest.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can create translation settings"),
    )

    # Outside the organization it does not exist.
    for method, target, body in [("GET", url, None), ("POST", url, {"title": "X"})] + [
        (m, item, b) for m, b in (("GET", None), ("PUT", {"title": "X"}), ("DELETE", None))
    ]:
        r = await client.request(method, target, json=body, headers=outsider.headers)
        assert (r.status_code, r.json()) == (404, error(404, "Organization not found")), method
    assert await snapshot(db) == before


def test_openapi_lists_the_languages(app: FastAPI) -> None:
    spec = app.openapi()
    schemas = spec["components"]["schemas"]
    for name in ("CreateTranslationSettings", "ReplaceTranslationSettings"):
        languages = schemas[name]["properties"]["languages"]
        assert languages["items"]["enum"] == LANGUAGES
        assert languages["maxItems"] == 39
        assert schemas[name]["required"] == ["title"]
    out = schemas["TranslationSettingsOut"]["properties"]
    assert out["languages"]["items"]["enum"] == LANGUAGES
    delete = spec["paths"]["/v1/orgs/{organizationId}/translations/{translationSettingsId}"]
    assert "205" in delete["delete"]["responses"]
