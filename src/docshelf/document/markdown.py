"""Pure markdown helpers on markdown-it-py (CommonMark plus ~~strikethrough~~), no I/O.

- `iter_links` / `rewrite_links`: link and image destinations with their exact character spans,
  so links can be resolved and rewritten in place without re-rendering the page. Destinations in
  code (fenced, indented, inline spans), raw HTML and image alt text are not links and are skipped.
- `to_document`: a page as GitBook's JSONDocument, for the subset markdown can express.
- `split_sections`: a page cut at its headings into plain-text sections, for full-text search.

All of them accept any string and never raise on content.

Spans come from markdown-it itself rather than a hand-written scanner, so "is this a link" is
always the parser's answer: a few of its rules are wrapped to note where each destination it
accepted lies, in the source it was handed, and that is mapped back to the caller's text.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import posixpath
import re
import types
import unicodedata
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import orjson
from markdown_it import MarkdownIt, helpers
from markdown_it.common.utils import normalizeReference
from markdown_it.helpers import parseLinkDestination
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from docshelf.config import Settings
from docshelf.document.limits import (
    BLOCK_NESTING,
    BLOCKS,
    LINKS,
    MARKUP,
    MAX_BLOCK_NESTING,
    MAX_BLOCKS,
    MAX_LINKS,
    MAX_MARKDOWN_BYTES,
    MAX_MARKUP,
    PAGE_SIZE,
)
from docshelf.kit.keep import kept
from docshelf.kit.lru import SizedLRU

__all__ = [
    "Link",
    "Section",
    "check",
    "commonmark",
    "heading_anchor",
    "iter_links",
    "rewrite_links",
    "split_sections",
    "to_document",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Link:
    """A link or image destination: `markdown[start:end]` is its source text (inside the angle
    brackets when it has them), `target` what it means (backslash escapes and entities decoded).
    For a reference definition `image` is true when only images use it."""

    start: int
    end: int
    target: str
    image: bool


@dataclass(frozen=True, slots=True)
class Section:
    """A part of a page: before the first heading (`anchor` and `title` None), or from one
    top-level heading to the next. `body` is plain text, without the heading's own text."""

    anchor: str | None
    title: str | None
    body: str


# -- finding destinations ------------------------------------------------------------------------

_Kind = Literal["inline", "definition", "autolink"]


@dataclass(frozen=True, slots=True)
class _Dest:
    start: int
    end: int
    target: str
    image: bool
    kind: _Kind
    bracketed: bool  # written as <dest>: the span excludes the brackets
    label: str | None = None  # a definition's normalized label
    in_link: bool = False  # an autolink inside another link's text


@dataclass(frozen=True, slots=True)
class _SrcMap:
    """Where each character of an inline token's content came from in the block source: the
    content is the block's lines with container markers and indentation cut away."""

    starts: list[int]
    segments: list[tuple[int, int, int]]  # (content offset, source offset, length)

    def locate(self, i: int) -> int | None:
        k = bisect.bisect_right(self.starts, i) - 1
        if k < 0:
            return None
        content_at, source_at, length = self.segments[k]
        return source_at + i - content_at if i < content_at + length else None


@dataclass(slots=True)
class _Scan:
    source: str
    dests: list[_Dest] = field(default_factory=list)
    image_labels: set[str] = field(default_factory=set)
    link_labels: set[str] = field(default_factory=set)
    srcmap: _SrcMap | None = None
    content: str | None = None
    markup: int = 0  # markup characters in inline content (see MAX_MARKUP)
    budget: int | None = None  # stop parsing once `markup` passes it


class _OverBudget(Exception):
    pass


# The characters that start inline rules. markdown-it-py spends 10-35 us on each (it tries every
# rule there, and brackets start label walks), against ~2.5 us for any other character; only
# inline content is counted, so code blocks and fences cost nothing.
_MARKUP = "[]!<*_`~&\\"


_SCAN = "docshelf_scan"


def _scan_of(env: MutableMapping[str, Any]) -> _Scan | None:
    scan = env.get(_SCAN)
    return scan if isinstance(scan, _Scan) else None


def _lines(
    state: StateBlock, begin: int, end: int, indent: int
) -> tuple[str, list[tuple[int, int, int]]]:
    """`StateBlock.getLines(begin, end, indent, False)`, and where each piece of it came from.

    Mirrors markdown-it's own loop; a tab only partly eaten by the indent turns into spaces that
    exist nowhere in the source, so those are left out of the map (no destination starts there).
    """
    parts: list[str] = []
    segments: list[tuple[int, int, int]] = []
    length = 0
    for line in range(begin, end):
        line_indent = 0
        first = line_start = state.bMarks[line]
        last = state.eMarks[line] + 1 if line + 1 < end else state.eMarks[line]
        while first < last and line_indent < indent:
            ch = state.src[first]
            if ch == "\t":
                line_indent += 4 - (line_indent + state.bsCount[line]) % 4
            elif ch == " " or first - line_start < state.tShift[line]:
                line_indent += 1
            else:
                break
            first += 1
        if line_indent > indent:
            pad = " " * (line_indent - indent)
            parts.append(pad)
            length += len(pad)
        piece = state.src[first:last]
        segments.append((length, first, len(piece)))
        parts.append(piece)
        length += len(piece)
    return "".join(parts), segments


