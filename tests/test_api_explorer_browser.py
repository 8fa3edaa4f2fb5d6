"""The API explorer (/docs) in a real browser: Debian's Chromium, headless, driven by Playwright,
against the real server. Swagger UI must read the OpenAPI 3.1 document the app serves and show
every operation; a Swagger UI that only reads 3.0 answers "Unable to render this definition"."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests.browser import chromium, running_server

_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


async def test_the_explorer_renders_every_operation(
    settings: Settings, db: AsyncEngine, tmp_path: Path
) -> None:
    with running_server(settings.resolved_database_url, tmp_path) as base:
        async with httpx.AsyncClient(timeout=30) as client:
            document = (await client.get(f"{base}/openapi.json")).json()
        assert document["openapi"].startswith("3.1")
        expected = sum(
            1 for item in document["paths"].values() for method in item if method in _METHODS
        )
        async with chromium() as browser:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            outside: list[str] = []
            page.on(
                "request",
                lambda r: None if r.url.startswith(base) else outside.append(r.url),
            )
            await page.goto(f"{base}/docs")
            # Either the operations or Swagger UI's refusal of the document.
            await page.wait_for_selector(".opblock, .version-pragma", timeout=60_000)
            text = await page.inner_text("body")
            assert "Unable to render" not in text
            assert await page.inner_text(".info .title") == (
                f"{document['info']['title']}\n {document['info']['version']} \nOAS 3.1"
            )
            shown = await page.locator(".opblock").count()
            assert shown == expected
            first = page.locator(".opblock-summary-path").first
            assert (await first.get_attribute("data-path") or "").startswith("/")
            assert errors == []
            assert outside == []
