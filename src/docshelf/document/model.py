"""GitBook's JSONDocument to and from the markdown the engine stores. Pure, no I/O.

`markdown_to_document` and `document_to_markdown` are the public entry points;
`validate_document` is what `document_to_markdown` checks first (400 on anything it refuses).

Markdown holds paragraphs, headings, lists, task lists, quotes, code, dividers, images, tables,
links and the bold/italic/strikethrough/code marks natively. The blocks it cannot hold are
written in GitBook's own block syntax (docs/decisions/0015, with the mapping table):

    {% hint style="info" %} ... {% endhint %}        hint (style, icon)
    {% tabs %}{% tab title="A" %} ... {% endtab %}{% endtabs %}
    <details><summary>title</summary> ... </details>  expandable (`<details open>`: expanded)
    {% embed url="..." %}                              embed
    {% file src="/files/<id>" %}                       file
    {% include "<reusable content id>" %}              reusable-content (GitBook Git Sync's form)
    {% code title="..." overflow="wrap" lineNumbers="true" %} fence {% endcode %}
    $$ (line) formula $$ (line)                        math; `$$x$$` inline math
    <kbd> <sup> <sub>                                  keyboard, superscript, subscript marks

Links name content with the engine's stable references: `/pages/<id>` (page), `/pages/<id>#a`
(anchor on a page), `#a` (anchor here), `/files/<id>` (file); anything else is a URL.

Both directions are linear in the size of their input: the markdown side is one markdown-it
parse walked once with an explicit stack; the document side writes lists of lines joined once
(a line is re-prefixed once per enclosing container, and nesting is bounded).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from docshelf.document.limits import MAX_BLOCK_NESTING
from docshelf.document.markdown import alt_text
from docshelf.kit.errors import BadRequest

__all__ = [
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_NODES",
    "document_to_markdown",
    "markdown_to_document",
    "validate_document",
]

JSON = dict[str, Any]

# Blocks inside blocks in a document a client sends (each list level is two: list and item).
MAX_DOCUMENT_DEPTH = 2 * MAX_BLOCK_NESTING + 8
# Objects (blocks, inlines, texts, leaves, marks, fragments) in one document.
MAX_DOCUMENT_NODES = 200_000

_ESSENTIALS = frozenset(
    {"paragraph", "heading-1", "heading-2", "heading-3"}
    | {"list-ordered", "list-unordered", "list-tasks", "divider"}
)
# What each container may hold, as GitBook 0.202.0 describes it (restricted to the kinds
# markdown can carry). Conversion from markdown flattens anything else into what fits.
ALLOWED: dict[str, frozenset[str]] = {
    "top": _ESSENTIALS
    | {"blockquote", "hint", "images", "file", "embed", "code", "math", "expandable", "tabs"}
    | {"table", "reusable-content"},
    "item": _ESSENTIALS | {"code", "hint", "blockquote", "math", "table"},
    "quote": _ESSENTIALS | {"blockquote"},
    "hint": _ESSENTIALS | {"embed", "table"},
    "tab": _ESSENTIALS | {"code", "embed", "file", "images", "hint", "blockquote", "math"},
    "body": _ESSENTIALS
    | {"file", "images", "code", "table", "hint", "blockquote", "reusable-content"},
    "list": frozenset({"list-item"}),
    "tabs": frozenset({"tabs-item"}),
}
_INNER_WHERE = {
    "list-item": "item",
    "blockquote": "quote",
    "hint": "hint",
    "tabs-item": "tab",
    "tabs": "tabs",
    "list-ordered": "list",
    "list-unordered": "list",
    "list-tasks": "list",
}
BLOCK_KINDS = frozenset().union(*ALLOWED.values()) | {"code-line", "image", "expandable"}
INLINE_KINDS = frozenset({"link", "inline-image", "inline-math"})
MARK_ORDER = ("bold", "italic", "strikethrough", "keyboard", "superscript", "subscript", "code")
_HTML_MARKS = {"kbd": "keyboard", "sup": "superscript", "sub": "subscript"}
_MARK_OF = {"strong": "bold", "em": "italic", "s": "strikethrough"}
HINT_STYLES = ("info", "warning", "danger", "success")


# == markdown -> document ========================================================================

_TAG_LINE = re.compile(r"\{%\s*([a-z][a-z-]*)((?:\s+[A-Za-z]+=\"[^\"]*\")*)\s*%\}")
_TAG_ATTR = re.compile(r"([A-Za-z]+)=\"([^\"]*)\"")
_TAGS = frozenset(
    {"hint", "endhint", "tabs", "endtabs", "tab", "endtab", "embed", "file", "code", "endcode"}
)
# GitBook Git Sync's reference to a reusable content: one quoted argument, not attributes.
_REUSABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
INCLUDE_LINE = re.compile(r"\{%\s*include\s+\"([^\"\n]+)\"\s*%\}")


def include_tag(target: str) -> str:
    return f'{{% include "{target}" %}}'


def _tag_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    line = state.src[state.bMarks[start] + state.tShift[start] : state.eMarks[start]].rstrip()
    m = _TAG_LINE.fullmatch(line)
    include = INCLUDE_LINE.fullmatch(line) if m is None else None
    if include is None and (m is None or m.group(1) not in _TAGS):
        return False
    if silent:
        return True
    token = state.push("gitbook_tag", "", 0)
    token.map = [start, start + 1]
    token.content = line
    if include is not None:
        token.meta = {"name": "include", "attrs": {"src": include.group(1)}}
    else:
        assert m is not None
        token.meta = {
            "name": m.group(1),
            "attrs": {k: html.unescape(v) for k, v in _TAG_ATTR.findall(m.group(2))},
        }
    state.line = start + 1
    return True


def _math_block_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    begin = state.bMarks[start] + state.tShift[start]
    if state.src[begin : state.eMarks[start]].rstrip() != "$$":
        return False
    if silent:
        return True
    line = start + 1
    closed = False
    while line < end:
        if state.sCount[line] < state.blkIndent and not state.isEmpty(line):
            break  # the container ended
        at = state.bMarks[line] + state.tShift[line]
        if state.src[at : state.eMarks[line]].rstrip() == "$$":
            closed = True
            break
        line += 1
    content = state.getLines(start + 1, line, state.blkIndent, False)
    token = state.push("math_block", "", 0)
    token.map = [start, line + 1]
    token.content = content.rstrip("\n")  # line breaks ending a formula are not kept
    state.line = line + 1 if closed else line
    return True


def _math_inline_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("$$", pos):
        return False
    close = src.find("$$", pos + 2, state.posMax)
    if close < 0:
        return False
    if not silent:
        token = state.push("math_inline", "", 0)
        token.content = src[pos + 2 : close]
    state.pos = close + 2
    return True


def _document_parser() -> MarkdownIt:
    from docshelf.document.markdown import parser

    md = parser().enable("table")
    alt = ["paragraph", "reference", "blockquote", "list"]
    md.block.ruler.before("fence", "gitbook_tag", _tag_rule, {"alt": alt})
    md.block.ruler.before("fence", "math_block", _math_block_rule, {"alt": alt})
    md.inline.ruler.after("text", "math_inline", _math_inline_rule)
    return md


_PARSER: MarkdownIt | None = None


def document_parser() -> MarkdownIt:
    global _PARSER
    if _PARSER is None:
        _PARSER = _document_parser()
    return _PARSER


_PAGE = re.compile(r"/pages/([A-Za-z0-9_-]+)(?:#(.*))?", re.S)
_FILE = re.compile(r"/files/([A-Za-z0-9_-]+)")


def ref_of(url: str) -> JSON:
    """A markdown destination as a GitBook content reference."""
    m = _PAGE.fullmatch(url)
    if m is not None:
        if m.group(2) is not None:
            return {"kind": "anchor", "page": m.group(1), "anchor": m.group(2)}
        return {"kind": "page", "page": m.group(1)}
    m = _FILE.fullmatch(url)
    if m is not None:
        return {"kind": "file", "file": m.group(1)}
    if url.startswith("#") and len(url) > 1:
        return {"kind": "anchor", "anchor": url[1:]}
    return {"kind": "url", "url": url}


def url_of(ref: JSON) -> str:
    kind = ref["kind"]
    if kind == "page":
        return f"/pages/{ref['page']}"
    if kind == "anchor":
        page = ref.get("page")
        return f"/pages/{page}#{ref['anchor']}" if page else f"#{ref['anchor']}"
    if kind == "file":
        return f"/files/{ref['file']}"
    return str(ref["url"])


def _text(runs: list[tuple[str, frozenset[str]]]) -> JSON:
    leaves: list[JSON] = []
    last_marks: frozenset[str] | None = None
    for text, marks in runs:
        if not text:
            continue
        if marks == last_marks:
            leaves[-1]["text"] += text
            continue
        ordered = [{"object": "mark", "type": m} for m in MARK_ORDER if m in marks]
        leaves.append({"object": "leaf", "text": text, "marks": ordered})
        last_marks = marks
    if not leaves:
        leaves.append({"object": "leaf", "text": "", "marks": []})
    return {"object": "text", "leaves": leaves}


def _image_data(token: Token) -> JSON:
    data: JSON = {"ref": ref_of(str(token.attrGet("src") or ""))}
    if data["ref"]["kind"] not in ("url", "file"):
        data["ref"] = {"kind": "url", "url": str(token.attrGet("src") or "")}
    alt = alt_text(token.children)
    if alt:
        data["alt"] = alt
    return data


# Inline HTML a page may hold (GitBook's own `<mark>`, imported pages' `<br>`, `<a>`,
# `<strong>`...): what has a meaning in the document model becomes it, the rest is dropped (its
# text stays), so markup never shows as text and nothing of it is executable.
# Unambiguous (one way to match any text), so linear: attributes are read by _HTML_ATTR.
_HTML_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:\s[^>]*)?)>", re.S)
_HTML_ATTR = re.compile(
    r"""([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))"""
)
_HTML_INLINE_MARKS = {
    **_HTML_MARKS,
    "strong": "bold",
    "b": "bold",
    "em": "italic",
    "i": "italic",
    "code": "code",
    "s": "strikethrough",
    "del": "strikethrough",
    "strike": "strikethrough",
}
_UNSAFE_URL = re.compile(r"^\s*(?:javascript|vbscript|data(?!:image/))\s*:", re.I)


def html_attrs(tag: str) -> dict[str, str]:
    """An HTML start tag's attributes, names lowercased, values unescaped."""
    return {
        m.group(1).lower(): html.unescape(m.group(2) or m.group(3) or m.group(4) or "")
        for m in _HTML_ATTR.finditer(tag)
    }