def _srcmap(segments: list[tuple[int, int, int]], lead: int) -> _SrcMap:
    shifted = [(at - lead, source_at, n) for at, source_at, n in segments]
    return _SrcMap([s[0] for s in shifted], shifted)


BlockRule = Callable[[StateBlock, int, int, bool], bool]
InlineRule = Callable[[StateInline, bool], bool]


def _mapping_block(original: BlockRule, atx: bool) -> BlockRule:
    """Wrap a rule that emits an inline token (paragraph, headings) to record its source map;
    only here are `blkIndent` and the container-adjusted line marks still as the rule saw them."""

    def rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        if not original(state, start_line, end_line, silent):
            return False
        token = state.tokens[-2] if not silent and len(state.tokens) >= 2 else None
        if token is None or token.type != "inline" or token.map is None:
            return True
        content = token.content
        if atx:
            # The content is one stretch of the line after the opening #s; searching from there
            # cannot hit an earlier copy, since only whitespace separates the two.
            pos = state.bMarks[start_line] + state.tShift[start_line]
            end = state.eMarks[start_line]
            while pos < end and state.src[pos] == "#":
                pos += 1
            at = state.src.find(content, pos, end) if content else pos
            if at >= 0:
                token.meta[_SCAN] = _srcmap([(0, at, len(content))], 0)
        else:
            raw, segments = _lines(state, token.map[0], token.map[1], state.blkIndent)
            # `content` is `raw` trimmed, and trimmed characters cannot start it.
            lead = raw.find(content) if content else 0
            if lead >= 0:
                token.meta[_SCAN] = _srcmap(segments, lead)
        return True

    return rule


def _record(state: StateInline, s: int, e: int, dest: _Dest) -> None:
    """Note a destination at `state.src[s:e]`, if `state.src` is a block's own inline content
    (not, say, an image's alt text parsed on its own) and the span maps back intact."""
    scan = _scan_of(state.env)
    if scan is None or scan.srcmap is None or state.src != scan.content:
        return
    a = scan.srcmap.locate(s)
    last = scan.srcmap.locate(e - 1) if e > s else a
    if a is None or last is None:
        return
    b = last + 1 if e > s else a
    # A backslash can carry a destination over a line break; such a thing is not worth the
    # trouble of rewriting across container markers, so it is left alone.
    if scan.source[a:b] == state.src[s:e] and "\n" not in state.src[s:e]:
        scan.dests.append(dataclasses.replace(dest, start=a, end=b))


def _link_rule(original: InlineRule, image: bool) -> InlineRule:
    def rule(state: StateInline, silent: bool) -> bool:
        start, maximum = state.pos, state.posMax
        if not original(state, silent):
            return False
        if not silent:
            _note_link(state, start, state.pos, maximum, image)
        return True

    return rule


def _note_link(state: StateInline, start: int, end: int, maximum: int, image: bool) -> None:
    src = state.src
    label_start = start + (2 if image else 1)
    # The rule does not say where its label ended; asking again is cheap (skipToken is cached)
    # and leaves the state as it was.
    saved = state.pos, state.posMax
    state.posMax = maximum
    label_end = _link_label(state, label_start - 1, not image)
    state.pos, state.posMax = saved
    if label_end < 0:
        return
    after = label_end + 1
    # An inline link ends with ")"; the reference forms end with "]", even when an unparsable
    # "(..." after the label made markdown-it fall back to them.
    if after < end and src[after] == "(" and src[end - 1] == ")":
        pos = after + 1
        while pos < maximum and src[pos] in " \t\n":
            pos += 1
        res = parseLinkDestination(src, pos, maximum)
        if not res.ok:
            return
        bracketed = src[pos] == "<"
        s, e = (pos + 1, res.pos - 1) if bracketed else (pos, res.pos)
        _record(state, s, e, _Dest(0, 0, res.str, image, "inline", bracketed))
        return
    scan = _scan_of(state.env)
    if scan is None:
        return
    label = ""
    if after < end and src[after] == "[":
        label = src[after + 1 : end - 1]
    label = normalizeReference(label or src[label_start:label_end])
    (scan.image_labels if image else scan.link_labels).add(label)


