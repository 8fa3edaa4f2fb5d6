"""HTML to one page of markdown, apart from convert.py so that its parser and converter load only
where HTML is converted."""

from __future__ import annotations

import re
import warnings
from urllib.parse import unquote, urljoin, urlsplit

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, Tag, XMLParsedAsHTMLWarning
from markdownify import MarkdownConverter

from docshelf.imports.convert import Imported, ImportedPage, _squash, _stem

_NOT_CONTENT = ["script", "style", "noscript", "template", "nav", "title"]
_BLANK_RUN = re.compile(r"\n{3,}")
_LANGUAGE = re.compile(r"^(?:language|lang)-(.+)$")


def _code_language(pre: Tag) -> str | None:
    code = pre.find("code")
    for el in (pre, code) if isinstance(code, Tag) else (pre,):
        for cls in el.get_attribute_list("class"):
            if match := _LANGUAGE.match(cls or ""):
                return match.group(1)
    return None


def _absolutize(soup: BeautifulSoup, url: str) -> None:
    """Point relative links and images back at the site they came from: here they would lead
    nowhere."""
    if urlsplit(url).scheme not in ("http", "https"):
        return
    base = url
    base_tag = soup.find("base", href=True)
    if isinstance(base_tag, Tag):
        base = urljoin(url, str(base_tag["href"]))
    for tag, attr in (("a", "href"), ("img", "src")):
        for el in soup.find_all(tag):
            value = el.get(attr) if isinstance(el, Tag) else None
            if isinstance(value, str) and value.strip() and not value.startswith("#"):
                el[attr] = urljoin(base, value.strip())


def convert_html(data: bytes, url: str) -> Imported:
    """One page: titled by `<title>`, else the first `<h1>`; its `<main>`, else `<article>`, else
    `<body>` as markdown, without scripts, styles and navigation. Relative links and images are
    made absolute against `url` (nothing is downloaded)."""
    with warnings.catch_warnings():
        # Odd but harmless input (plain text, XML) is still converted; pytest and the server's
        # warning filters need not hear about it.
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(data, "html.parser")
    title_tag = soup.find("title")
    title = _squash(title_tag.get_text()) if isinstance(title_tag, Tag) else ""
    for el in soup.find_all(_NOT_CONTENT):
        el.decompose()
    _absolutize(soup, url)
    root: Tag = soup
    for name in ("main", "article", "body"):
        found = soup.find(name)
        if isinstance(found, Tag):
            root = found
            break
    h1 = root.find("h1")
    if isinstance(h1, Tag):
        heading = _squash(h1.get_text())
        # The page shows its title above the body already.
        if heading and (not title or heading == title):
            title = title or heading
            h1.decompose()
    converter = MarkdownConverter(
        heading_style="ATX", bullets="-", code_language_callback=_code_language
    )
    markdown = _BLANK_RUN.sub("\n\n", converter.convert_soup(root)).strip()
    path = urlsplit(url).path.rstrip("/")
    fallback = _stem(unquote(path)) if path else urlsplit(url).netloc
    if markdown:
        markdown += "\n"
    page = ImportedPage("p1", None, title or fallback or "Untitled", markdown)
    return Imported((page,), (), 1, 1, (), detected="html")