def safe_url(url: str) -> bool:
    """Whether a URL from HTML may be kept: nothing that runs (`javascript:`) or smuggles."""
    return bool(url.strip()) and _UNSAFE_URL.match(url) is None


def _one_line(tokens: list[Token]) -> list[Token]:
    """A heading's or title's tokens without hard breaks (one line of markdown holds none)."""
    return [Token("softbreak", "", 0) if t.type == "hardbreak" or _is_br(t) else t for t in tokens]


def _is_br(token: Token) -> bool:
    if token.type != "html_inline":
        return False
    m = _HTML_TAG.fullmatch(token.content)
    return m is not None and not m.group(1) and m.group(2).lower() == "br"


def _inlines(tokens: list[Token]) -> list[JSON]:
    """Inline tokens as GitBook text and inline nodes; like Slate, which GitBook documents come
    from, every inline gets a text node on each side, empty if need be."""
    nodes: list[JSON] = []
    runs: list[tuple[str, frozenset[str]]] = []
    marks: dict[str, int] = {}
    link: JSON | None = None
    link_runs: list[tuple[str, frozenset[str]]] = []
    nested_links = 0
    html_links: list[bool] = []  # each open `<a>`: whether it opened a link

    def active() -> frozenset[str]:
        return frozenset(m for m, n in marks.items() if n > 0)

    def add(text: str, extra: frozenset[str] = frozenset()) -> None:
        (link_runs if link is not None else runs).append((text, active() | extra))

    def inline(node: JSON) -> None:
        nonlocal runs, link_runs
        if link is not None:
            link["nodes"].extend([_text(link_runs), node])
            link_runs = []
        else:
            nodes.extend([_text(runs), node])
            runs = []

    for token in tokens:
        kind = token.type
        if kind == "text":
            add(token.content)
        elif kind == "html_inline":
            m = _HTML_TAG.fullmatch(token.content)
            if m is None:
                continue  # a comment, a declaration, or an instruction: never shown
            closing, name, attrs = bool(m.group(1)), m.group(2).lower(), m.group(3)
            if name in _HTML_INLINE_MARKS:
                mark = _HTML_INLINE_MARKS[name]
                marks[mark] = max(0, marks.get(mark, 0) + (-1 if closing else 1))
            elif name == "br" and not closing:
                add("\n")
            elif name == "a" and closing:
                if html_links and html_links.pop() and link is not None:
                    link["nodes"].append(_text(link_runs))
                    nodes.append(_text(runs))
                    nodes.append(link)
                    runs, link, link_runs = [], None, []
            elif name == "a":
                href = html_attrs(attrs).get("href", "")
                opens = link is None and safe_url(href)
                html_links.append(opens)
                if opens:
                    link = {"object": "inline", "type": "link", "data": {"ref": ref_of(href)}}
                    link["nodes"] = []
                    link_runs = []
            elif name == "img" and not closing:
                found = html_attrs(attrs)
                src = found.get("src", "")
                if safe_url(src):
                    data: JSON = {"ref": ref_of(src)}
                    if data["ref"]["kind"] not in ("url", "file"):
                        data["ref"] = {"kind": "url", "url": src}
                    if found.get("alt"):
                        data["alt"] = found["alt"]
                    inline(
                        {"object": "inline", "type": "inline-image", "isVoid": True}
                        | {"data": data}
                    )
        elif kind == "softbreak":
            add(" ")  # a soft break renders as a space; only a hard break is a line break
        elif kind == "hardbreak":
            add("\n")
        elif kind == "code_inline":
            add(token.content, frozenset({"code"}))
        elif kind == "math_inline":
            inline(
                {
                    "object": "inline",
                    "type": "inline-math",
                    "isVoid": True,
                    "data": {"formula": token.content},
                }
            )
        elif kind.endswith(("_open", "_close")) and kind.rsplit("_", 1)[0] in _MARK_OF:
            mark = _MARK_OF[kind.rsplit("_", 1)[0]]
            marks[mark] = marks.get(mark, 0) + (1 if kind.endswith("_open") else -1)
        elif kind == "link_open":
            if link is not None:
                nested_links += 1  # an autolink in a link's text: keep just its text
                continue
            href = str(token.attrGet("href") or "")
            link = {"object": "inline", "type": "link", "data": {"ref": ref_of(href)}, "nodes": []}
            link_runs = []
        elif kind == "link_close":
            if nested_links:
                nested_links -= 1
            elif link is not None:
                link["nodes"].append(_text(link_runs))
                nodes.append(_text(runs))
                nodes.append(link)
                runs, link, link_runs = [], None, []
        elif kind == "image":
            inline(
                {"object": "inline", "type": "inline-image", "isVoid": True}
                | {"data": _image_data(token)}
            )
    if link is not None:  # unbalanced tokens: cannot come from markdown-it, but stay total
        runs.extend(link_runs)
    nodes.append(_text(runs))
    return nodes