def _autolink_rule(original: InlineRule) -> InlineRule:
    def rule(state: StateInline, silent: bool) -> bool:
        start = state.pos
        if not original(state, silent):
            return False
        url = state.src[start + 1 : state.pos - 1]
        # E-mail autolinks have no scheme, hence no ":", and nothing to resolve.
        if not silent and ":" in url:
            in_link = state.linkLevel > 0
            dest = _Dest(0, 0, url, False, "autolink", True, in_link=in_link)
            _record(state, start + 1, state.pos - 1, dest)
        return True

    return rule


def _definition_rule(original: BlockRule) -> BlockRule:
    def rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        if not original(state, start_line, end_line, silent):
            return False
        if not silent:
            _note_definition(state, start_line, state.line)
        return True

    return rule


def _note_definition(state: StateBlock, begin: int, end: int) -> None:
    """Find the destination of the definition markdown-it just accepted on lines begin..end,
    reading the lines as its reference rule joins them."""
    scan = _scan_of(state.env)
    if scan is None:
        return
    parts: list[str] = []
    segments: list[tuple[int, int, int]] = []
    length = 0
    for line in range(begin, end):
        first = state.bMarks[line] + state.tShift[line]
        piece = state.src[first : state.eMarks[line] + 1]
        segments.append((length, first, len(piece)))
        parts.append(piece)
        length += len(piece)
    text = "".join(parts)
    label_end = -1
    pos = 1
    while pos < len(text):
        if text[pos] == "]":
            label_end = pos
            break
        pos += 2 if text[pos] == "\\" else 1
    if label_end < 0 or text[label_end + 1 : label_end + 2] != ":":
        return
    pos = label_end + 2
    while pos < len(text) and text[pos] in " \t\n":
        pos += 1
    res = parseLinkDestination(text, pos, len(text))
    if not res.ok:
        return
    bracketed = text[pos : pos + 1] == "<"
    s, e = (pos + 1, res.pos - 1) if bracketed else (pos, res.pos)
    srcmap = _srcmap(segments, 0)
    a = srcmap.locate(s)
    last = srcmap.locate(e - 1) if e > s else a
    if a is None or last is None:
        return
    b = last + 1 if e > s else a
    if scan.source[a:b] != text[s:e] or "\n" in text[s:e]:
        return
    label = normalizeReference(text[1:label_end])
    scan.dests.append(_Dest(a, b, res.str, False, "definition", bracketed, label))


def _core_inline(state: StateCore) -> None:
    """The core "inline" rule, also telling the inline rules which token they are in."""
    scan = _scan_of(state.env)
    for token in state.tokens:
        if token.type == "inline":
            if token.children is None:
                token.children = []
            if scan is not None:
                srcmap = token.meta.get(_SCAN)
                scan.srcmap = srcmap if isinstance(srcmap, _SrcMap) else None
                scan.content = token.content
                scan.markup += sum(map(token.content.count, _MARKUP))
                if scan.budget is not None and scan.markup > scan.budget:
                    raise _OverBudget
            state.md.inline.parse(token.content, state.md, state.env, token.children)
    if scan is not None:
        scan.srcmap, scan.content = None, None


# -- link labels in linear time --------------------------------------------------------------------

# markdown-it finds where a link label ends by walking from its "[" token by token; a "[" met on
# the way is tried as a link first, whose own walk runs ahead. Nothing remembers how those walks
# ended, so every unclosed "[" walked again over what the brackets after it had already walked:
# cost ~ brackets x maxNesting x tokens between them (20,000 "[" took ~1 s per parse, 1 MB of them
# about a minute). Here each walk's outcome is kept per inline parse, and a walk that meets a
# bracket whose outcome is known takes it over: jumps past its label, or fails with it. Every
# token is then stepped over by a bounded number of walks. Outcomes are exactly markdown-it's.

_EXHAUSTED = -1  # reached the end of the text with the label still open
_NESTED = -2  # met a link inside a link's label (or the nesting bound)
_LABELS = "_docshelf_labels"


def _link_label(state: StateInline, start: int, disable_nested: bool = False) -> int:
    """`markdown_it.helpers.parseLinkLabel`, with the same answers."""
    memo: dict[tuple[int, int, bool], int] = vars(state).setdefault(_LABELS, {})
    key = (start, state.posMax, disable_nested)
    outcome = memo.get(key)
    if outcome is None:
        old = state.pos
        try:
            outcome = _walk_label(state, start, disable_nested, memo)
        finally:
            state.pos = old
        memo[key] = outcome
    return outcome if outcome >= 0 else -1


