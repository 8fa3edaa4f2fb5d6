"""GitBook 0.202's site writes from issue 27: a section moved into and out of a group by
`siteSectionGroupId`, a site space hidden from the navigation by `hidden`, the `Location` of
every create (section groups, a section added to a group, share links), and an adaptive
schema that reads back in GitBook's form."""

from __future__ import annotations

from typing import Any

import httpx
from openapi_schema_validator import OAS31Validator
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from tests import factories, gitbook_spec
from tests.conftest import BASE
from tests.helpers import error, snapshot
from tests.reader_site import build


def _valid(schema_name: str, body: Any) -> list[str]:
    spec = gitbook_spec.load("0.202.0")
    validator = OAS31Validator(
        {"$ref": f"#/components/schemas/{schema_name}", "components": spec["components"]}
    )
    return sorted(e.message for e in validator.iter_errors(body))


async def _top_level(client: httpx.AsyncClient, url: str, h: dict[str, str]) -> list[Any]:
    structure = (await client.get(f"{url}/structure", headers=h)).json()["structure"]
    return [
        (x["object"], x["title"], [s["title"] for s in x.get("sections", [])]) for x in structure
    ]


async def test_a_section_moves_into_and_out_of_groups(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    s = await build(client, org, admin)
    sections = (await client.get(f"{s.url}/sections", headers=h)).json()["items"]
    default = next(x for x in sections if x["default"])
    api = next(x for x in sections if not x["default"])
    r = await client.post(f"{s.url}/section-groups", json={"title": "Guides"}, headers=h)
    guides = r.json()["id"]
    reference = api["sectionGroup"]
    assert await _top_level(client, s.url, h) == [
        ("site-section", default["title"], []),
        ("site-section-group", "Reference", ["API"]),
        ("site-section-group", "Guides", []),
    ]
    section_url = f"{s.url}/sections/{default['id']}"
    r = await client.patch(section_url, json={"siteSectionGroupId": guides}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["sectionGroup"] == guides
    assert await _top_level(client, s.url, h) == [
        ("site-section-group", "Reference", ["API"]),
        ("site-section-group", "Guides", [default["title"]]),
    ]
    # From one group to another: at the end of its new group.
    r = await client.patch(section_url, json={"siteSectionGroupId": reference}, headers=h)
    assert r.json()["sectionGroup"] == reference
    assert await _top_level(client, s.url, h) == [
        ("site-section-group", "Reference", ["API", default["title"]]),
        ("site-section-group", "Guides", []),
    ]
    # null: back to the top level, at its end.
    r = await client.patch(section_url, json={"siteSectionGroupId": None}, headers=h)
    assert r.status_code == 200 and "sectionGroup" not in r.json()
    assert await _top_level(client, s.url, h) == [
        ("site-section-group", "Reference", ["API"]),
        ("site-section-group", "Guides", []),
        ("site-section", default["title"], []),
    ]
    before = await snapshot(db)
    r = await client.patch(section_url, json={"siteSectionGroupId": "nope"}, headers=h)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'siteSectionGroupId': section group 'nope' not found"),
    )
    # Where it already is, nothing moves.
    r = await client.patch(section_url, json={"siteSectionGroupId": None}, headers=h)
    assert r.status_code == 200
    assert await snapshot(db) == before


async def test_a_hidden_site_space_leaves_the_navigation_only(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    s = await build(client, org, admin)
    listed = (await client.get(f"{s.url}/site-spaces", headers=h)).json()["items"]
    v2 = next(x for x in listed if x["path"] == s.v2_path)
    v2_address = f"{s.address}{s.v2_path}/"
    home = await client.get(s.address)
    assert f'href="{v2_address}"' in home.text

    r = await client.patch(f"{s.url}/site-spaces/{v2['id']}", json={"hidden": True}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json() == {**v2, "hidden": True}
    assert _valid("SiteSpace", r.json()) == []
    # Not in the navigation...
    home = await client.get(s.address)
    assert home.status_code == 200 and f'href="{v2_address}"' not in home.text
    # ...but still read at its address.
    r = await client.get(v2_address)
    assert r.status_code == 200 and "The second version." in r.text

    before = await snapshot(db)
    r = await client.patch(f"{s.url}/site-spaces/{v2['id']}", json={"hidden": None}, headers=h)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'hidden': must not be null"),
    )
    assert await snapshot(db) == before
    r = await client.patch(f"{s.url}/site-spaces/{v2['id']}", json={"hidden": False}, headers=h)
    assert r.json() == v2
    assert f'href="{v2_address}"' in (await client.get(s.address)).text


async def test_every_create_names_its_location(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    space = await factories.api_space(client, org, admin, title="Guide")
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": "Docs", "visibility": "share-link", "spaces": [space["id"]]},
        headers=h,
    )
    url = f"/v1/orgs/{org}/sites/{r.json()['id']}"
    other = await factories.api_space(client, org, admin, title="Other")
    r = await client.post(f"{url}/sections", json={"spaceId": other["id"]}, headers=h)
    section = r.json()["id"]

    r = await client.post(f"{url}/section-groups", json={"title": "Group"}, headers=h)
    assert r.status_code == 201
    group = r.json()["id"]
    assert r.headers["location"] == f"{BASE}{url}/section-groups/{group}"
    r = await client.post(
        f"{url}/section-groups/{group}/sections", json={"sectionId": section}, headers=h
    )
    assert r.status_code == 201
    assert r.headers["location"] == f"{BASE}{url}/section-groups/{group}"
    r = await client.post(f"{url}/share-links", json={"name": "Readers"}, headers=h)
    assert r.status_code == 201
    link = r.json()["id"]
    assert r.headers["location"] == f"{BASE}{url}/share-links/{link}"
    # Each Location is where the thing is changed.
    r = await client.patch(r.headers["location"][len(BASE) :], json={"name": "R"}, headers=h)
    assert r.status_code == 200 and r.json()["name"] == "R"


async def test_an_adaptive_schema_reads_back_in_gitbooks_form(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    r = await client.post(f"/v1/orgs/{org}/sites", json={}, headers=admin.headers)
    url = f"/v1/orgs/{org}/sites/{r.json()['id']}/adaptive-schema"
    claims = {"preview": {"type": "boolean", "description": "Wants previews"}}
    for unsigned in (
        {"type": "object", "properties": claims, "additionalProperties": False},
        {
            "type": "object",
            "description": "Claims the visitor states",
            "properties": claims,
            "additionalProperties": False,
        },
    ):
        schema = {
            "type": "object",
            "properties": {
                "beta": {"type": "boolean", "description": "Beta tester"},
                "unsigned": unsigned,
            },
            "additionalProperties": False,
        }
        r = await client.put(url, json={"jsonSchema": schema}, headers=admin.headers)
        assert r.status_code == 200, r.text
        expected = {
            "object": "site-adaptive-schema",
            "jsonSchema": {
                **schema,
                "properties": {
                    **schema["properties"],
                    "unsigned": {
                        **unsigned,
                        "description": "Unsigned claims of the site visitor.",
                    },
                },
            },
            "updatedAt": isoformat(clock.now()),
        }
        assert r.json() == expected
        assert _valid("SiteAdaptiveSchema", r.json()) == []
        read = (await client.get(url, headers=admin.headers)).json()
        assert read == expected
