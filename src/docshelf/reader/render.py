"""A page's body as HTML, rendered once per (revision, page, base path) and kept: revisions never
change, so a kept rendering is never stale. Rendering is CPU work: a big page is rendered in a
worker process (kit/offload), a small one inline (the round trip would cost more)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from docshelf.config import Settings
from docshelf.document import html as reader_html
from docshelf.document import markdown as md
from docshelf.kit import offload
from docshelf.kit.lru import SizedLRU

# Pages (of text) above this are rendered off the event loop.
OFFLOAD_CHARS = 20_000
# And given this long, more for a long page (one parse; eight times the estimate leaves room
# for a loaded machine: a page at the size limit gets a minute and a half).
RENDER_SECONDS = 30
# Bounded by the HTML's length: a body can be ~1 MB (a 512 KB page of markdown), so a count
# (4,096 before) bounded nothing.
_kept: SizedLRU[tuple[str, str, str, Hashable], Body] = SizedLRU(
    Settings().reader_cache_mb * 1024 * 1024, lambda body: len(body.html)
)


@dataclass(frozen=True, slots=True)
class Body:
    html: str
    headings: tuple[reader_html.Heading, ...]


def _render(markdown: str, base_path: str, paths: dict[str, str]) -> Body:
    """Pure, so that it can run in a worker: `paths` maps page ids to their paths."""

    def links(href: str) -> str | None:
        if href.startswith("/pages/"):
            page, _, anchor = href[len("/pages/") :].partition("#")
            path = paths.get(page)
            if path is None:
                return None
            return f"{base_path}{path}" + (f"#{anchor}" if anchor else "")
        if href.startswith("/files/"):
            return f"{base_path}~files/{href[len('/files/') :]}"
        return href if reader_html.is_safe_url(href) else None

    def images(src: str) -> str | None:
        if src.startswith("/files/"):
            return f"{base_path}~files/{src[len('/files/') :]}"
        return src if src.startswith("https://") else None

    done = reader_html.render(markdown, links=links, images=images)
    return Body(done.html, done.headings)


def kept(revision_id: str, page_id: str, base_path: str, variant: Hashable) -> Body | None:
    """`variant` names what the visitor may see that links in the body depend on."""
    key = (revision_id, page_id, base_path, variant)
    return _kept.get(key)


async def render(
    revision_id: str,
    page_id: str,
    base_path: str,
    variant: Hashable,
    markdown: str,
    paths: dict[str, str],
    tenant: str,
) -> Body:
    """`tenant`: the site's organization, which takes turns with others for the lane."""
    if len(markdown) > OFFLOAD_CHARS:
        seconds = RENDER_SECONDS + 8 * md.parse_cost_us(markdown) / 1e6
        body = await offload.run(
            _render, markdown, base_path, paths, seconds=seconds, lane="read", tenant=tenant
        )
    else:
        body = _render(markdown, base_path, paths)
    _kept.put((revision_id, page_id, base_path, variant), body)
    return body