_HEADING_ID = re.compile(r"[-a-z0-9.+_]+")


def _heading_anchor(tokens: list[Token]) -> tuple[str | None, list[Token]]:
    """A heading's custom anchor, as GitBook writes it (`## Title <a href="#x" id="x"></a>`),
    and the heading's tokens without it: the anchor is the heading's `data.id`."""
    for n, token in enumerate(tokens):
        if token.type != "html_inline":
            continue
        m = _HTML_TAG.fullmatch(token.content)
        if m is None or m.group(1) or m.group(2).lower() != "a":
            continue
        anchor = html_attrs(m.group(3)).get("id", "")
        if not _HEADING_ID.fullmatch(anchor):
            continue
        after = n + 1
        closing = after < len(tokens) and tokens[after].type == "html_inline"
        if closing and tokens[after].content.replace(" ", "").lower() == "</a>":
            after += 1
        rest = tokens[:n] + tokens[after:]
        while rest and rest[-1].type == "text" and not rest[-1].content.strip():
            rest.pop()
        if rest and rest[-1].type == "text":
            last = Token("text", "", 0)
            last.content = rest[-1].content.rstrip()
            rest[-1] = last
        return anchor, rest
    return None, tokens


def _caption(title: Any) -> list[JSON]:
    """An image's caption, from its markdown title (`![alt](src "caption")`, which an import
    writes for a `<figure>`'s `<figcaption>`): GitBook's image `caption` fragment."""
    text = " ".join(str(title or "").split())
    if not text:
        return []
    caption = {"object": "fragment", "fragment": "caption", "nodes": [_plain_paragraph(text)]}
    return [caption]


def _caption_text(image: JSON) -> str:
    for fragment in image.get("fragments") or []:
        if isinstance(fragment, dict) and fragment.get("fragment") == "caption":
            return " ".join("".join(_leaf_text(fragment)).split())
    return ""


def _only_images(tokens: list[Token]) -> bool:
    images = [t for t in tokens if t.type == "image"]
    rest = (t for t in tokens if t.type != "image")
    return bool(images) and all(
        t.type == "softbreak" or (t.type == "text" and not t.content.strip()) for t in rest
    )


def _block(kind: str, nodes: list[JSON], data: JSON | None = None) -> JSON:
    return {"object": "block", "type": kind, "data": data or {}, "nodes": nodes}


def _void(kind: str, data: JSON) -> JSON:
    return {"object": "block", "type": kind, "isVoid": True, "data": data}


def _paragraph(nodes: list[JSON] | None = None) -> JSON:
    return _block("paragraph", nodes or [_text([])])


def _plain_paragraph(text: str, marks: frozenset[str] = frozenset()) -> JSON:
    return _paragraph([_text([(text, marks)])])


def _code(content: str, info: str) -> JSON:
    from markdown_it.common.utils import unescapeAll

    text = content[:-1] if content.endswith("\n") else content
    lines = [_block("code-line", [_text([(line, frozenset())])]) for line in text.split("\n")]
    words = unescapeAll(info).split()
    return _block("code", lines, {"syntax": words[0]} if words else {})


def _leaf_text(node: JSON) -> Iterator[str]:
    """The text under a node, in order (iteratively)."""
    stack: list[Iterator[JSON]] = [iter([node])]
    while stack:
        n = next(stack[-1], None)
        if n is None:
            stack.pop()
            continue
        if n.get("object") == "leaf":
            yield n.get("text", "")
        elif n.get("object") == "text":
            stack.append(iter(n.get("leaves", [])))
        else:
            stack.append(iter(n.get("nodes", [])))


def _fit(node: JSON, where: str) -> list[JSON]:
    """`node` as what GitBook lets `where` hold: itself, or flattened into paragraphs."""
    kind = node["type"]
    if kind in ALLOWED[where]:
        return [node]
    if where == "list":
        return [_block("list-item", _fit(node, "item") or [_paragraph()])]
    if kind == "code":
        # One code span a line: a span cannot hold a line break.
        runs: list[tuple[str, frozenset[str]]] = []
        for k, line in enumerate(node["nodes"]):
            if k:
                runs.append(("\n", frozenset()))
            runs.append(("".join(_leaf_text(line)), frozenset({"code"})))
        return [_paragraph([_text(runs)])]
    if kind == "images":
        nodes: list[JSON] = []
        for image in node["nodes"]:
            inline = {"object": "inline", "type": "inline-image", "isVoid": True}
            nodes.extend([_text([]), inline | {"data": image["data"]}])
        return [_paragraph([*nodes, _text([])])]
    if kind == "math":
        # Inline math is one line without $$; anything else stays readable as code.
        formula = " ".join(node["data"]["formula"].split("\n"))
        if "$$" in formula:
            return [_plain_paragraph(formula, frozenset({"code"}))]
        data = {"formula": formula}
        math = {"object": "inline", "type": "inline-math", "isVoid": True, "data": data}
        return [_paragraph([_text([]), math, _text([])])]
    if kind in ("embed", "file"):
        ref = (
            {"kind": "url", "url": node["data"]["url"]} if kind == "embed" else node["data"]["ref"]
        )
        link: JSON = {"object": "inline", "type": "link", "data": {"ref": ref}}
        link["nodes"] = [_text([(url_of(ref), frozenset())])]
        return [_paragraph([_text([]), link, _text([])])]
    if kind == "reusable-content":
        # Kept as the tag's text, which is what the same line reads as in such a place.
        return [_plain_paragraph(include_tag(node["data"]["ref"]["reusableContent"]))]
    if kind == "table":
        cells = [p for f in node["fragments"] for n in f["nodes"] for p in _fit(n, where)]
        return [p for p in cells if not _blank(p)] or [_paragraph()]
    out: list[JSON] = []
    for child in node.get("nodes", []):
        if child.get("object") == "block":
            out.extend(_fit(child, where))
    return out


def _as_images(node: JSON) -> JSON | None:
    if node["type"] != "paragraph":
        return None
    images = [n for n in node["nodes"] if n["object"] == "inline"]
    texts = [n for n in node["nodes"] if n["object"] == "text"]
    if not images or any(n["type"] != "inline-image" for n in images):
        return None
    if any(leaf["text"].strip() for t in texts for leaf in t["leaves"]):
        return None
    blocks = [
        {"object": "block", "type": "image", "isVoid": True, "data": i["data"], "fragments": []}
        for i in images
    ]
    return {"object": "block", "type": "images", "isVoid": False, "data": {}, "nodes": blocks}


def _blank(node: JSON) -> bool:
    """A paragraph with no text and no inline (markdown cannot write one)."""
    return node["type"] == "paragraph" and all(
        n["object"] == "text" and not any(leaf["text"] for leaf in n["leaves"])
        for n in node["nodes"]
    )


@dataclass(slots=True)
class _Frame:
    kind: str  # markdown: list, item, quote, pass; tags: hint, tabs, tab, details, code
    where: str
    nodes: list[JSON]
    markdown: bool
    node: JSON | None = None
    attrs: dict[str, str] = field(default_factory=dict)
    tasks: list[bool | None] = field(default_factory=list)


def _details_lines(content: str) -> list[tuple[str, str]] | None:
    """An HTML block made only of expandable markup, as (what, value) steps."""
    steps: list[tuple[str, str]] = []
    for line in content.strip().split("\n"):
        line = line.strip()
        if line in ("<details>", "<details open>"):
            steps.append(("open", "open" if line.endswith("open>") else ""))
        elif line == "</details>":
            steps.append(("close", ""))
        elif line.startswith("<summary>") and line.endswith("</summary>"):
            steps.append(("summary", line[len("<summary>") : -len("</summary>")]))
        else:
            return None
    return steps


_TASK = re.compile(r"\[([ xX])\](?: |$)")


