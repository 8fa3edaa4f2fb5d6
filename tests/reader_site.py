"""A small published site for the reader's tests (HTTP and browser): two sections (one in a
group), two variants of the default section, nested pages, a hidden page, a group of pages,
and headings to search for. Built through the API like any user would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from tests import factories
from tests.factories import Who


@dataclass
class Site:
    org: str
    site: dict[str, Any]
    url: str  # the site's API URL
    address: str  # the published path, "/<org>/<site id>/"
    guide: dict[str, str]  # page title -> id in the main space
    v2_path: str
    main_space: str
    api_path: str
    share_key: str | None = None


async def pages(
    client: httpx.AsyncClient,
    space_id: str,
    who: Who,
    *items: tuple[str, str],
    into: str | None = None,
    hidden: bool = False,
) -> list[str]:
    changes: list[dict[str, Any]] = []
    for title, markdown in items:
        change: dict[str, Any] = {
            "operation": "insert_page",
            "title": title,
            "document": {"markdown": markdown},
        }
        if into is not None:
            change["into"] = into
        if hidden:
            change["hidden"] = True
        changes.append(change)
    r = await client.post(
        f"/v1/spaces/{space_id}/content", json={"changes": changes}, headers=who.headers
    )
    assert r.status_code == 200, r.text
    return [c["page"]["id"] for c in r.json()["changes"]]


GUIDE = [
    ("Introduction", "Welcome to the guide.\n\n## Getting started\n\nInstall the thing.\n"),
    ("Configuration", "Settings live here.\n\n## Timeouts\n\nThe zanzibar timeout is 30 s.\n"),
    ("Deployment", "Ship it.\n\n## Kubernetes\n\nUse the operator.\n\n### Helm\n\nCharts.\n"),
]


async def build(
    client: httpx.AsyncClient,
    org: str,
    admin: Who,
    *,
    visibility: str = "public",
    guide: list[tuple[str, str]] | None = None,
) -> Site:
    h = admin.headers
    main = await factories.api_space(
        client, org, admin, title="Guide v1", visibility="public", editMode="live"
    )
    v2 = await factories.api_space(
        client, org, admin, title="Guide v2", visibility="public", editMode="live"
    )
    api = await factories.api_space(
        client, org, admin, title="API", visibility="public", editMode="live"
    )
    ids = await pages(client, main["id"], admin, *(guide or GUIDE))
    titles = [t for t, _ in (guide or GUIDE)]
    found = dict(zip(titles, ids, strict=True))
    (child,) = await pages(client, main["id"], admin, ("Advanced", "Deep *things*.\n"), into=ids[1])
    found["Advanced"] = child
    (secret,) = await pages(
        client, main["id"], admin, ("Hidden page", "Not listed.\n"), hidden=True
    )
    found["Hidden page"] = secret
    await pages(client, v2["id"], admin, ("Welcome v2", "The second version.\n"))
    await pages(client, api["id"], admin, ("Endpoints", "The widgets endpoint lists widgets.\n"))
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": "Acme Docs", "visibility": visibility, "spaces": [main["id"]]},
        headers=h,
    )
    assert r.status_code == 201, r.text
    url = f"/v1/orgs/{org}/sites/{r.json()['id']}"
    r = await client.post(f"{url}/sections", json={"spaceId": api["id"], "title": "API"}, headers=h)
    assert r.status_code == 201, r.text
    api_section = r.json()
    r = await client.post(f"{url}/section-groups", json={"title": "Reference"}, headers=h)
    if r.status_code == 201:
        await client.post(
            f"{url}/section-groups/{r.json()['id']}/sections",
            json={"sectionId": api_section["id"]},
            headers=h,
        )
    sections = (await client.get(f"{url}/sections", headers=h)).json()["items"]
    default = next(s for s in sections if s["default"])
    r = await client.post(
        f"{url}/site-spaces", json={"spaceId": v2["id"], "sectionId": default["id"]}, headers=h
    )
    assert r.status_code == 201, r.text
    v2_path = r.json()["path"]
    share_key = None
    if visibility == "share-link":
        from tests.test_share_links import secret_of

        share_key = secret_of(
            (await client.post(f"{url}/share-links", json={"name": "Readers"}, headers=h)).json()
        )
    assert (await client.post(f"{url}/publish", headers=h)).status_code == 200
    site = (await client.get(url, headers=h)).json()
    return Site(
        org=org,
        site=site,
        url=url,
        address=f"/{org}/{site['id']}/",
        guide=found,
        v2_path=v2_path,
        main_space=main["id"],
        api_path=api_section["path"],
        share_key=share_key,
    )