def _walk_label(
    state: StateInline, start: int, disable_nested: bool, memo: dict[tuple[int, int, bool], int]
) -> int:
    src, end = state.src, state.posMax
    state.pos = start + 1
    level = 1
    while state.pos < end:
        marker = src[state.pos]
        if marker == "]":
            level -= 1
            if level == 0:
                return state.pos
        before = state.pos
        state.md.inline.skipToken(state)
        if marker != "[":
            continue
        if before != state.pos - 1:
            if disable_nested:
                return _NESTED
            continue
        # A "[" that opened no link: skipToken has just run (or once ran) the link rule on it,
        # whose walk covered what follows with one level more than ours.
        inner = memo.get((before, end, True))
        if inner == _NESTED:
            # Its walk stopped on a link (or the nesting bound), and ours would follow it there:
            # a link's label fails just the same; an image's label may hold links.
            if disable_nested:
                return _NESTED
            inner = _image_like_walk(state, before, memo)
        if inner is None or inner == _NESTED:
            level += 1  # not known: walk on as markdown-it does
        elif inner == _EXHAUSTED:
            return _EXHAUSTED  # it never closed, so neither can we
        else:
            state.pos = inner + 1  # its label, closed: level back where it was
    return _EXHAUSTED


def _image_like_walk(
    state: StateInline, at: int, memo: dict[tuple[int, int, bool], int]
) -> int | None:
    """The walk of a label that may hold links, from the "[" at `at`, if the nesting bound
    leaves room for it; it counts as one level, as skipToken's own recursion does."""
    if state.level + 1 >= state.md.options["maxNesting"]:
        return None
    state.level += 1
    saved = state.pos
    try:
        end = _link_label(state, at, False)
    finally:
        state.level -= 1
        state.pos = saved
    return end if end >= 0 else memo.get((at, state.posMax, False))


def _linear_helpers() -> types.ModuleType:
    module = types.ModuleType("docshelf_markdown_helpers")
    module.__dict__.update(vars(helpers))
    module.parseLinkLabel = _link_label  # type: ignore[attr-defined]
    return module


_HELPERS = _linear_helpers()


def commonmark(max_nesting: int) -> MarkdownIt:
    """A plain CommonMark parser whose link labels are found in linear time, for other modules
    that read markdown's structure (imports)."""
    md = MarkdownIt("commonmark", {"maxNesting": max_nesting})
    md.helpers = _HELPERS
    return md


class _Permissive(MarkdownIt):
    # markdown-it drops links to javascript: and the like for safety when rendering; as text they
    # are still links, and a rewrite must see every one.
    def validateLink(self, url: str) -> bool:
        return True


def _parser(cls: type[MarkdownIt]) -> MarkdownIt:
    # Content nested deeper than maxNesting is silently dropped. The CommonMark preset's 20 is
    # reached by about ten levels of list (each costs two); markdown-it's default preset allows
    # 100, which Python's recursion limit still affords (see the pathological-input tests).
    md = cls("commonmark", {"maxNesting": 100}).enable("strikethrough")
    md.helpers = _HELPERS
    return md


def _scanner() -> MarkdownIt:
    md = _parser(_Permissive)
    block = md.block.ruler
    fns = dict(zip(block.get_active_rules(), block.getRules(""), strict=True))
    for name, atx in (("paragraph", False), ("lheading", False), ("heading", True)):
        # `at` resets a rule's alternation chains unless told them again: a heading must still
        # be able to end a paragraph.
        alt = [chain for chain in block.get_all_rules() if fns[name] in block.getRules(chain)]
        block.at(name, _mapping_block(fns[name], atx), {"alt": alt})
    block.at("reference", _definition_rule(fns["reference"]))
    inline = md.inline.ruler
    ifns = dict(zip(inline.get_active_rules(), inline.getRules(""), strict=True))
    inline.at("link", _link_rule(ifns["link"], False))
    inline.at("image", _link_rule(ifns["image"], True))
    inline.at("autolink", _autolink_rule(ifns["autolink"]))
    md.core.ruler.at("inline", _core_inline)
    return md


_SCANNER = _scanner()


def parser() -> MarkdownIt:
    """A fresh plain parser (CommonMark, strikethrough, linear link labels, 100 levels), for
    `document.model`, which adds GitBook's block syntax to it."""
    return _parser(MarkdownIt)


_DOC = parser()


def destination(url: str) -> str:
    """`url` written as a link destination: bare when it can be, else in angle brackets."""
    bare = _bare(url)
    return bare if bare is not None else f"<{_bracketed(url)}>"


def reading_parser() -> MarkdownIt:
    """A new parser configured as the one every read of a page uses (`to_document`,
    `split_sections`), for renderers that add their own rules on top (document/html.py)."""
    return _parser(MarkdownIt)


_CRLF = re.compile(r"\r\n")