def _table(tokens: list[Token], i: int) -> tuple[JSON, int]:
    """The table starting at tokens[i] (table_open), and the index after its close."""
    rows: list[list[list[Token]]] = []
    aligns: list[str] = []
    header = True
    while i < len(tokens) and tokens[i].type != "table_close":
        t = tokens[i]
        if t.type == "tr_open":
            rows.append([])
        elif t.type in ("th_open", "td_open"):
            if header and t.type == "th_open":
                style = str(t.attrGet("style") or "")
                aligns.append(style.removeprefix("text-align:") or "left")
            inline = tokens[i + 1]
            rows[-1].append(inline.children or [] if inline.type == "inline" else [])
        elif t.type == "thead_close":
            header = False
        i += 1
    head = rows[0] if rows else []
    columns = [f"c{n}" for n in range(len(head))]
    definition = {
        c: {"id": c, "title": alt_text(head[n]), "type": "text", "textAlignment": aligns[n]}
        for n, c in enumerate(columns)
    }
    records: JSON = {}
    fragments: list[JSON] = []
    for r, row in enumerate(rows[1:]):
        values: JSON = {}
        for n, c in enumerate(columns):
            frag = f"r{r}-{c}"
            cell = row[n] if n < len(row) else []
            values[c] = frag
            fragments.append(
                {
                    "object": "fragment",
                    "fragment": frag,
                    "nodes": [_paragraph(_inlines(_one_line(cell)))],
                }
            )
        records[f"r{r}"] = {"orderIndex": f"a{r:06d}", "values": values}
    node = {
        "object": "block",
        "type": "table",
        "isVoid": True,
        "data": {
            "view": {"type": "grid", "columns": columns, "hideHeader": False},
            "records": records,
            "definition": definition,
        },
        "fragments": fragments,
    }
    return node, i + 1


def _to_tasks(node: JSON, flags: list[bool | None]) -> None:
    if not flags or any(f is None for f in flags):
        return
    node["type"] = "list-tasks"
    for item, checked in zip(node["nodes"], flags, strict=True):
        item["data"] = {"checked": bool(checked)}
        first = item["nodes"][0]["nodes"][0]["leaves"]
        cut = 4 if first[0]["text"][3:4] == " " else 3
        first[0]["text"] = first[0]["text"][cut:]
        if not first[0]["text"] and len(first) > 1:
            del first[0]


def from_tokens(tokens: list[Token], parse_inline: Callable[[str], list[Token]]) -> JSON:
    root: list[JSON] = []
    stack = [_Frame("top", "top", root, True)]
    depth = 0  # markdown containers open

    def implicit_tab() -> None:
        # Content between {% tabs %} and its first {% tab %} goes into an untitled tab.
        top = stack[-1]
        if top.kind == "tabs":
            tab = _block("tabs-item", [], {"title": ""})
            top.nodes.append(tab)
            stack.append(_Frame("tab", "tab", tab["nodes"], False, tab))

    def put(node: JSON) -> None:
        if node["type"] != "tabs-item":
            implicit_tab()
        top = stack[-1]
        if top.kind == "code" and node["type"] == "code":
            node["data"] |= _code_data(top.attrs)
        fitted = _fit(node, top.where)
        if fitted != [node] and "images" in ALLOWED[top.where]:
            # A flattened paragraph of only images reads back as an images block: make it one.
            fitted = [_as_images(p) or p for p in fitted]
        if fitted != [node]:
            fitted = [p for p in fitted if not _blank(p)]  # markdown cannot write them
        top.nodes.extend(fitted)

    def literal(text: str) -> None:
        put(_plain_paragraph(text))

    def open_tag(kind: str, where: str, node: JSON, nodes: list[JSON]) -> None:
        put(node)
        stack.append(_Frame(kind, where, nodes, False, node))

    def close_tag(kind: str) -> bool:
        for k in range(len(stack) - 1, 0, -1):
            if stack[k].markdown:
                return False
            if stack[k].kind == kind:
                for frame in stack[k:]:
                    _finish(frame)
                del stack[k:]
                return True
        return False

    def close_markdown() -> _Frame:
        while len(stack) > 1 and not stack[-1].markdown:
            _finish(stack.pop())
        return stack.pop() if len(stack) > 1 else stack[-1]

    i = 0
    while i < len(tokens):
        token = tokens[i]
        kind = token.type
        if (
            kind.endswith("_open")
            or kind in ("fence", "code_block", "hr", "math_block", "html_block")
            or (kind == "gitbook_tag" and token.meta["name"] not in ("tab", "endtab", "endtabs"))
        ):
            implicit_tab()
        top = stack[-1]
        if kind in ("paragraph_open", "heading_open"):
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            children = (inline.children or []) if inline and inline.type == "inline" else []
            if kind == "heading_open":
                level = min(int(token.tag[1:]), 3)
                anchor, children = _heading_anchor(children)
                heading = _block(f"heading-{level}", _inlines(_one_line(children)))
                if anchor is not None:
                    heading["data"]["id"] = anchor
                put(heading)
            elif _only_images(children) and "images" in ALLOWED[top.where]:
                images = [
                    {"object": "block", "type": "image", "isVoid": True}
                    | {"data": _image_data(t), "fragments": _caption(t.attrGet("title"))}
                    for t in children
                    if t.type == "image"
                ]
                put(
                    {"object": "block", "type": "images", "isVoid": False, "data": {}}
                    | {"nodes": images}
                )
            else:
                put(_paragraph(_inlines(children)))
            i += 3
            continue
        if kind == "table_open":
            node, i = _table(tokens, i)
            put(node)
            continue
        if kind in ("bullet_list_open", "ordered_list_open", "list_item_open", "blockquote_open"):
            depth += 1
            what = {"bullet_list_open": "list-unordered", "ordered_list_open": "list-ordered"}
            node_kind = what.get(kind) or (
                "list-item" if kind == "list_item_open" else "blockquote"
            )
            if depth > 2 * MAX_BLOCK_NESTING or node_kind not in (
                ALLOWED[top.where] | {"list-item"}
            ):
                stack.append(_Frame("pass", top.where, top.nodes, True))
            else:
                data: JSON = {}
                start = token.attrGet("start")
                if kind == "ordered_list_open" and start is not None:
                    data["start"] = int(start)
                node = _block(node_kind, [], data)
                put(node)
                frame = _Frame(node_kind, _INNER_WHERE[node_kind], node["nodes"], True, node)
                stack.append(frame)
                if kind == "list_item_open" and top.node is not None:
                    inline = tokens[i + 2] if i + 2 < len(tokens) else None
                    task = None
                    if tokens[i + 1].type == "paragraph_open" and inline is not None:
                        m = _TASK.match(inline.content)
                        task = None if m is None else m.group(1) != " "
                    top.tasks.append(task)
        elif kind in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
            frame = close_markdown()
            if kind == "bullet_list_close" and frame.node is not None:
                _to_tasks(frame.node, frame.tasks)
        elif kind in ("list_item_close", "blockquote_close"):
            depth -= 1
            frame = close_markdown()
            if frame.node is not None and not frame.nodes:
                frame.nodes.append(_paragraph())  # GitBook blocks hold at least one block
        elif kind in ("fence", "code_block"):
            put(_code(token.content, token.info))
        elif kind == "math_block":
            put(_void("math", {"formula": token.content}))
        elif kind == "hr":
            put(_void("divider", {}))
        elif kind == "gitbook_tag":
            _tag(token, stack, put, literal, open_tag, close_tag)
        elif kind == "html_block":
            _html(token, stack, put, literal, open_tag, close_tag, parse_inline)
        i += 1
    while len(stack) > 1:
        _finish(stack.pop())
    return {"object": "document", "data": {}, "nodes": root}


