"""The calls GitBook's renderer made for the pages of tests/renderer_site.py (recorded from a run
of test_renderer.py's setup through a recording proxy: tests/data/renderer_calls.json),
replayed in order against a fresh server, so that a regression shows without building the
renderer. Ids in the recording are placeholders, filled from the site built here; each call
authenticated as the renderer does: the published-URL look-ups with no token, every other
call with the site token (`apiToken`) the last look-up answered."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests import factories, renderer_site
from tests.helpers import second_app

RECORDING = Path(__file__).parent / "data" / "renderer_calls.json"
PUBLIC = "https://docs.example.test"
# GitBook's `PublishedSiteContent` required fields.
LOOKUP_FIELDS = {
    "site",
    "siteSpace",
    "space",
    "pathname",
    "basePath",
    "siteBasePath",
    "apiToken",
    "organization",
    "complete",
    "canonicalUrl",
}


def _names(b: renderer_site.Built, revisions: dict[str, str]) -> dict[str, str]:
    names = {
        "{org}": b.org,
        "{site}": b.handbook.id,
        "{partners}": b.partners.id,
        "{portal}": b.portal.id,
        "{share_key}": b.share_key,
        "{image}": b.image,
    }
    for key, site in (
        ("handbook", b.handbook),
        ("api", b.api),
        ("partners", b.partners),
        ("portal", b.portal),
    ):
        names[f"{{space:{key}}}"] = site.space
        names[f"{{revision:{key}}}"] = revisions[site.space]
        names.update({f"{{page:{title}}}": pid for title, pid in site.pages.items()})
    names.update({f"{{section:{k}}}": v for k, v in b.sections.items()})
    return names


def _fill(value: Any, names: dict[str, str]) -> Any:
    text = json.dumps(value)
    text = re.sub(r"\{[a-z_]+(:[^{}\"]+)?\}", lambda m: names[m.group(0)], text)
    return json.loads(text)


async def test_the_renderers_calls_replayed(db: AsyncEngine, settings: Settings) -> None:
    recording = json.loads(RECORDING.read_text())
    _, (admin,) = await factories.org_with_members(db)
    async with second_app(settings, public_url=PUBLIC) as client:
        client.headers.update(admin.headers)
        built = await renderer_site.build(client)
        del client.headers["Authorization"]
        revisions = {
            site.space: (
                await client.get(f"/v1/spaces/{site.space}", headers=admin.headers)
            ).json()["revision"]
            for site in (built.handbook, built.api, built.partners, built.portal)
        }
        names = _names(built, revisions)
        token: str | None = None
        for n, call in enumerate(recording["calls"]):
            path = _fill(call["path"], names)
            headers = {"Authorization": f"Bearer {token}"} if call["auth"] == "site" else {}
            assert call["auth"] != "site" or token, f"call {n} needs a site token"
            r = await client.request(
                call["method"], path, json=_fill(call.get("body"), names), headers=headers
            )
            where = (n, call["method"], call["path"])
            assert r.status_code == call["status"], (where, r.text[:500])
            if r.status_code != 200:
                continue
            body = r.json()
            if path == "/v1/urls/published":
                assert set(body) >= LOOKUP_FIELDS, (where, body)
                answer = _fill(call["answer"], names)
                assert {k: body.get(k) for k in answer} == answer, where
                assert ("page" in answer) == ("page" in body), where
                token = body["apiToken"]
            elif path.endswith("/document") or "/document?" in path:
                assert body["object"] == "document" and body["nodes"], where
            elif path.endswith("/meta-links"):
                assert body == {"alternates": []}, where
            elif "/search" in path:
                assert [p["title"] for i in body["items"] for p in i["pages"]] == ["Install"]
            else:
                assert body.get("object") in {"space", "revision", "published-content-site"}, (
                    where,
                    body.get("object"),
                )
