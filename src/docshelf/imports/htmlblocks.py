"""HTML blocks of an imported page as the markdown Docshelf stores (see imports/markup.py):
apart so that BeautifulSoup and markdownify load only for pages that hold HTML blocks."""

from __future__ import annotations

import html
import re
import warnings
from typing import Any

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, Tag
from markdownify import MarkdownConverter

from docshelf.document.model import safe_url
from docshelf.imports.dialects import Notes

__all__ = ["html_block"]

_KEPT_ATTRS = frozenset(("href", "src", "alt", "id", "name", "title", "open", "colspan"))
# Elements with no meaning in a page, or that run something: left out with what they hold.
_LEFT_OUT = (
    *("script", "style", "noscript", "template", "iframe", "object", "embed", "form"),
    *("input", "button", "select", "textarea", "svg", "canvas", "audio", "video"),
)
# Elements whose meaning the document model holds (the rest keep only their text).
_MEANT = frozenset(
    (
        *("a", "abbr", "b", "blockquote", "br", "caption", "code", "dd", "del", "details", "div"),
        *("dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr"),
        *("i", "img", "kbd", "li", "mark", "ol", "p", "pre", "s", "span", "strike", "strong"),
        *("sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u"),
        *("ul", "center", "picture", "source"),
        # The document's frame, which lxml adds around a block (a `<head>` for a leading
        # `<script>`): never text of the page's own.
        *("html", "head", "body"),
    )
)
_BLANK_RUN = re.compile(r"\n{3,}")
_COMPONENT = re.compile(r"<([A-Z][\w.]*)")


def _quiet_soup(text: str) -> BeautifulSoup:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        # lxml (libxml2): linear on broken HTML (unclosed quotes, comments), where the
        # standard library's parser takes quadratic time.
        return BeautifulSoup(text, "lxml")


class _Converter(MarkdownConverter):
    """markdownify, with cells on one line (a GitBook table cell holds text and line breaks),
    `<details>` as the expandable Docshelf stores, and nothing unsafe."""

    def convert_a(self, el: Any, text: str, parent_tags: Any) -> str:
        href = str(el.get("href") or "")
        if not href or not safe_url(href) or not text.strip():
            return text
        label = text.replace("[", "\\[").replace("]", "\\]")
        return f"[{label}](<{href}>)" if " " in href else f"[{label}]({href})"

    def convert_img(self, el: Any, text: str, parent_tags: Any) -> str:
        src = str(el.get("src") or "")
        if not safe_url(src):
            return ""
        alt = str(el.get("alt") or "").replace("[", "").replace("]", "")
        return f"![{alt}](<{src}>)" if " " in src else f"![{alt}]({src})"

    def convert_br(self, el: Any, text: str, parent_tags: Any) -> str:
        # A table cell is one line of markdown: the document model reads its <br> back.
        return "<br>" if parent_tags & {"td", "th"} else "\\\n"

    def _cell(self, el: Any, text: str) -> str:
        text = text.strip().replace("\n\n", "<br>").replace("\n", "<br>").replace("|", "\\|")
        colspan = el.get("colspan")
        extra = int(colspan) - 1 if isinstance(colspan, str) and colspan.isdigit() else 0
        return f" {text} |" + " |" * min(extra, 50)

    def convert_td(self, el: Any, text: str, parent_tags: Any) -> str:
        return self._cell(el, text)

    def convert_th(self, el: Any, text: str, parent_tags: Any) -> str:
        return self._cell(el, text)

    def convert_details(self, el: Any, text: str, parent_tags: Any) -> str:
        summary = el.find("summary")
        title = ""
        if isinstance(summary, Tag):
            title = " ".join(summary.get_text(" ").split())
        head = "<details open>" if el.has_attr("open") else "<details>"
        safe = html.escape(title, quote=False)
        return f"\n\n{head}\n\n<summary>{safe}</summary>\n\n{text.strip()}\n\n</details>\n\n"

    def convert_summary(self, el: Any, text: str, parent_tags: Any) -> str:
        return ""  # written by its <details>

    def convert_figure(self, el: Any, text: str, parent_tags: Any) -> str:
        """A figure's image with its caption as the image's title, which the document model
        reads as the image's caption (GitBook's own markdown writes captions as figures)."""
        img = el.find("img")
        caption = el.find("figcaption")
        if not isinstance(img, Tag) or not isinstance(caption, Tag):
            return text
        src = str(img.get("src") or "")
        if not safe_url(src):
            return ""
        alt = str(img.get("alt") or "").replace("[", "").replace("]", "")
        title = " ".join(caption.get_text(" ").split()).replace("\\", "\\\\").replace('"', '\\"')
        dest = f"<{src}>" if " " in src else src
        return f'\n\n![{alt}]({dest} "{title}")\n\n' if title else f"\n\n![{alt}]({dest})\n\n"

    def convert_figcaption(self, el: Any, text: str, parent_tags: Any) -> str:
        text = text.strip()  # a caption without its figure's image: a line in italics
        return f"\n\n*{text}*\n\n" if text else ""

    def convert_mark(self, el: Any, text: str, parent_tags: Any) -> str:
        return text  # GitBook's coloured text: the document model here has no colour mark