def _code_data(attrs: dict[str, str]) -> JSON:
    data: JSON = {}
    if "title" in attrs:
        data["title"] = attrs["title"]
    if attrs.get("overflow") in ("scroll", "wrap"):
        data["overflow"] = attrs["overflow"]
    for name in ("lineNumbers", "fullWidth", "expandable"):
        if attrs.get(name) in ("true", "false"):
            data[name] = attrs[name] == "true"
    return data


def _finish(frame: _Frame) -> None:
    if frame.kind == "details" and frame.node is not None and not frame.nodes:
        frame.nodes.append(_paragraph())


def _tag(
    token: Token,
    stack: list[_Frame],
    put: Callable[[JSON], None],
    literal: Callable[[str], None],
    open_tag: Callable[[str, str, JSON, list[JSON]], None],
    close_tag: Callable[[str], bool],
) -> None:
    name: str = token.meta["name"]
    attrs: dict[str, str] = token.meta["attrs"]
    where = stack[-1].where
    if name == "hint" and "hint" in ALLOWED[where]:
        style = attrs.get("style", "info")
        data: JSON = {"style": style if style in HINT_STYLES else "info"}
        if attrs.get("icon"):
            data["icon"] = attrs["icon"]
        node = _block("hint", [], data)
        open_tag("hint", "hint", node, node["nodes"])
    elif name == "tabs" and "tabs" in ALLOWED[where]:
        node = _block("tabs", [])
        open_tag("tabs", "tabs", node, node["nodes"])
    elif name == "tab" and stack[-1].kind == "tabs":
        node = _block("tabs-item", [], {"title": attrs.get("title", "")})
        open_tag("tab", "tab", node, node["nodes"])
    elif name == "code":
        stack.append(_Frame("code", where, stack[-1].nodes, False, None, attrs))
    elif name == "embed" and "url" in attrs:
        data = {"url": attrs["url"]}
        if attrs.get("fullWidth") in ("true", "false"):
            data["fullWidth"] = attrs["fullWidth"] == "true"
        put(_void("embed", data))
    elif name == "file" and _FILE.fullmatch(attrs.get("src", "")):
        put(_void("file", {"ref": ref_of(attrs["src"])}))
    elif (
        name == "include"
        and "reusable-content" in ALLOWED[where]
        and _REUSABLE_ID.fullmatch(attrs["src"])
    ):
        # Stored texts name reusable contents by id; a path (an import's include that found
        # nothing) stays text.
        ref = {"kind": "reusable-content", "reusableContent": attrs["src"]}
        put(_void("reusable-content", {"ref": ref}))
    elif name.startswith("end") and close_tag(name[3:]):
        pass
    else:
        literal(token.content)


# Possessive: each comment is read once, so an unclosed one costs linear time, not quadratic.
_COMMENTS = re.compile(r"\s*+(?:<!--(?:(?!-->).)*+-->\s*+)+", re.S)


def _html(
    token: Token,
    stack: list[_Frame],
    put: Callable[[JSON], None],
    literal: Callable[[str], None],
    open_tag: Callable[[str, str, JSON, list[JSON]], None],
    close_tag: Callable[[str], bool],
    parse_inline: Callable[[str], list[Token]],
) -> None:
    text = token.content.rstrip("\n")
    if _COMMENTS.fullmatch(text):
        # Hidden where the page is shown, so hidden here too; "<!-- -->" is also the separator
        # document_to_markdown puts between two lists.
        return
    steps = _details_lines(text)
    if steps is None:
        literal(text)
        return
    for what, value in steps:
        top = stack[-1]
        if what == "open" and "expandable" in ALLOWED[top.where]:
            title: JSON = {"object": "fragment", "fragment": "expandable-title"}
            title |= {"type": "expandable-title", "nodes": [_paragraph()]}
            body: JSON = {"object": "fragment", "fragment": "expandable-body"}
            body |= {"type": "expandable-body", "nodes": []}
            node = _void("expandable", {"defaultExpanded": True} if value else {})
            node["fragments"] = [title, body]
            open_tag("details", "body", node, body["nodes"])
            stack[-1].attrs["title"] = ""
        elif (
            what == "summary"
            and top.kind == "details"
            and top.node is not None
            and top.attrs.get("title") == ""
            and not top.nodes
        ):
            top.attrs["title"] = "set"
            top.node["fragments"][0]["nodes"] = [
                _paragraph(_inlines(_one_line(parse_inline(value))))
            ]
        elif what == "close" and close_tag("details"):
            pass
        else:
            literal(
                {"open": "<details open>" if value else "<details>", "close": "</details>"}.get(
                    what, f"<summary>{value}</summary>"
                )
            )


def markdown_to_document(markdown: str) -> JSON:
    """`markdown` as a GitBook JSONDocument (see the module's mapping). Never raises on content;
    each call returns a fresh document the caller may change."""
    from docshelf.document import markdown as md

    return md.to_document(markdown)


def convert(markdown: str) -> tuple[JSON, list[Token]]:
    """The document and the tokens it came from (the search sections read them too)."""
    parser = document_parser()
    tokens = parser.parse(markdown)

    def parse_inline(text: str) -> list[Token]:
        out = parser.parseInline(text)
        return (out[0].children or []) if out else []

    return from_tokens(tokens, parse_inline), tokens


# == validation ==================================================================================


def _fail(path: str, message: str) -> NoReturn:
    raise BadRequest(f"Invalid document: {path}: {message}")


def _obj(value: Any, path: str) -> JSON:
    if not isinstance(value, dict):
        _fail(path, "must be an object")
    return value


def _list(value: Any, path: str, *, required: bool = True) -> list[Any]:
    if value is None and not required:
        return []
    if not isinstance(value, list):
        _fail(path, "must be an array")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        _fail(path, "must be a string")
    return value


def _opt_bool(data: JSON, name: str, path: str) -> None:
    if name in data and not isinstance(data[name], bool):
        _fail(f"{path}.data.{name}", "must be a boolean")


_REF_KINDS = ("url", "page", "anchor", "file")


def _ref(value: Any, path: str, kinds: tuple[str, ...] = _REF_KINDS) -> None:
    ref = _obj(value, path)
    kind = ref.get("kind")
    if kind not in kinds:
        _fail(
            f"{path}.kind",
            f"reference kind {kind!r} is not supported here (supported: {', '.join(kinds)})",
        )
    field_name = str(kind)
    text = _str(ref.get(field_name), f"{path}.{field_name}")
    if kind in ("page", "file") and not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        _fail(f"{path}.{field_name}", "must be an id (letters, digits, - and _)")
    if kind == "anchor" and ref.get("page") is not None:
        page = _str(ref["page"], f"{path}.page")
        if not re.fullmatch(r"[A-Za-z0-9_-]+", page):
            _fail(f"{path}.page", "must be an id (letters, digits, - and _)")
    if "space" in ref:
        _fail(f"{path}.space", "references to other spaces are not supported")
    if "\n" in text or "\r" in text:
        _fail(f"{path}.{field_name}", "must be on one line")


@dataclass(slots=True)
class _Budget:
    nodes: int = 0

    def count(self, path: str) -> None:
        self.nodes += 1
        if self.nodes > MAX_DOCUMENT_NODES:
            _fail(path, f"a document holds at most {MAX_DOCUMENT_NODES} objects")


def validate_document(doc: Any) -> JSON:
    """`doc` checked against GitBook's JSONDocument schema for the node kinds Docshelf keeps
    (ALLOWED); raises BadRequest naming the first offending place. Bounded depth and size."""
    root = _obj(doc, "document")
    if root.get("object") != "document":
        _fail("document.object", "must be 'document'")
    if "data" in root and not isinstance(root["data"], dict):
        _fail("document.data", "must be an object")
    budget = _Budget()
    _blocks(_list(root.get("nodes"), "document.nodes"), "top", "document.nodes", 1, budget)
    return root


