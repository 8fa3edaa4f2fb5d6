"""Fields GitBook's 0.202.0 client sends and expects: change requests' `description`, `links`,
`mergedBy`/`mergedAt`; `template` refused by name; `empty` on space creation."""

from __future__ import annotations

import httpx
from openapi_schema_validator import OAS31Validator
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from tests import factories, gitbook_spec
from tests.helpers import error
from tests.test_content import insert, setup, write


def _schema(name: str) -> OAS31Validator:
    spec = gitbook_spec.load("0.202.0")
    return OAS31Validator({**spec["components"]["schemas"][name], "components": spec["components"]})


DESCRIPTION = {
    "object": "document",
    "data": {},
    "nodes": [
        {
            "object": "block",
            "type": "paragraph",
            "data": {},
            "nodes": [
                {"object": "text", "leaves": [{"object": "leaf", "text": "Why", "marks": []}]}
            ],
        }
    ],
}


async def test_description_links_and_merge_fields(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    links = [{"ref": {"kind": "url", "url": "https://issues.example/1"}, "title": "Issue 1"}]
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests",
        json={"subject": "Docs", "description": DESCRIPTION, "links": links},
        headers=editor.headers,
    )
    assert r.status_code == 201, r.text
    cr = r.json()
    assert cr["description"] == DESCRIPTION
    (link,) = cr["links"]
    assert link == {"id": link["id"], **links[0]}
    assert [e.message for e in _schema("ChangeRequest").iter_errors(cr)] == []

    url = f"/v1/spaces/{sid}/change-requests/{cr['id']}"
    # Updating a served link by id, adding one; an unknown id changes nothing.
    bad = await client.patch(
        url, json={"links": [{"id": "nope", "ref": links[0]["ref"]}]}, headers=editor.headers
    )
    assert bad.json() == error(
        400, "Invalid body field 'links[0].id': no such link on this change request"
    )
    assert (await client.get(url, headers=reader.headers)).json() == cr
    new = {"ref": {"kind": "url", "url": "https://pr.example/2"}}
    r = await client.patch(
        url,
        json={"links": [{"id": link["id"], "ref": link["ref"], "title": "Renamed"}, new]},
        headers=editor.headers,
    )
    assert r.status_code == 200, r.text
    got = r.json()["links"]
    assert got[0] == {"id": link["id"], "ref": link["ref"], "title": "Renamed"}
    assert got[1]["ref"] == new["ref"] and got[1]["id"] != link["id"]
    r = await client.patch(
        url,
        json={"description": {"object": "document", "nodes": [{"object": "block", "type": "x"}]}},
        headers=editor.headers,
    )
    assert r.json() == error(
        400,
        "Invalid body field 'description': Invalid document: document.nodes[0].type: "
        "unknown or unsupported block type 'x'",
    )

    await write(client, sid, cr["id"], editor, insert("Hi\n", title="Hi"))
    r = await client.post(f"{url}/merge", headers=admin.headers)
    assert r.status_code == 200, r.text
    merged = (await client.get(url, headers=reader.headers)).json()
    assert merged["mergedAt"] == isoformat(clock.now())
    assert merged["mergedBy"]["id"] == admin.id
    assert [e.message for e in _schema("ChangeRequest").iter_errors(merged)] == []


async def test_templates_are_refused_by_name_and_empty_is_accepted(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, admin, *_ = await setup(client, db)
    sid = space["id"]
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests", json={"template": {"id": "t"}}, headers=admin.headers
    )
    assert r.json() == error(
        400,
        "Unsupported body field 'template': Docshelf has no templates; "
        "create the change request, then write its content",
    )
    r = await client.get(f"/v1/spaces/{sid}/change-requests", headers=admin.headers)
    assert r.json()["count"] == 0
    org = space["organization"]
    r = await client.post(
        f"/v1/orgs/{org}/spaces", json={"template": {"id": "t"}}, headers=admin.headers
    )
    assert r.status_code == 400
    assert r.json()["error"]["message"].startswith("Unsupported body field 'template'")
    r = await client.post(f"/v1/orgs/{org}/spaces", json={"empty": True}, headers=admin.headers)
    assert r.status_code == 201, r.text
    content = await client.get(f"/v1/spaces/{r.json()['id']}/content/pages", headers=admin.headers)
    assert content.json() == {"pages": []}


async def test_search_results_name_their_ancestors(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    sid = space["id"]

    def page(ref: str, title: str, into: str | None = None, **fields: str) -> dict[str, object]:
        body = {"markdown": "Zebras graze.\n" if ref == "leaf" else ""}
        change = {"operation": "insert_page", "ref": ref, "title": title, "document": body}
        return change | ({"into": into} if into else {}) | fields

    r = await client.post(
        f"/v1/spaces/{sid}/content",
        json={
            "changes": [
                page("top", "Guide"),
                page("mid", "Animals", "top"),
                page("leaf", "Savanna", "mid", description="Wide plains"),
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    r = await client.get(
        f"/v1/spaces/{sid}/search", params={"query": "zebras"}, headers=admin.headers
    )
    (hit,) = r.json()["items"]
    assert hit["ancestors"] == [{"title": "Guide"}, {"title": "Animals"}]
    assert hit["description"] == "Wide plains" and hit["rank"] == 1
    assert [e.message for e in _schema("SearchPageResult").iter_errors(hit)] == []