# -- one parse per text ---------------------------------------------------------------------------

T = TypeVar("T")

# What the helpers derive from a text depends on nothing else, so it is kept per process by the
# text's hash: a page is parsed once when written and reads reuse that, however often they come.
# Each memo is bounded by an estimate of the bytes it holds; a third of the setting for the
# analyses, two thirds for the rendered documents.
_MEMO_BYTES = Settings().markdown_memo_mb * 1024 * 1024 // 3


class _Memo(Generic[T]):
    def __init__(self, capacity: int, size: Callable[[T], int]) -> None:
        # Each entry costs its estimate plus ~100 bytes of key and bookkeeping.
        self._items: SizedLRU[bytes, T] = SizedLRU(capacity, lambda value: size(value) + 100)

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def holds_key(self, key: bytes) -> bool:
        return key in self._items

    def get(self, text: str, compute: Callable[[str], T]) -> T:
        key = self.key(text)
        hit = self._items.get(key)
        if hit is not None:
            return hit
        value = compute(text)
        self._items.put(key, value)
        return value

    def put(self, text: str, value: T) -> None:
        key = self.key(text)
        if key not in self._items:
            self._items.put(key, value)


@dataclass(frozen=True, slots=True)
class _Analysis:
    dests: tuple[_Dest, ...]
    nesting: int  # the deepest block quote / list item nesting
    markup: int  # markup characters in inline content
    blocks: int = 0  # block-level elements


# Links and limits from the scanner's parse; the document and the sections from one parse by
# the plain parser (indexing asks for the sections when a page is written, so the document of
# a page whose links need no rendering is ready for its first read).
_ANALYSES: _Memo[_Analysis] = _Memo(_MEMO_BYTES, lambda a: 200 * len(a.dests))
_Rendered = tuple[bytes, tuple["Section", ...], bytes]
_RENDERED: _Memo[_Rendered] = _Memo(
    2 * _MEMO_BYTES,
    lambda r: len(r[0]) + len(r[2]) + sum(len(s.body) + len(s.title or "") + 100 for s in r[1]),
)


# Above about this many microseconds of parsing, a text is parsed in a worker process
# (document/parsing.py) rather than on the event loop; the estimate follows the costs measured
# for markdown-it-py (benchmarks/RESULTS.md, "Pathological markdown").
_INLINE_BUDGET_US = 20_000


def costly(markdown: str) -> bool:
    """Whether parsing `markdown` would hold the event loop past the inline budget and it has
    not been parsed in this process yet."""
    if len(markdown) > MAX_MARKDOWN_BYTES:
        return False  # `check` refuses it on its size alone, before any parse
    if parse_cost_us(markdown) <= _INLINE_BUDGET_US:
        return False
    return not memoized(markdown)


def parse_cost_us(markdown: str) -> float:
    """About how long one parse of `markdown` takes on a quiet machine, in microseconds (one
    pass of C-speed counting: cheap next to the parse)."""
    return 2.5 * len(markdown) + 30 * markup_count(markdown)


def markup_count(markdown: str) -> int:
    """The markup characters anywhere in `markdown`, code included: at least what `check`
    counts against MAX_MARKUP."""
    return sum(markdown.count(c) for c in _MARKUP)


Prepared = tuple["_Analysis | None", "_Rendered | None"]


def prepare(markdown: str) -> Prepared:
    """Everything the helpers derive from `markdown`, computed where it is cheap to wait (a worker
    process) and handed to `adopt` in the process that serves it. Pure."""
    try:
        analysis = _budgeted_analysis(markdown)
    except _OverBudget:
        return None, None  # refused by `check` anyway, which stops early on its own
    within = (
        len(markdown.encode("utf-8", "surrogatepass")) <= MAX_MARKDOWN_BYTES
        and analysis.nesting <= MAX_BLOCK_NESTING
        and len(analysis.dests) <= MAX_LINKS
        and analysis.blocks <= MAX_BLOCKS
    )
    return analysis, _render(markdown) if within else None


def prepare_many(texts: list[str]) -> list[Prepared]:
    return [prepare(t) for t in texts]


def memoized(markdown: str) -> bool:
    key = _Memo.key(markdown)  # one hash of the text for both memos
    return _ANALYSES.holds_key(key) and _RENDERED.holds_key(key)


def adopt(markdown: str, prepared: Prepared) -> None:
    analysis, rendered = prepared
    if analysis is not None:
        _ANALYSES.put(markdown, analysis)
    if rendered is not None:
        _RENDERED.put(markdown, rendered)


def _nesting(tokens: list[Token]) -> int:
    depth = deepest = 0
    for token in tokens:
        if token.type in ("blockquote_open", "list_item_open"):
            depth += 1
            deepest = max(deepest, depth)
        elif token.type in ("blockquote_close", "list_item_close"):
            depth -= 1
    return deepest