def _blocks(nodes: list[Any], where: str, path: str, depth: int, budget: _Budget) -> None:
    if depth > MAX_DOCUMENT_DEPTH:
        _fail(path, f"blocks nest at most {MAX_DOCUMENT_DEPTH} levels deep")
    for n, value in enumerate(nodes):
        _one_block(value, where, f"{path}[{n}]", depth, budget)


def _one_block(value: Any, where: str, p: str, depth: int, budget: _Budget) -> None:
    budget.count(p)
    node = _obj(value, p)
    if node.get("object") != "block":
        _fail(f"{p}.object", "must be 'block'")
    kind = node.get("type")
    if not isinstance(kind, str):
        _fail(f"{p}.type", "must be a string")
    if kind not in ALLOWED[where]:
        known = kind in BLOCK_KINDS
        _fail(
            f"{p}.type",
            f"a {kind!r} block cannot be placed here"
            if known
            else f"unknown or unsupported block type {kind!r}",
        )
    data = node.get("data", {})
    if not isinstance(data, dict):
        _fail(f"{p}.data", "must be an object")
    nodes = node.get("nodes")
    if kind in _INNER_WHERE:
        inner = _list(nodes, f"{p}.nodes")
        _blocks(inner, _INNER_WHERE[kind], f"{p}.nodes", depth + 1, budget)
        if kind == "list-ordered" and "start" in data:
            start = data["start"]
            if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start < 10**9:
                _fail(f"{p}.data.start", "must be an integer from 0 to 999999999")
        if kind == "list-item":
            _opt_bool(data, "checked", p)
        if kind == "hint":
            if data.get("style") not in HINT_STYLES:
                _fail(f"{p}.data.style", f"must be one of {', '.join(HINT_STYLES)}")
            if "icon" in data:
                _single_line(_str(data["icon"], f"{p}.data.icon"), f"{p}.data.icon")
        if kind == "tabs-item" and "title" in data:
            _single_line(_str(data["title"], f"{p}.data.title"), f"{p}.data.title")
        return
    if kind in ("paragraph", "heading-1", "heading-2", "heading-3"):
        _inline_nodes(_list(nodes, f"{p}.nodes"), f"{p}.nodes", budget, link=False)
    elif kind == "code":
        lines = _list(nodes, f"{p}.nodes")
        for k, line in enumerate(lines):
            lp = f"{p}.nodes[{k}]"
            budget.count(lp)
            line = _obj(line, lp)
            if line.get("object") != "block" or line.get("type") != "code-line":
                _fail(lp, "a code block holds only code-line blocks")
            for j, t in enumerate(_list(line.get("nodes"), f"{lp}.nodes")):
                _text_node(t, f"{lp}.nodes[{j}]", budget)
        for name in ("syntax", "title"):
            if name in data:
                _single_line(_str(data[name], f"{p}.data.{name}"), f"{p}.data.{name}")
        if "syntax" in data and re.search(r"[\s`]", data["syntax"]):
            _fail(f"{p}.data.syntax", "must not hold spaces or backticks")
        if "overflow" in data and data["overflow"] not in ("scroll", "wrap"):
            _fail(f"{p}.data.overflow", "must be 'scroll' or 'wrap'")
        for name in ("lineNumbers", "fullWidth", "expandable"):
            _opt_bool(data, name, p)
    elif kind == "divider":
        pass
    elif kind == "math":
        formula = _str(data.get("formula"), f"{p}.data.formula")
        if any(line.strip() == "$$" for line in formula.split("\n")):
            _fail(f"{p}.data.formula", "must not hold a line of only $$")
    elif kind == "embed":
        _single_line(_str(data.get("url"), f"{p}.data.url"), f"{p}.data.url")
        _opt_bool(data, "fullWidth", p)
    elif kind == "file":
        _ref(data.get("ref"), f"{p}.data.ref", ("file",))
    elif kind == "reusable-content":
        ref = _obj(data.get("ref"), f"{p}.data.ref")
        if ref.get("kind") != "reusable-content":
            _fail(f"{p}.data.ref.kind", "must be 'reusable-content'")
        target = _str(ref.get("reusableContent"), f"{p}.data.ref.reusableContent")
        if not _REUSABLE_ID.fullmatch(target):
            _fail(f"{p}.data.ref.reusableContent", "must be an id (letters, digits, - and _)")
        if "space" in ref:
            _fail(f"{p}.data.ref.space", "references to other spaces are not supported")
    elif kind == "images":
        images = _list(nodes, f"{p}.nodes")
        if not images:
            _fail(f"{p}.nodes", "an images block holds at least one image")
        for k, image in enumerate(images):
            ip = f"{p}.nodes[{k}]"
            budget.count(ip)
            image = _obj(image, ip)
            if image.get("object") != "block" or image.get("type") != "image":
                _fail(ip, "an images block holds only image blocks")
            _image(_obj(image.get("data"), f"{ip}.data"), f"{ip}.data")
    elif kind == "expandable":
        _expandable(node, p, depth, budget)
    elif kind == "table":
        _table_node(node, p, depth, budget)


def _single_line(text: str, path: str) -> None:
    if "\n" in text or "\r" in text or '"' in text:
        _fail(path, "must be one line without double quotes")


def _image(data: JSON, path: str) -> None:
    _ref(data.get("ref"), f"{path}.ref", ("url", "file"))
    if "alt" in data:
        _str(data["alt"], f"{path}.alt")


def _fragments(node: JSON, p: str) -> list[JSON]:
    frags = _list(node.get("fragments"), f"{p}.fragments")
    out = []
    for k, f in enumerate(frags):
        fp = f"{p}.fragments[{k}]"
        f = _obj(f, fp)
        if f.get("object") != "fragment":
            _fail(f"{fp}.object", "must be 'fragment'")
        _str(f.get("fragment"), f"{fp}.fragment")
        _list(f.get("nodes"), f"{fp}.nodes")
        out.append(f)
    return out


def _expandable(node: JSON, p: str, depth: int, budget: _Budget) -> None:
    frags = {f["fragment"]: (k, f) for k, f in enumerate(_fragments(node, p))}
    if set(frags) != {"expandable-title", "expandable-body"}:
        _fail(f"{p}.fragments", "an expandable holds one expandable-title and one expandable-body")
    k, title = frags["expandable-title"]
    if len(title["nodes"]) != 1:
        _fail(f"{p}.fragments[{k}].nodes", "an expandable's title is one paragraph")
    tp = f"{p}.fragments[{k}].nodes[0]"
    para = _obj(title["nodes"][0], tp)
    if para.get("object") != "block" or para.get("type") != "paragraph":
        _fail(tp, "an expandable's title is one paragraph")
    _inline_nodes(_list(para.get("nodes"), f"{tp}.nodes"), f"{tp}.nodes", budget, link=False)
    k, body = frags["expandable-body"]
    _blocks(body["nodes"], "body", f"{p}.fragments[{k}].nodes", depth + 1, budget)
    _opt_bool(_obj(node.get("data", {}), f"{p}.data"), "defaultExpanded", p)


