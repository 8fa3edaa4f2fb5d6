"""A page's markdown as safe HTML, for reading: the PDF export now, the published site later.

Pure and I/O-free: whatever the output points at (other pages, the space's files) is decided by
the caller's callbacks. The parser is the one reads use (`markdown.reading_parser`) with what a
reader needs on top: GFM tables and task lists, and GitBook's blocks (`{% hint %}`, tabs, code
titles, steppers, columns, content references, embeds) which the stored markdown keeps as lines
of text. Expandables are GitBook's `<details><summary>` raw HTML.

Safety does not rest on escaping alone: raw HTML in the markdown keeps only a short list of
formatting tags, never an attribute; every link and image passes the callbacks and a scheme
check (`javascript:`, `data:` and the like become plain text); and the whole output is cleaned
once more by nh3 (ammonia) with an allow-list of the tags and attributes this module writes,
which also balances whatever tags the markdown left open.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import OptionsDict

from docshelf.document import markdown as md

if TYPE_CHECKING:
    import nh3
    from pygments.formatters import HtmlFormatter
    from pygments.lexer import Lexer

__all__ = [
    "CODE_CSS_CLASS",
    "DARK_CODE_STYLE",
    "LIGHT_CODE_STYLE",
    "Heading",
    "Rendered",
    "code_stylesheet",
    "is_safe_url",
    "render",
]

LinkResolver = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class Heading:
    level: int  # 1..6
    anchor: str  # the element id, prefix included
    text: str


@dataclass(frozen=True, slots=True)
class Rendered:
    html: str
    headings: tuple[Heading, ...]


# -- GitBook blocks -------------------------------------------------------------------------------

# Containers hold markdown up to their end tag; the others stand alone (an embed's optional
# caption and end tag are then ordinary text and an ignored line).
_CONTAINERS = frozenset(
    {"hint", "tabs", "tab", "code", "stepper", "step", "columns", "column", "content-ref"}
)
_STANDALONE = frozenset({"embed", "file"})
_TAG_LINE = re.compile(r"\{%\s*(end)?([a-z][a-z-]*)((?:\s+[A-Za-z][\w-]*=\"[^\"\n]*\")*)\s*%\}")
_ATTR = re.compile(r"([A-Za-z][\w-]*)=\"([^\"\n]*)\"")
_HINT_STYLES = frozenset({"info", "success", "warning", "danger"})


def _gitbook_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False  # an indented code block
    begin = state.bMarks[start_line] + state.tShift[start_line]
    if not state.src.startswith("{%", begin):
        return False  # the common case, decided without copying the line
    line = state.src[begin : state.eMarks[start_line]].rstrip()
    match = _TAG_LINE.fullmatch(line)
    if match is None:
        return False
    closing, name = bool(match[1]), match[2]
    if name not in _CONTAINERS and name not in _STANDALONE:
        return False
    if silent:
        return True
    token = state.push("gitbook_close" if closing else "gitbook_open", "", 0)
    token.info = name
    token.meta = {"attrs": dict(_ATTR.findall(match[3] or ""))}
    token.map = [start_line, start_line + 1]
    state.line = start_line + 1
    return True


# -- task lists -----------------------------------------------------------------------------------

_TASK = re.compile(r"\[([ xX])\][ \t]")


def _task_lists(state: StateCore) -> None:
    """`- [ ] x` / `- [x] x` items: the marker becomes a `task_box` token (GFM's rule: the
    marker starts the item's first paragraph)."""
    tokens = state.tokens
    for i in range(2, len(tokens)):
        inline = tokens[i]
        if not (
            inline.type == "inline"
            and tokens[i - 1].type == "paragraph_open"
            and tokens[i - 2].type == "list_item_open"
            and inline.children
            and inline.children[0].type == "text"
        ):
            continue
        first = inline.children[0]
        found = _TASK.match(first.content)
        if found is None:
            continue
        first.content = first.content[found.end() :]
        box = Token("task_box", "", 0)
        box.meta = {"checked": found[1] != " "}
        inline.children.insert(0, box)
        tokens[i - 2].attrSet("class", "task")


def _parser() -> MarkdownIt:
    parser = md.reading_parser().enable("table")
    parser.block.ruler.before(
        "fence",
        "gitbook_block",
        _gitbook_block,
        {"alt": ["paragraph", "reference", "blockquote", "list"]},
    )
    parser.core.ruler.after("inline", "task_lists", _task_lists)
    # Links are judged when rendered (callbacks, then the scheme check): the parse keeps them all.
    parser.validateLink = lambda url: True  # type: ignore[method-assign]
    return parser


# -- URLs ----------------------------------------------------------------------------------------

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
# Browsers drop these anywhere in a URL before reading its scheme ("java\tscript:").
_IGNORED_IN_URLS = re.compile(r"[\x00-\x20\x7f]+")


def is_safe_url(url: str) -> bool:
    # Judged as written and percent-decoded (markdown-it encodes "java\tscript:" as
    # "java%09script:"), so no spelling of a scheme slips through.
    squeezed = _IGNORED_IN_URLS.sub("", unquote(url))
    if squeezed.startswith("//"):
        return True  # protocol-relative: http(s) on the reader's side
    scheme = _SCHEME.match(squeezed)
    return scheme is None or scheme[1].lower() in _SAFE_SCHEMES


# -- raw HTML ------------------------------------------------------------------------------------

# Tags raw HTML keeps (never an attribute); the text of any other tag is kept, escaped, except
# for tags whose text is code or chrome.
_RAW_TAGS = frozenset(
    {
        "b", "strong", "i", "em", "u", "s", "del", "ins", "sub", "sup", "kbd", "code", "mark",
        "small", "br", "p", "div", "span", "details", "summary", "blockquote",
    }
)  # fmt: skip
_RAW_DROPPED = frozenset(
    {"script", "style", "template", "iframe", "object", "embed", "noscript", "textarea",
     "title", "svg", "math", "select", "noembed", "noframes", "xmp", "plaintext"}
)  # fmt: skip
_VOID = frozenset({"br", "hr", "img", "input", "wbr", "meta", "link", "source", "area", "col"})


class _RawFilter(HTMLParser):
    """Raw HTML reduced to the allowed tags without attributes, and escaped text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.dropping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _RAW_DROPPED:
            if tag not in _VOID:
                self.dropping += 1
        elif tag in _RAW_TAGS and not self.dropping:
            self.out.append(f"<{tag}>")

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        if tag in _RAW_TAGS and not self.dropping:
            self.out.append(f"<{tag}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in _RAW_DROPPED:
            self.dropping = max(0, self.dropping - 1)
        elif tag in _RAW_TAGS and tag not in _VOID and not self.dropping:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if not self.dropping:
            self.out.append(html.escape(data, quote=False))


def _raw(fragment: str) -> str:
    parser = _RawFilter()
    parser.feed(fragment)
    parser.close()
    return "".join(parser.out)


# -- rendering -----------------------------------------------------------------------------------

CODE_CSS_CLASS = "highlight"
_ENV = "docshelf_html"


# Pygments (~4 MB with its lexer tables) is imported on the first page rendered, not by every
# API process that never renders one.
@functools.cache
def _formatter() -> HtmlFormatter[str]:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(nowrap=True)


# Pygments' styles whose every token colour reads at WCAG AA (4.5:1) on the reader's code
# backgrounds, light and dark (tests/test_reader_browser.py measures them as drawn).
LIGHT_CODE_STYLE = "default"
DARK_CODE_STYLE = "github-dark"


def code_stylesheet(style: str = LIGHT_CODE_STYLE) -> str:
    """The CSS of the highlighted code's token classes in one of Pygments' styles."""
    from pygments.formatters import HtmlFormatter

    formatter = HtmlFormatter(style=style)
    return str(formatter.get_style_defs(f".{CODE_CSS_CLASS}"))  # type: ignore[no-untyped-call]


def _lexer(info: str) -> Lexer | None:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    words = info.split()
    if not words:
        return None
    try:
        return get_lexer_by_name(words[0].lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@dataclass
class _State:
    links: LinkResolver
    images: LinkResolver
    prefix: str
    headings: list[Heading] = field(default_factory=list)
    # Whether each open link was kept (a refused one renders its text alone).
    open_links: list[bool] = field(default_factory=list)
    # GitBook containers open, innermost last: (name, the HTML that closes it).
    blocks: list[tuple[str, str]] = field(default_factory=list)


def _state(env: MutableMapping[str, Any]) -> _State:
    state = env[_ENV]
    assert isinstance(state, _State)
    return state


def _plain(tokens: Sequence[Token] | None) -> str:
    out: list[str] = []
    for token in tokens or ():
        if token.type in ("text", "code_inline"):
            out.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif token.type == "image":
            out.append(_plain(token.children))
    return "".join(out)


def _anchors(tokens: list[Token], state: _State) -> None:
    """Every heading gets GitHub's anchor, numbered as github-slugger does when repeated (the
    anchors `split_sections` gives top-level headings, as long as no nested heading comes
    first), with the caller's prefix so that pages put side by side stay unique."""
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or i + 1 >= len(tokens):
            continue
        text = _plain(tokens[i + 1].children).strip()
        slug = base = md.heading_anchor(text)
        while slug in seen:
            seen[base] += 1
            slug = f"{base}-{seen[base]}"
        seen[slug] = 0
        anchor = state.prefix + slug
        token.attrSet("id", anchor)
        state.headings.append(Heading(int(token.tag[1]), anchor, text))