def check(markdown: str) -> str | None:
    """What makes `markdown` exceed the limits on a page's body, or None. Linear time; the parse
    it takes is the one later helpers reuse."""
    found = violation(markdown)
    return None if found is None else found[1]


def violation(markdown: str) -> tuple[str, str] | None:
    """`check`'s answer with the name of the limit exceeded (limits.PAGE_SIZE...)."""
    size = len(markdown.encode("utf-8", "surrogatepass"))
    if size > MAX_MARKDOWN_BYTES:
        return PAGE_SIZE, f"markdown is {size} bytes; a page holds at most {MAX_MARKDOWN_BYTES}"
    try:
        analysis = _ANALYSES.get(markdown, _budgeted_analysis)
    except _OverBudget:
        analysis = None
    if analysis is None or analysis.markup > MAX_MARKUP:
        return MARKUP, (
            f"markdown holds more than {MAX_MARKUP} markup characters outside code "
            f"({' '.join(_MARKUP)}); a page holds at most {MAX_MARKUP}"
        )
    if analysis.nesting > MAX_BLOCK_NESTING:
        return BLOCK_NESTING, (
            f"markdown nests block quotes or lists {analysis.nesting} deep; "
            f"at most {MAX_BLOCK_NESTING} levels are allowed"
        )
    if len(analysis.dests) > MAX_LINKS:
        return LINKS, (
            f"markdown holds {len(analysis.dests)} links; a page holds at most {MAX_LINKS}"
        )
    if analysis.blocks > MAX_BLOCKS:
        return BLOCKS, (
            f"markdown holds {analysis.blocks} blocks (paragraphs, headings, list items...); "
            f"a page holds at most {MAX_BLOCKS}"
        )
    return None


def _analyze(markdown: str) -> _Analysis:
    return _ANALYSES.get(markdown, _compute_analysis)


def _budgeted_analysis(markdown: str) -> _Analysis:
    return _compute_analysis(markdown, MAX_MARKUP)


def _scan(markdown: str) -> list[_Dest]:
    """Every destination, in order, with offsets into `markdown` itself."""
    return list(_analyze(markdown).dests)


def _compute_analysis(markdown: str, budget: int | None = None) -> _Analysis:
    # markdown-it turns \r\n into \n before anything else; doing it here keeps the offsets of
    # the text it parses accountable. \r and NUL become one character each, so stay aligned.
    collapsed = [m.start() - i for i, m in enumerate(_CRLF.finditer(markdown))]
    source = _CRLF.sub("\n", markdown).replace("\r", "\n").replace("\0", "\ufffd")
    scan = _Scan(source, budget=budget)
    tokens = _SCANNER.parse(source, {_SCAN: scan})

    def original(pos: int) -> int:
        return pos + bisect.bisect_right(collapsed, pos - 1)

    out: list[_Dest] = []
    previous_end = -1
    for d in sorted(scan.dests, key=lambda d: (d.start, d.end)):
        if d.start < previous_end:
            continue  # cannot happen for what markdown-it accepts; spans must stay disjoint
        previous_end = d.end
        image = d.image
        if d.kind == "definition" and d.label is not None:
            image = d.label in scan.image_labels and d.label not in scan.link_labels
        start, end = original(d.start), original(d.end)
        out.append(dataclasses.replace(d, start=start, end=end, image=image))
    blocks = sum(1 for t in tokens if t.block and t.nesting != -1 and t.type != "inline")
    return _Analysis(tuple(out), _nesting(tokens), scan.markup, blocks)


def iter_links(markdown: str) -> list[Link]:
    """Every link and image destination in `markdown`, in order: inline links and images,
    reference definitions (`[x]: dest`) and URL autolinks (`<https://...>`)."""
    return [Link(d.start, d.end, d.target, d.image) for d in _scan(markdown)]


# -- rewriting -------------------------------------------------------------------------------------

_ENTITY_LIKE = re.compile(r"&(?=[A-Za-z#][A-Za-z0-9]{1,31};)")
_AUTOLINK = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^<>\x00-\x20]*")
_TEXT_SPECIAL = re.compile(r"([\\`*_\[\]<>&!~])")


def _escape(url: str) -> str:
    # Every backslash is doubled, not just those before punctuation: simpler, and `\\` always
    # reads back as one backslash. `&` only needs escaping where it would read as an entity.
    return _ENTITY_LIKE.sub(r"\\&", url.replace("\\", "\\\\"))


def _bracketed(url: str) -> str:
    text = _escape(url).replace("<", "\\<").replace(">", "\\>")
    # A destination cannot hold a line break at all; percent-encoding keeps the URL's meaning.
    return text.replace("\n", "%0A").replace("\r", "%0D")


