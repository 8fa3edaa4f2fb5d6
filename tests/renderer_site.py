"""A small docs site built through the API the way a GitBook user builds one, for the tests
that read it through GitBook's own renderer (test_renderer.py) and replay that renderer's calls
(test_renderer_calls.py): two sections, a nested page, an image, a hint, a code block, tabs and
a reusable content; beside it a share-link site and a visitor-auth site."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from typing import Any

import httpx
from PIL import Image

WELCOME = """# Welcome

Docshelf serves this handbook to GitBook's renderer.

{% hint style="info" %}
Hints keep their style: this one is informative.
{% endhint %}

```python
def greet(name: str) -> str:
    return f"Hello, {name}"
```

Read [Install](/pages/{install}) next.
"""

GETTING_STARTED = """# Getting started

Everything you need before you start.
"""

INSTALL = """# Install

Choose your system.

{% tabs %}
{% tab title="Debian" %}
Run apt-get install docshelf-example.
{% endtab %}

{% tab title="macOS" %}
Run brew install docshelf-example.
{% endtab %}
{% endtabs %}
"""

SHARED = """# Shared notes

The paragraph below comes from a reusable content.

{% include "notice" %}
"""

NOTICE = "This notice is written once and shown on every page that includes it.\n"

REFERENCE = """# API reference

The second section documents the endpoints.
"""

SECRET = """# Partner guide

Only partners with the link read this.
"""

VISITORS = """# Customer portal

Signed-in customers read this.
"""


def png(color: str = "red", size: tuple[int, int] = (48, 32)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


@dataclass
class Site:
    id: str
    space: str
    pages: dict[str, str] = field(default_factory=dict)


@dataclass
class Built:
    org: str
    handbook: Site
    api: Site
    sections: dict[str, str]
    partners: Site
    share_key: str
    portal: Site
    visitor_key: str
    image: str


async def _ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.request.url, response.text)
    return response.json() if response.content else None


async def _space(c: httpx.AsyncClient, org: str, title: str) -> str:
    r = await c.post(f"/v1/orgs/{org}/spaces", json={"title": title, "editMode": "live"})
    return str((await _ok(r, 201))["id"])


async def _edit(c: httpx.AsyncClient, space: str, changes: list[dict[str, Any]]) -> Any:
    return await _ok(await c.post(f"/v1/spaces/{space}/content", json={"changes": changes}))


async def _one_page_space(c: httpx.AsyncClient, org: str, title: str, page: str, text: str) -> str:
    space = await _space(c, org, title)
    await _edit(
        c, space, [{"operation": "insert_page", "title": page, "document": {"markdown": text}}]
    )
    return space


async def _pages(c: httpx.AsyncClient, space: str) -> dict[str, str]:
    """Page title -> id, nested pages included."""
    found: dict[str, str] = {}

    def walk(pages: list[dict[str, Any]]) -> None:
        for page in pages:
            found[page["title"]] = page["id"]
            walk(page.get("pages", []))

    walk((await _ok(await c.get(f"/v1/spaces/{space}/content/pages")))["pages"])
    return found


async def _site(c: httpx.AsyncClient, org: str, title: str, visibility: str, space: str) -> str:
    r = await c.post(
        f"/v1/orgs/{org}/sites", json={"title": title, "visibility": visibility, "spaces": [space]}
    )
    return str((await _ok(r, 201))["id"])


async def build(c: httpx.AsyncClient) -> Built:
    """The sites, made with the admin's client `c`."""
    org = str((await _ok(await c.get("/v1/orgs")))["items"][0]["id"])

    guide = await _space(c, org, "Guide")
    uploaded = await _ok(
        await c.post(
            f"/v1/spaces/{guide}/content?compat=false",
            json={
                "changes": [
                    {
                        "operation": "insert_files",
                        "files": [
                            {
                                "name": "diagram.png",
                                "contentType": "image/png",
                                "base64": base64.b64encode(png("teal")).decode(),
                            }
                        ],
                    }
                ]
            },
        )
    )
    image = str(uploaded["insertedFiles"][0]["id"])
    await _edit(
        c,
        guide,
        [
            {
                "operation": "insert_reusable_content",
                "title": "Notice",
                "ref": "notice",
                "document": {"markdown": NOTICE},
            },
            {
                "operation": "insert_page",
                "title": "Welcome",
                "ref": "welcome",
                "document": {"markdown": "# Welcome\n"},
            },
            {
                "operation": "insert_page",
                "title": "Getting started",
                "ref": "start",
                "document": {"markdown": GETTING_STARTED},
            },
            {
                "operation": "insert_page",
                "title": "Install",
                "into": "start",
                "document": {"markdown": INSTALL},
            },
            {
                "operation": "insert_page",
                "title": "Diagrams",
                "document": {
                    "markdown": "# Diagrams\n\nThe architecture at a glance.\n\n"
                    f"![The architecture](/files/{image})\n"
                },
            },
            {"operation": "insert_page", "title": "Shared notes", "document": {"markdown": SHARED}},
        ],
    )
    guide_pages = await _pages(c, guide)
    await _edit(
        c,
        guide,
        [
            {
                "operation": "update_page",
                "page": guide_pages["Welcome"],
                "document": {"markdown": WELCOME.replace("{install}", guide_pages["Install"])},
            }
        ],
    )
    api = await _one_page_space(c, org, "API", "API reference", REFERENCE)
    handbook = await _site(c, org, "Handbook", "public", guide)
    site_base = f"/v1/orgs/{org}/sites/{handbook}"
    # Its first section takes in the site's space (a section named after the site, the default);
    # the second shows the API space.
    second = await _ok(
        await c.post(f"{site_base}/sections", json={"spaceId": api, "title": "API"}), 201
    )
    structure = (await _ok(await c.get(f"{site_base}/structure")))["structure"]
    first = next(section for section in structure if section["default"])
    await _ok(await c.post(f"{site_base}/publish"))

    partners_space = await _one_page_space(c, org, "Partners", "Partner guide", SECRET)
    partners = await _site(c, org, "Partners", "share-link", partners_space)
    await _ok(await c.post(f"/v1/orgs/{org}/sites/{partners}/publish"))
    link = await _ok(
        await c.post(f"/v1/orgs/{org}/sites/{partners}/share-links", json={"name": "Partners"}),
        201,
    )

    portal_space = await _one_page_space(c, org, "Portal", "Customer portal", VISITORS)
    portal = await _site(c, org, "Portal", "visitor-auth", portal_space)
    await _ok(await c.post(f"/v1/orgs/{org}/sites/{portal}/publish"))
    auth = await _ok(await c.get(f"/v1/orgs/{org}/sites/{portal}/publishing/auth"))

    return Built(
        org=org,
        handbook=Site(handbook, guide, await _pages(c, guide)),
        api=Site(handbook, api, await _pages(c, api)),
        sections={"guide": first["id"], "api": second["id"]},
        partners=Site(partners, partners_space, await _pages(c, partners_space)),
        share_key=link["urls"]["published"].split("shareKey=", 1)[1],
        portal=Site(portal, portal_space, await _pages(c, portal_space)),
        visitor_key=str(auth["privateKey"]),
        image=image,
    )