# Elements open inside each other that are converted; deeper HTML (or tags left open, which the
# parser nests) keeps only its text: the converter recurses once per level.
MAX_HTML_DEPTH = 100
_TAG_SCAN = re.compile(r"<(/?)([A-Za-z][\w-]*)[^<>]*?(/?)>")
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr")
)
_ANY_TAG = re.compile(r"<[^<>]*>")


def _too_deep(text: str) -> bool:
    depth = 0
    for m in _TAG_SCAN.finditer(text):
        if m.group(3) or m.group(2).lower() in _VOID:
            continue
        depth += -1 if m.group(1) else 1
        if depth > MAX_HTML_DEPTH:
            return True
    return False


def html_block(text: str, notes: Notes, layout: set[str]) -> str:
    """An HTML block as markdown."""
    if _too_deep(text):
        notes.approximated.append(f"HTML nested more than {MAX_HTML_DEPTH} deep kept as its text")
        plain = html.unescape(_ANY_TAG.sub(" ", text))
        return "\n".join(" ".join(line.split()) for line in plain.split("\n") if line.strip())
    soup = _quiet_soup(text)
    dropped = sorted({el.name for el in soup.find_all(_LEFT_OUT)})
    for el in soup.find_all(_LEFT_OUT):
        el.decompose()
    if dropped:
        notes.approximated.append(
            "HTML " + ", ".join(f"<{n}>" for n in dropped) + " left out: no place in a page"
        )
    # MDX components (`<Logo />`, capitalised) are the site's code, with no page of their own.
    components = sorted(set(_COMPONENT.findall(text)))
    if components:
        notes.approximated.append(
            "MDX component " + ", ".join(f"<{c}>" for c in components[:8]) + " left out"
        )
        lowered = {c.lower() for c in components}
        for el in soup.find_all(lambda el: el.name in lowered):
            el.decompose()
    unknown = sorted({el.name for el in soup.find_all(True) if el.name not in _MEANT})
    if unknown:
        notes.approximated.append(
            "HTML " + ", ".join(f"<{n}>" for n in unknown[:8]) + " kept as its text"
        )
    if soup.find("mark") is not None:
        notes.approximated.append("HTML <mark> kept as its text, without its colour")
    layout.update(a for el in soup.find_all(True) for a in el.attrs if a not in _KEPT_ATTRS)
    converter = _Converter(
        heading_style="ATX",
        bullets="-",
        keep_inline_images_in=sorted(_MEANT),
        escape_misc=False,
    )
    markdown: str = converter.convert_soup(soup)
    return _BLANK_RUN.sub("\n\n", markdown).strip("\n")