def _href(state: _State, href: str) -> str | None:
    if href.startswith("#"):
        return f"#{state.prefix}{href[1:]}" if len(href) > 1 else None
    resolved = state.links(href)
    return resolved if resolved is not None and is_safe_url(resolved) else None


Rule = Callable[[Any, Sequence[Token], int, OptionsDict, MutableMapping[str, Any]], str]


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any) -> str:
    state = _state(env)
    href = _href(state, str(tokens[idx].attrGet("href") or ""))
    state.open_links.append(href is not None)
    if href is None:
        return ""
    title = tokens[idx].attrGet("title")
    extra = f' title="{html.escape(str(title))}"' if title else ""
    return f'<a href="{html.escape(href)}"{extra}>'


def _link_close(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any
) -> str:
    state = _state(env)
    kept = state.open_links.pop() if state.open_links else False
    return "</a>" if kept else ""


def _image(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any) -> str:
    state = _state(env)
    token = tokens[idx]
    alt = _plain(token.children)
    src = state.images(str(token.attrGet("src") or ""))
    if src is None or not is_safe_url(src):
        return f'<span class="image-missing">{html.escape(alt)}</span>' if alt else ""
    title = token.attrGet("title")
    extra = f' title="{html.escape(str(title))}"' if title else ""
    return f'<img src="{html.escape(src)}" alt="{html.escape(alt)}"{extra}>'