def _bare(url: str) -> str | None:
    """`url` written without angle brackets, or None when it cannot be."""
    if not url or url.startswith("<") or any(c <= " " or c == "\x7f" for c in url):
        return None
    text = _escape(url)
    depth = 0
    for c in url:
        depth += 1 if c == "(" else -1 if c == ")" else 0
        if depth < 0 or depth > 32:
            break
    if depth != 0:
        text = text.replace("(", "\\(").replace(")", "\\)")
    return text


def _escaped_at(text: str, i: int) -> bool:
    """Whether `text[i]` follows an odd run of backslashes."""
    j = i
    while j > 0 and text[j - 1] == "\\":
        j -= 1
    return (i - j) % 2 == 1


_AFTER_LABEL = re.compile(r"(?<=\]):([ \t]*(?:\r?\n[ \t]*)?)\Z")


def _replacement(markdown: str, d: _Dest, new: str) -> tuple[int, int, str] | None:
    if d.kind == "autolink":
        if _AUTOLINK.fullmatch(new):
            return d.start, d.end, new
        if d.in_link:
            return None  # a link cannot hold another one; there is no way to write this
        label = _TEXT_SPECIAL.sub(r"\\\1", markdown[d.start : d.end])
        dest = _bare(new) or f"<{_bracketed(new)}>"
        start, text = d.start - 1, f"[{label}]({dest})"
        # A "!" just before would turn the new link into an image, unless it is escaped already.
        if start > 0 and markdown[start - 1] == "!" and not _escaped_at(markdown, start - 1):
            start, text = start - 1, "\\!" + text
        # After "[label]:" the new link would read as that definition's destination (a "<" could
        # not); an escaped colon reads the same and defines nothing.
        before = _AFTER_LABEL.search(markdown, max(0, start - 64), start)
        if before is not None:
            return before.start(), d.end + 1, "\\:" + before.group(1) + text
        return start, d.end + 1, text
    if d.bracketed:
        return d.start, d.end, _bracketed(new)
    bare = _bare(new)
    return d.start, d.end, bare if bare is not None else f"<{_bracketed(new)}>"


_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def is_external(target: str) -> bool:
    """A link target that leaves the content: a URL with a scheme, or one naming another host."""
    return bool(_URL_SCHEME.match(target)) or target.startswith("//")


def link_path(target: str, folder: str) -> str | None:
    """Where a relative link `target` (no fragment) written in a file of `folder` leads, as a
    path from the content's root ("." for the root itself); a leading "/" starts from the root,
    as GitBook writes some links. None when it leaves the root."""
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
    path = posixpath.normpath(joined) if joined else "."
    return None if path == ".." or path.startswith("../") else path


def rewrite_links(markdown: str, resolve: Callable[[str, bool], str | None]) -> str:
    """`markdown` with each destination replaced by `resolve(target, image)` where that is not
    None, escaped as its place needs (angle brackets added if it must). Everything else,
    including destinations resolved to themselves, is kept byte for byte."""
    out: list[str] = []
    last = 0
    for d in _scan(markdown):
        new = resolve(d.target, d.image)
        if new is None or new == d.target:
            continue
        replacement = _replacement(markdown, d, new)
        if replacement is None or replacement[0] < last:
            continue
        start, end, text = replacement
        out.append(markdown[last:start])
        out.append(text)
        last = end
    out.append(markdown[last:])
    return "".join(out)


# -- JSONDocument ----------------------------------------------------------------------------------


def alt_text(tokens: list[Token] | None) -> str:
    """An image's alt text: its label's text, markup dropped."""
    out: list[str] = []
    stack = [iter(tokens or [])]
    while stack:
        token = next(stack[-1], None)
        if token is None:
            stack.pop()
        elif token.type in ("text", "code_inline"):
            out.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif token.type == "image":
            stack.append(iter(token.children or []))
    return "".join(out)


def to_document(markdown: str) -> JSON:
    """`markdown` as a GitBook JSONDocument (`document.model` holds the mapping). Anything
    GitBook would not allow where it stands is flattened to what it would: code in a quote
    becomes a code-marked paragraph, an image outside the top level an inline image.
    Containers nested deeper than MAX_BLOCK_NESTING (only in text stored before that limit)
    are flattened into the deepest one allowed.

    Kept per text as JSON bytes: each call returns a fresh copy the caller may change."""
    return orjson.loads(_RENDERED.get(markdown, _render)[0])  # type: ignore[no-any-return]


