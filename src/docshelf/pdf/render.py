"""A space's pages as one PDF: an HTML document built with document/html.py, laid out by
WeasyPrint. Runs in the offload pool's `render` lane (kit/offload.py), over plain data handed
to it: no database, no blob store, no network. The only resources WeasyPrint may load are the
image bytes in the job; any other URL (an image on the web, a font or stylesheet named by raw
HTML) is refused by the fetcher, so rendering can never reach another host.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass, field
from typing import Any

# Part of every export's cache key (pdf/service.py): bump it when the output would change for
# the same content, so stored PDFs of the former layout are not served again.
VERSION = "1"

_ORIGIN = "https://docshelf.invalid/"
_FILES = _ORIGIN + "files/"


@dataclass(frozen=True, slots=True)
class Page:
    id: str
    title: str
    depth: int  # 0 for a top-level page
    kind: str  # document, group or link
    markdown: str = ""
    description: str | None = None
    href: str | None = None  # a link page's target


@dataclass(frozen=True, slots=True)
class Job:
    title: str
    subtitle: str | None
    pages: tuple[Page, ...]
    # Images the pages may show, by file id: (bytes, content type).
    images: dict[str, tuple[bytes, str]] = field(default_factory=dict)


_CSS = """
@page {
  size: A4;
  margin: 2cm 2cm 2.2cm;
  @bottom-center { content: counter(page) " / " counter(pages); font-size: 8pt; color: #666; }
}
@page cover { @bottom-center { content: none; } }
html { font-family: "DejaVu Sans", sans-serif; font-size: 10pt; line-height: 1.45; color: #1b1f24; }
.cover { page: cover; text-align: center; padding-top: 30%; }
.cover h1 { font-size: 28pt; margin: 0 0 .4em; bookmark-level: none; }
.cover .subtitle { font-size: 14pt; color: #555; }
.cover .count { margin-top: 2em; color: #777; }
nav.toc { break-before: page; }
nav.toc h1 { bookmark-level: none; }
nav.toc ol { list-style: none; padding: 0; margin: 0; }
nav.toc li { margin: .15em 0; }
nav.toc a { color: inherit; text-decoration: none; }
nav.toc a::after { content: leader('.') target-counter(attr(href), page); }
section.page { break-before: page; }
section.page > header h1 { font-size: 20pt; margin: 0 0 .3em; border-bottom: 1px solid #ddd; }
section.page > header .description { color: #555; margin-top: 0; }
.body h1, .body h2, .body h3, .body h4, .body h5, .body h6 { bookmark-level: none; }
.body h1 { font-size: 16pt; } .body h2 { font-size: 13.5pt; } .body h3 { font-size: 12pt; }
.body h4, .body h5, .body h6 { font-size: 10.5pt; }
h1, h2, h3, h4, h5, h6 { break-after: avoid; }
a { color: #2458b3; }
img { max-width: 100%; }
pre { background: #f5f6f8; border: 1px solid #e2e4e8; border-radius: 4px; padding: .6em .8em;
      white-space: pre-wrap; overflow-wrap: anywhere; font-size: 8.5pt; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: .92em; }
:not(pre) > code { background: #f0f1f3; padding: 0 .2em; border-radius: 3px; }
table { border-collapse: collapse; margin: .8em 0; max-width: 100%; }
th, td { border: 1px solid #d0d4da; padding: .3em .5em; vertical-align: top; }
th { background: #f5f6f8; }
blockquote { margin-left: 0; padding-left: 1em; border-left: 3px solid #d0d4da; color: #444; }
li.task { list-style: none; }
.task-box { font-family: "DejaVu Sans", sans-serif; }
.hint { border-left: 4px solid #2458b3; background: #eef3fc; padding: .4em .9em; margin: .8em 0; }
.hint-success { border-color: #2a8a4a; background: #edf7f0; }
.hint-warning { border-color: #c7831c; background: #fdf5e8; }
.hint-danger { border-color: #c33a3a; background: #fcecec; }
.hint-label { display: none; }
.code-bar { font-size: 7.5pt; color: #555; margin: .8em 0 -.8em; }
.tab, .step, .column { border: 1px solid #e2e4e8; padding: .3em .9em; margin: .5em 0; }
.tab-title, .step-title, .code-title { font-weight: bold; margin: .3em 0; }
details { margin: .6em 0; } summary { font-weight: bold; }
.image-missing { color: #777; font-style: italic; }
.link-page { color: #555; }
"""


def _page_links(pages: tuple[Page, ...]) -> Any:
    ids = {p.id for p in pages}

    def links(href: str) -> str | None:
        if href.startswith("/pages/"):
            page, _, anchor = href[len("/pages/") :].partition("#")
            if page not in ids:
                return None  # a page left out of this export: its title stays as text
            return f"#p-{page}-{anchor}" if anchor else f"#page-{page}"
        if href.startswith(("http://", "https://", "mailto:")):
            return href
        return None  # files and unresolved paths: no download outlives the hour of its link

    return links


def _images(available: dict[str, tuple[bytes, str]]) -> Any:
    def images(src: str) -> str | None:
        if src.startswith("/files/") and src[len("/files/") :] in available:
            return _FILES + src[len("/files/") :]
        return None

    return images


def document(job: Job) -> str:
    """The export as one HTML document (pure): a cover, the contents with page numbers, then
    each page on a new sheet, its title as a PDF bookmark at its depth in the tree."""
    # Imported here, in the worker: the API process never renders, and need not hold Pygments
    # and nh3.
    from docshelf.document import html as reader

    e = html.escape
    links = _page_links(job.pages)
    images = _images(job.images)
    parts = [
        '<!doctype html><html><head><meta charset="utf-8">',
        f"<title>{e(job.title)}</title><style>{_CSS}{reader.code_stylesheet()}</style>",
        '</head><body><div class="cover">',
        f"<h1>{e(job.title)}</h1>",
    ]
    if job.subtitle:
        parts.append(f'<p class="subtitle">{e(job.subtitle)}</p>')
    count = len(job.pages)
    parts.append(f'<p class="count">{count} page{"" if count == 1 else "s"}</p></div>')
    parts.append('<nav class="toc"><h1>Contents</h1><ol>')
    for page in job.pages:
        indent = f"margin-left: {1.2 * page.depth:.1f}em"
        parts.append(f'<li style="{indent}"><a href="#page-{e(page.id)}">{e(page.title)}</a></li>')
    parts.append("</ol></nav>")
    for page in job.pages:
        level = min(page.depth + 1, 6)
        parts.append(f'<section class="page" id="page-{e(page.id)}"><header>')
        parts.append(f'<h1 style="bookmark-level: {level}">{e(page.title)}</h1>')
        if page.description:
            parts.append(f'<p class="description">{e(page.description)}</p>')
        parts.append('</header><div class="body">')
        if page.kind == "link" and page.href:
            target = links(page.href) or (page.href if reader.is_safe_url(page.href) else None)
            label = e(page.href)
            parts.append(
                f'<p class="link-page"><a href="{e(target)}">{label}</a></p>'
                if target
                else f'<p class="link-page">{label}</p>'
            )
        elif page.markdown:
            body = reader.render(
                page.markdown, links=links, images=images, anchor_prefix=f"p-{page.id}-"
            )
            parts.append(body.html)
        parts.append("</div></section>")
    parts.append("</body></html>")
    return "".join(parts)


class LibraryMissing(Exception):
    """WeasyPrint could not open a system library (its import dlopens Pango and the rest)."""


def render_pdf(job: Job) -> bytes:
    """The PDF bytes of `job`. Runs in a worker process (imports WeasyPrint only there)."""
    try:
        from weasyprint import HTML
        from weasyprint.urls import URLFetcher, URLFetcherResponse
    except OSError as exc:
        raise LibraryMissing(str(exc)) from None

    # Missing images and refused URLs are expected (alt text shows instead); WeasyPrint's
    # warnings about them would only fill the worker's stderr.
    logging.getLogger("weasyprint").setLevel(logging.ERROR)

    class Fetcher(URLFetcher):  # type: ignore[misc]
        def fetch(self, url: str, headers: Any = None) -> Any:
            if url.startswith(_FILES) and url[len(_FILES) :] in job.images:
                data, content_type = job.images[url[len(_FILES) :]]
                return URLFetcherResponse(url, data, {"Content-Type": content_type})
            raise ValueError("only the space's own images are loaded")

    pdf: bytes = HTML(string=document(job), base_url=_ORIGIN, url_fetcher=Fetcher()).write_pdf()
    return pdf