def _table_node(node: JSON, p: str, depth: int, budget: _Budget) -> None:
    data = _obj(node.get("data"), f"{p}.data")
    view = _obj(data.get("view"), f"{p}.data.view")
    if view.get("type") != "grid":
        _fail(f"{p}.data.view.type", "only grid tables are supported")
    columns = [
        _str(c, f"{p}.data.view.columns")
        for c in _list(view.get("columns"), f"{p}.data.view.columns")
    ]
    if not columns:
        _fail(f"{p}.data.view.columns", "a table has at least one column")
    definition = _obj(data.get("definition"), f"{p}.data.definition")
    for c in columns:
        d = _obj(definition.get(c), f"{p}.data.definition.{c}")
        if d.get("type") != "text":
            _fail(f"{p}.data.definition.{c}.type", "only text columns are supported")
        _str(d.get("title"), f"{p}.data.definition.{c}.title")
        if d.get("textAlignment", "left") not in ("left", "center", "right"):
            _fail(f"{p}.data.definition.{c}.textAlignment", "must be left, center or right")
    frags = {}
    for k, f in enumerate(_fragments(node, p)):
        fp = f"{p}.fragments[{k}]"
        for j, para in enumerate(f["nodes"]):
            pp = f"{fp}.nodes[{j}]"
            para = _obj(para, pp)
            if para.get("object") != "block" or para.get("type") != "paragraph":
                _fail(pp, "a table cell holds paragraphs")
            budget.count(pp)
            _inline_nodes(_list(para.get("nodes"), f"{pp}.nodes"), f"{pp}.nodes", budget, False)
        frags[f["fragment"]] = f
    records = _obj(data.get("records"), f"{p}.data.records")
    for r, rec in records.items():
        rp = f"{p}.data.records.{r}"
        rec = _obj(rec, rp)
        _str(rec.get("orderIndex"), f"{rp}.orderIndex")
        for c, v in _obj(rec.get("values"), f"{rp}.values").items():
            if c in columns and (not isinstance(v, str) or v not in frags):
                _fail(f"{rp}.values.{c}", "must name one of the table's fragments")


def _text_node(value: Any, path: str, budget: _Budget) -> None:
    budget.count(path)
    node = _obj(value, path)
    if node.get("object") != "text":
        _fail(f"{path}.object", "must be 'text'")
    for k, leaf in enumerate(_list(node.get("leaves"), f"{path}.leaves")):
        lp = f"{path}.leaves[{k}]"
        budget.count(lp)
        leaf = _obj(leaf, lp)
        if leaf.get("object") != "leaf":
            _fail(f"{lp}.object", "must be 'leaf'")
        _str(leaf.get("text"), f"{lp}.text")
        for j, mark in enumerate(_list(leaf.get("marks"), f"{lp}.marks", required=False)):
            mp = f"{lp}.marks[{j}]"
            budget.count(mp)
            mark = _obj(mark, mp)
            if mark.get("object") != "mark":
                _fail(f"{mp}.object", "must be 'mark'")
            if mark.get("type") not in MARK_ORDER:
                _fail(f"{mp}.type", f"unknown or unsupported mark type {mark.get('type')!r}")


def _inline_nodes(nodes: list[Any], path: str, budget: _Budget, link: bool) -> None:
    for k, value in enumerate(nodes):
        p = f"{path}[{k}]"
        node = _obj(value, p)
        obj = node.get("object")
        if obj == "text":
            _text_node(node, p, budget)
            continue
        budget.count(p)
        if obj != "inline":
            _fail(f"{p}.object", "must be 'text' or 'inline'")
        kind = node.get("type")
        if kind not in INLINE_KINDS:
            _fail(f"{p}.type", f"unknown or unsupported inline type {kind!r}")
        data = _obj(node.get("data"), f"{p}.data")
        if kind == "link":
            if link:
                _fail(p, "a link cannot hold another link")
            _ref(data.get("ref"), f"{p}.data.ref")
            inner = _list(node.get("nodes"), f"{p}.nodes")
            for j, n in enumerate(inner):
                if isinstance(n, dict) and n.get("type") == "inline-math":
                    _fail(f"{p}.nodes[{j}]", "a link holds text and inline images")
            _inline_nodes(inner, f"{p}.nodes", budget, link=True)
        elif kind == "inline-image":
            _image(data, f"{p}.data")
        else:
            formula = _str(data.get("formula"), f"{p}.data.formula")
            if "$$" in formula or "\n" in formula or "\r" in formula:
                _fail(f"{p}.data.formula", "must be one line without $$")


# == document -> markdown ========================================================================

# Above this many bytes of JSON a document converts in a worker process (kit.offload): the
# writer costs ~1-2 us a byte in Python, so this keeps an inline conversion near 20 ms.
_INLINE_BYTES = 16 * 1024


def costly(doc: Any) -> bool:
    import orjson

    try:
        return len(orjson.dumps(doc)) > _INLINE_BYTES
    except (TypeError, orjson.JSONEncodeError):
        return False  # refused by validation anyway


def convert_many(docs: list[Any]) -> list[tuple[str | None, str | None]]:
    """`document_to_markdown` for each document, as (markdown, None) or (None, the 400's
    message): what a worker process hands back (kit.offload)."""
    out: list[tuple[str | None, str | None]] = []
    for doc in docs:
        try:
            out.append((document_to_markdown(doc), None))
        except BadRequest as exc:
            out.append((None, exc.message))
    return out


def document_to_markdown(doc: Any) -> str:
    """A GitBook JSONDocument as the markdown Docshelf stores; raises BadRequest (400) naming
    the first place `validate_document` refuses."""
    root = validate_document(doc)
    lines = _write_blocks(root["nodes"], "top")
    return "\n".join(lines) + "\n" if lines else ""


_LIST_KINDS = {"list-unordered": "bullet", "list-tasks": "bullet", "list-ordered": "ordered"}


def _write_blocks(nodes: list[JSON], where: str) -> list[str]:
    out: list[str] = []
    previous: str | None = None
    for node in nodes:
        kind = node["type"]
        lines = _write_block(node)
        if lines is None:
            continue
        if out:
            out.append("")
        family = _LIST_KINDS.get(kind)
        if family is not None and previous == family:
            out.extend(["<!-- -->", ""])  # two lists in a row would read as one
        previous = family
        out.extend(lines)
    return out


def _prefixed(lines: list[str], first: str, rest: str) -> list[str]:
    out = []
    for k, line in enumerate(lines):
        lead = first if k == 0 else rest
        out.append((lead + line) if line else lead.rstrip())
    return out


def _write_block(node: JSON) -> list[str] | None:
    kind = node["type"]
    data = node.get("data") or {}
    if kind == "paragraph":
        text = _write_inlines(node["nodes"])
        return text.split("\n") if text else None
    if kind.startswith("heading-"):
        text = _write_inlines(node["nodes"], breaks=False)
        anchor = data.get("id")
        if isinstance(anchor, str) and _HEADING_ID.fullmatch(anchor):
            text += f' <a href="#{anchor}" id="{anchor}"></a>'
        return ["#" * int(kind[-1]) + (" " + text if text else "")]
    if kind in _LIST_KINDS:
        return _write_list(node)
    if kind == "blockquote":
        inner = _write_blocks(node["nodes"], "quote") or [""]
        return _prefixed(inner, "> ", "> ")
    if kind == "divider":
        return ["---"]
    if kind == "code":
        return _write_code(node)
    if kind == "math":
        return ["$$", *data["formula"].split("\n"), "$$"]
    if kind == "embed":
        attrs = _attrs({"url": data["url"], "fullWidth": data.get("fullWidth")})
        return [f"{{% embed {attrs} %}}"]
    if kind == "file":
        return [f'{{% file src="{_attr(url_of(data["ref"]))}" %}}']
    if kind == "reusable-content":
        return [include_tag(data["ref"]["reusableContent"])]
    if kind == "images":
        return [_write_image(i["data"], _caption_text(i)) for i in node["nodes"]]
    if kind == "hint":
        attrs = _attrs({"style": data["style"], "icon": data.get("icon")})
        inner = _write_blocks(node["nodes"], "hint")
        return [f"{{% hint {attrs} %}}", *(["", *inner, ""] if inner else []), "{% endhint %}"]
    if kind == "tabs":
        out = ["{% tabs %}"]
        for tab in node["nodes"]:
            title = _attrs({"title": (tab.get("data") or {}).get("title", "")})
            inner = _write_blocks(tab["nodes"], "tab")
            out.extend([f"{{% tab {title} %}}", *(["", *inner, ""] if inner else [])])
            out.append("{% endtab %}")
        out.append("{% endtabs %}")
        return out
    if kind == "expandable":
        return _write_expandable(node)
    if kind == "table":
        return _write_table(node)
    return None  # validated away


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _attrs(values: dict[str, Any]) -> str:
    parts = []
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        parts.append(f'{name}="{_attr(str(value))}"')
    return " ".join(parts)