def _render(markdown: str) -> _Rendered:
    from docshelf.document import blocks
    from docshelf.document import model as document

    doc, tokens = document.convert(markdown)
    # Kept in the memo: sized to its length (orjson's output holds its whole working buffer).
    plain = kept(orjson.dumps(doc))
    # Also kept as the API answers it (top-level blocks keyed, encoded): loading the JSON back
    # into Python objects to key and encode it again cost every read of a page's document
    # (~0.2 ms for a page of a few KB; ~0.5 s held on the event loop for a 2 MiB one).
    answered = kept(orjson.dumps(blocks.keyed(doc)))
    return plain, _sections(tokens), answered


def answered_document(markdown: str) -> orjson.Fragment:
    """`markdown` as the API answers a page's document: GitBook's JSONDocument with its
    top-level blocks keyed (document.blocks), as encoded bytes (an orjson.Fragment the answer
    embeds as is), computed with the parse, in a worker for a large text
    (document/parsing.py), never loaded on the event loop."""
    return orjson.Fragment(_RENDERED.get(markdown, _render)[2])


# -- sections --------------------------------------------------------------------------------------

_TAG = re.compile(r"<[^>]*>")


def _plain(tokens: list[Token]) -> str:
    out: list[str] = []
    for token in tokens:
        if token.type in ("text", "code_inline"):
            out.append(token.content)
        elif token.type == "softbreak":
            out.append(" ")
        elif token.type == "hardbreak":
            out.append("\n")
        elif token.type == "image":
            out.append(alt_text(token.children))
    return "".join(out)


def heading_anchor(text: str) -> str:
    """GitHub's heading anchor: lower case, spaces to hyphens, and everything but letters,
    digits, marks, hyphens and underscores-and-kin dropped."""
    kept = (
        c
        for c in text.lower()
        if c in " -"
        or c.isalnum()
        or unicodedata.category(c)[0] == "M"
        or unicodedata.category(c) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def split_sections(markdown: str) -> list[Section]:
    """`markdown` cut at its top-level headings (headings inside quotes or lists are body text).
    Text before the first heading is a section of its own when there is any. Anchors are
    GitHub's: a repeated one gets "-1", "-2"... as github-slugger numbers them."""
    return list(_RENDERED.get(markdown, _render)[1])


def _sections(tokens: list[Token]) -> tuple[Section, ...]:
    sections: list[Section] = []
    anchor: str | None = None
    title: str | None = None
    parts: list[str] = []
    seen: dict[str, int] = {}

    def flush() -> None:
        body = "\n".join(p for p in parts if p)
        if title is not None or body.strip():
            sections.append(Section(anchor, title, body))

    i = 0
    while i < len(tokens):
        token = tokens[i]
        inline = tokens[i + 1] if i + 1 < len(tokens) else None
        children = (inline.children or []) if inline and inline.type == "inline" else []
        if token.type == "heading_open" and token.level == 0:
            flush()
            parts = []
            title = _plain(children).strip()
            slug = base = heading_anchor(title)
            while slug in seen:
                seen[base] += 1
                slug = f"{base}-{seen[base]}"
            seen[slug] = 0
            anchor = slug
            i += 3
            continue
        if token.type == "inline":
            parts.append(_plain(token.children or []).strip())
        elif token.type in ("fence", "code_block"):
            parts.append(token.content.rstrip("\n"))
        elif token.type == "html_block":
            parts.append(_TAG.sub("", token.content).strip())
        i += 1
    flush()
    return tuple(sections)


# -- a leading title ---------------------------------------------------------------------------

_TITLE_PARSER = commonmark(20)
_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
MAX_TITLE_LENGTH = 512  # a page title's bound (content/schemas.py)


def plain_text(tokens: list[Token] | None) -> str:
    """The text of inline tokens with white space folded, as a title shows it."""
    out: list[str] = []
    for token in tokens or []:
        if token.type in ("text", "code_inline"):
            out.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif token.type == "image":
            out.append(plain_text(token.children))
    return " ".join("".join(out).split())


def leading_title(text: str) -> tuple[str, str] | None:
    """A body's leading `# heading` (ATX or setext, level 1) as plain text, and the body without
    it, as GitBook (and its Git Sync) take it for the page's title; None when the body opens
    with anything else. Only the first two lines are parsed: a level-1 heading spans at most
    two, whatever the size of the page."""
    body = _BLANK_LINES.sub("", text)
    head = body.split("\n", 2)[:2]
    tokens = _TITLE_PARSER.parse("\n".join(head))
    if len(tokens) < 2 or tokens[0].type != "heading_open" or tokens[0].tag != "h1":
        return None
    title = plain_text(tokens[1].children)
    if not title or len(title) > MAX_TITLE_LENGTH or tokens[0].map is None:
        return None
    end = tokens[0].map[1]
    parts = body.split("\n", end)
    return title, _BLANK_LINES.sub("", parts[end] if len(parts) > end else "")