def _code(content: str, info: str) -> str:
    lexer = _lexer(info)
    if lexer is None:
        body = html.escape(content)
    else:
        from pygments import highlight

        body = highlight(content, lexer, _formatter())
    language = info.split()[0] if info.split() else ""
    data = f' data-language="{html.escape(language)}"' if language else ""
    bar = ""
    if language:
        # Pygments' name for the language ("js" is JavaScript), else the word as written.
        shown = html.escape(lexer.name if lexer is not None else language)
        bar = f'<div class="code-bar"><span class="code-language">{shown}</span></div>'
    pre = f'<pre class="{CODE_CSS_CLASS}"{data}><code>{body}</code></pre>'
    return f'<div class="code-block">{bar}{pre}</div>\n'


def _fence(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any) -> str:
    token = tokens[idx]
    return _code(token.content, unescapeAll(token.info))


def _code_block(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any
) -> str:
    return _code(tokens[idx].content, "")


def _html_raw(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any) -> str:
    return _raw(tokens[idx].content)


def _task_box(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any) -> str:
    checked = tokens[idx].meta.get("checked")
    return f'<span class="task-box">{"☑" if checked else "☐"}</span> '


def _gitbook_open(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any
) -> str:
    state = _state(env)
    token = tokens[idx]
    name = token.info
    attrs: dict[str, str] = token.meta.get("attrs", {})
    if name in _STANDALONE:
        target = attrs.get("url") or attrs.get("src") or ""
        href = _href(state, target) if target else None
        label = html.escape(attrs.get("caption") or target)
        link = f'<a href="{html.escape(href)}">{label}</a>' if href else label
        return f'<p class="gitbook-{name}">{link}</p>\n'
    if name == "hint":
        style = attrs.get("style", "info")
        style = style if style in _HINT_STYLES else "info"
        # Readers see the style by its colour and icon; screen readers hear this label.
        label = f'<span class="hint-label">{style.capitalize()}</span>'
        opened = f'<div class="hint hint-{style}">{label}'
    elif name in ("tab", "step", "code"):
        title = attrs.get("title", "")
        heading = f'<p class="{name}-title">{html.escape(title)}</p>' if title else ""
        opened = f'<div class="{name}">{heading}'
    else:
        opened = f'<div class="{name}">'
    state.blocks.append((name, "</div>"))
    return opened + "\n"


