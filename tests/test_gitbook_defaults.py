"""GitBook's defaults as GitBook's own client meets them: a space created with no visibility is
`private` with `defaultLevel: inherit`, which gives every member their organization role
(GitBook, "Permissions and inheritance"); and a site's visibility, not its spaces', decides who
reads what it publishes. Before, a member who joined by invite link saw no space, and a public
site answered 404 to every reader and to /v1/urls/published."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests import factories
from tests.conftest import BASE
from tests.reader_site import pages


async def test_a_new_member_works_in_the_organizations_spaces(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    r = await client.post(
        f"/v1/orgs/{org}/spaces", json={"title": "Handbook"}, headers=admin.headers
    )
    assert r.status_code == 201, r.text
    space = r.json()
    assert (space["visibility"], space["defaultLevel"]) == ("private", "inherit")
    r = await client.post(
        f"/v1/orgs/{org}/link-invites", json={"role": "edit"}, headers=admin.headers
    )
    assert r.status_code == 201, r.text
    newcomer = await factories.user(db)
    r = await client.post(f"/v1/orgs/{org}/invites/{r.json()['id']}", headers=newcomer.headers)
    assert r.status_code == 200, r.text
    r = await client.get(f"/v1/orgs/{org}/spaces", headers=newcomer.headers)
    assert r.status_code == 200, r.text
    assert [s["id"] for s in r.json()["items"]] == [space["id"]]
    r = await client.get(f"/v1/spaces/{space['id']}", headers=newcomer.headers)
    assert r.status_code == 200, r.text
    assert r.json()["permissions"]["edit"] is True and r.json()["permissions"]["admin"] is False
    r = await client.post(
        f"/v1/spaces/{space['id']}/change-requests",
        json={"subject": "First edit"},
        headers=newcomer.headers,
    )
    assert r.status_code == 201, r.text
    r = await client.get(f"/v1/orgs/{org}/search", params={"query": "x"}, headers=newcomer.headers)
    assert r.status_code == 200, r.text


async def test_a_public_site_publishes_a_new_space_to_everyone(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    r = await client.post(
        f"/v1/orgs/{org}/spaces",
        json={"title": "Guide", "editMode": "live"},
        headers=admin.headers,
    )
    space = r.json()
    await pages(client, space["id"], admin, ("Welcome", "Hello, readers.\n"))
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": "Guide", "visibility": "public", "spaces": [space["id"]]},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    site = r.json()
    r = await client.post(f"/v1/orgs/{org}/sites/{site['id']}/publish", headers=admin.headers)
    assert r.status_code == 200, r.text
    published = r.json()["urls"]["published"]
    assert published == f"{BASE}/{org}/{site['id']}/"
    # An anonymous reader, the published-URL look-up and its GET form all find it.
    r = await client.get(published.removeprefix(BASE))
    assert r.status_code == 200, r.text
    assert "Hello, readers." in r.text
    r = await client.post("/v1/urls/published", json={"url": published})
    assert r.status_code == 200, r.text
    assert (r.json()["space"], r.json()["pathname"]) == (space["id"], "")
    r = await client.get("/v1/urls/published", params={"url": f"{published}welcome"})
    assert r.status_code == 200, r.text
    assert r.json()["pathname"] == "welcome"
    # A deleted space is read by nobody.
    r = await client.delete(f"/v1/spaces/{space['id']}", headers=admin.headers)
    assert r.status_code == 205, r.text
    assert (await client.get(published.removeprefix(BASE))).status_code == 404