def _write_list(node: JSON) -> list[str]:
    kind = node["type"]
    start = (node.get("data") or {}).get("start", 1) if kind == "list-ordered" else 1
    items = node["nodes"]
    loose = any(len(item["nodes"]) > 1 for item in items)
    out: list[str] = []
    for k, item in enumerate(items):
        if kind == "list-ordered":
            marker = f"{start + k}. "
        elif kind == "list-tasks":
            checked = (item.get("data") or {}).get("checked")
            marker = "- [x] " if checked else "- [ ] "
        else:
            marker = "- "
        inner = _write_blocks(item["nodes"], "item")
        if loose and out:
            out.append("")
        if not inner:
            out.append(marker.rstrip())
            continue
        width = len(marker) if kind != "list-tasks" else 2
        lines = _prefixed(inner, marker, " " * width)
        out.extend(lines)
    return out


def _write_code(node: JSON) -> list[str]:
    data = node.get("data") or {}
    body = ["".join(_leaf_text(line)).replace("\n", "") for line in node["nodes"]] or [""]
    longest = max((len(m) for line in body for m in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    out = [fence + data.get("syntax", ""), *body, fence]
    attrs = _attrs(
        {
            "title": data.get("title"),
            "overflow": data.get("overflow"),
            "lineNumbers": data.get("lineNumbers"),
            "fullWidth": data.get("fullWidth"),
            "expandable": data.get("expandable"),
        }
    )
    if attrs:
        out = [f"{{% code {attrs} %}}", "", *out, "", "{% endcode %}"]
    return out


def _write_expandable(node: JSON) -> list[str]:
    frags = {f["fragment"]: f for f in node["fragments"]}
    title = _write_inlines(frags["expandable-title"]["nodes"][0]["nodes"], breaks=False)
    body = _write_blocks(frags["expandable-body"]["nodes"], "body")
    opened = "<details open>" if (node.get("data") or {}).get("defaultExpanded") else "<details>"
    return [
        opened,
        "",
        f"<summary>{title}</summary>",
        *(["", *body] if body else []),
        "",
        "</details>",
    ]


def _write_table(node: JSON) -> list[str]:
    data = node["data"]
    columns = data["view"]["columns"]
    definition = data["definition"]
    frags = {f["fragment"]: f for f in node["fragments"]}
    head = [
        "| "
        + " | ".join(
            _escape_text(definition[c]["title"]).replace("\n", " ") or " " for c in columns
        )
        + " |"
    ]
    align = {"left": "---", "center": ":-:", "right": "--:"}
    head.append(
        "| " + " | ".join(align[definition[c].get("textAlignment", "left")] for c in columns) + " |"
    )
    records = sorted(data["records"].items(), key=lambda kv: (kv[1]["orderIndex"], kv[0]))
    for _, rec in records:
        cells = []
        for c in columns:
            frag = frags.get(rec["values"].get(c))
            paras = frag["nodes"] if frag else []
            text = "<br>".join(_write_inlines(p["nodes"], cell=True) for p in paras)
            cells.append(text)
        head.append("| " + " | ".join(cells) + " |")
    return head


# -- inline --------------------------------------------------------------------------------------

_DELIMS = {
    "bold": ("**", "**"),
    "italic": ("_", "_"),
    "strikethrough": ("~~", "~~"),
    "keyboard": ("<kbd>", "</kbd>"),
    "superscript": ("<sup>", "</sup>"),
    "subscript": ("<sub>", "</sub>"),
}
_ALWAYS = re.compile(r"([\\`*_\[\]<~|$&{}])")
_LINE_START = re.compile(r"^([#+\-=>]|\d+[.)])")


def _escape_text(text: str) -> str:
    return _ALWAYS.sub(r"\\\1", text.replace("\r\n", "\n").replace("\r", "\n"))


def _code_span(text: str) -> str:
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if (text.startswith(("`", " ")) or text.endswith(("`", " "))) and text.strip(" "):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def _write_image(data: JSON, caption: str = "") -> str:
    from docshelf.document.markdown import destination

    alt = _escape_text(data.get("alt", "")).replace("\n", " ")
    title = ""
    if caption:
        title = ' "' + caption.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"![{alt}]({destination(url_of(data['ref']))}{title})"


def _write_inlines(nodes: list[JSON], *, breaks: bool = True, cell: bool = False) -> str:
    """Inline nodes as markdown. Marks open and close between leaves in a fixed order, so
    nested marks nest; whitespace at a mark's edge is moved outside its delimiters (CommonMark
    reads `** a**` as text)."""
    from docshelf.document.markdown import destination

    out: list[str] = []
    open_marks: list[str] = []

    def transition(wanted: set[str], lead: str) -> None:
        keep = 0
        while keep < len(open_marks) and open_marks[keep] in wanted:
            keep += 1
        closing = open_marks[keep:]
        if closing:
            for m in reversed(closing):
                out.append(_DELIMS[m][1])
            del open_marks[keep:]
        out.append(lead)
        for m in MARK_ORDER:
            if m in wanted and m != "code" and m not in open_marks:
                out.append(_DELIMS[m][0])
                open_marks.append(m)

    def leaves(text_node: JSON) -> None:
        for leaf in text_node["leaves"]:
            text: str = leaf["text"]
            if not text:
                continue
            marks = {m["type"] for m in leaf.get("marks") or []}
            if not breaks or (cell and "code" in marks):
                text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
            core = text.strip(" ") if marks - {"code"} else text
            lead = text[: len(text) - len(text.lstrip(" "))] if core is not text else ""
            trail = text[len(lead) + len(core) :] if core is not text else ""
            transition(marks, lead)
            if "code" in marks:
                out.append(_code_span(core))
            else:
                # A table cell is one line: its line breaks are <br>, which reads back as one.
                out.append(_escape_text(core).replace("\n", "<br>" if cell else "\\\n"))
            if trail:
                transition(set(), trail)

    for node in nodes:
        if node["object"] == "text":
            leaves(node)
            continue
        kind = node["type"]
        if kind == "link":
            transition(set(), "")
            label = _write_inlines(node["nodes"], breaks=False)
            out.append(f"[{label}]({destination(url_of(node['data']['ref']))})")
        elif kind == "inline-image":
            transition(set(), "")
            out.append(_write_image(node["data"]))
        else:
            transition(set(), "")
            out.append(f"$${node['data']['formula']}$$")
    transition(set(), "")
    text = "".join(out)
    # A line that would open a block (a heading, list, quote, setext underline) keeps its
    # first character as text.
    lines = text.split("\n")
    for k, line in enumerate(lines):
        stripped = line.lstrip(" ")
        m = _LINE_START.match(stripped)
        if m is not None:
            at = len(line) - len(stripped) + m.end() - 1
            lines[k] = line[:at] + "\\" + line[at:]
    # Spaces at the edges of a line are markup to the parser (cut away): one written as a
    # character reference keeps the rest as text.
    if lines[0].startswith(" "):
        lines[0] = "&#32;" + lines[0][1:]
    for k in range(1, len(lines)):
        if lines[k].startswith((" ", "\t")):
            lines[k] = "&#32;" + lines[k][1:]
    if lines[-1].endswith(" "):
        lines[-1] = lines[-1][:-1] + "&#32;"
    return "\n".join(lines)