def _gitbook_close(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any
) -> str:
    state = _state(env)
    name = tokens[idx].info
    if not any(open_name == name for open_name, _ in state.blocks):
        return ""  # a stray end tag (or an embed's): nothing to close
    out: list[str] = []
    while state.blocks:
        open_name, closing = state.blocks.pop()
        out.append(closing)
        if open_name == name:
            break
    return "".join(out) + "\n"


_RULES: dict[str, Rule] = {
    "link_open": _link_open,
    "link_close": _link_close,
    "image": _image,
    "fence": _fence,
    "code_block": _code_block,
    "html_block": _html_raw,
    "html_inline": _html_raw,
    "task_box": _task_box,
    "gitbook_open": _gitbook_open,
    "gitbook_close": _gitbook_close,
}


def _build() -> MarkdownIt:
    parser = _parser()
    for name, rule in _RULES.items():
        parser.add_render_rule(name, rule)
    return parser


_MD = _build()

# What the output may hold: exactly what the rules above write (and raw HTML's short list).
_TAGS = {
    "h1", "h2", "h3", "h4", "h5", "h6", "p", "a", "img", "ul", "ol", "li", "blockquote", "pre",
    "code", "span", "div", "table", "thead", "tbody", "tr", "th", "td", "em", "strong", "s",
    "del", "ins", "b", "i", "u", "sub", "sup", "kbd", "mark", "small", "br", "hr", "details",
    "summary",
}  # fmt: skip


# nh3 is loaded with the first page rendered (see _formatter).
@functools.cache
def _cleaner() -> nh3.Cleaner:
    import nh3

    return nh3.Cleaner(
        tags=_TAGS,
        clean_content_tags=set(_RAW_DROPPED),
        attributes={
            "*": {"class"},
            **{f"h{n}": {"id", "class"} for n in range(1, 7)},
            "a": {"href", "title", "class"},
            "img": {"src", "alt", "title", "class"},
            "ol": {"start", "class"},
            "pre": {"class", "data-language"},
            "th": {"style", "class"},
            "td": {"style", "class"},
        },
        url_schemes=set(_SAFE_SCHEMES),
        filter_style_properties={"text-align"},
        strip_comments=True,
        link_rel=None,
    )


def render(
    markdown: str,
    *,
    links: LinkResolver | None = None,
    images: LinkResolver | None = None,
    anchor_prefix: str = "",
) -> Rendered:
    """`markdown` as an HTML fragment and its headings.

    `links(href)` gives what a link points at, or None to keep its text alone; `images(src)`
    the URL an image loads from, or None to show its alt text (default: external http(s) URLs
    as written, nothing else). Links to `#anchor` stay in the page (prefixed); any result
    whose scheme is not http, https or mailto is refused as if None. Anchors (heading ids) are
    `anchor_prefix` + GitHub's slug."""
    state = _State(
        links=links or _external_only,
        images=images or _external_only,
        prefix=anchor_prefix,
    )
    env: dict[str, Any] = {_ENV: state}
    tokens = _MD.parse(markdown, env)
    _anchors(tokens, state)
    body = _MD.renderer.render(tokens, _MD.options, env)
    body += "".join(closing for _, closing in reversed(state.blocks))
    return Rendered(_cleaner().clean(body), tuple(state.headings))


def _external_only(url: str) -> str | None:
    scheme = _SCHEME.match(url)
    return url if scheme is not None and scheme[1].lower() in ("http", "https") else None
