"""What an imported page holds beyond markdown, rewritten into the markdown Docshelf stores:
pure text in, text out, plus what could not be kept (in `Notes`). Every kind of project goes
through it (GitBook, mkdocs, Docusaurus, plain folders), after its dialect.

- GitHub alerts (`> [!NOTE]`...) become hints: `ALERT_STYLES` is the mapping.
- HTML comments are dropped: the original hides them.
- HTML blocks become the markdown of what they mean in GitBook's document model (tables,
  lists, links, marks, images, headings, `<details><summary>` as an expandable); tags with no
  meaning there keep their text and are reported; what runs (`<script>`, `on*` handlers,
  `javascript:` URLs) is left out.
- Inline `<a href>` and `<img>` become markdown links and images, so the import resolves them to
  its pages and files like any other; the other inline tags are read by the document model
  (document/model.py), which maps `<br>`, `<strong>`, `<code>`... and drops the rest.

Code (fences, indented blocks, code spans) is never touched. Linear in the page: a block parse
only where a line may start an HTML block (else code is found by its fences), and one pass of
regular expressions over the lines outside code. HTML blocks are converted by htmlblocks.py
(BeautifulSoup, markdownify), loaded only when a page has one.
"""

from __future__ import annotations

import html
import re

from docshelf.document.markdown import commonmark
from docshelf.document.model import html_attrs, safe_url
from docshelf.imports.dialects import Notes

__all__ = ["ALERT_STYLES", "clean"]

# GitHub's five alert types to GitBook's four hint styles. GitHub draws NOTE blue, TIP green,
# IMPORTANT purple, WARNING yellow and CAUTION red; GitBook has no purple, and IMPORTANT is
# "crucial information necessary for users to succeed", so it takes the success style as the
# mkdocs/Docusaurus `important` admonition already does (dialects.STYLES).
ALERT_STYLES = {
    "note": "info",
    "tip": "success",
    "important": "success",
    "warning": "warning",
    "caution": "danger",
}
_ALERT = re.compile(r"^( {0,3})>[ \t]?\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\][ \t]*$", re.I)
_QUOTED = re.compile(r"^( {0,3})>[ \t]?(.*)$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")

_BLOCKS = commonmark(200).disable("inline")
# A line that may start an HTML block (a tag after indentation, quote or list markers), or an
# indented line holding a tag (which may be indented code): only then is the page parsed.
_MAY_HOLD_HTML_BLOCK = re.compile(
    r"^[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?<[A-Za-z!/?].*|^(?: {4}|\t).*<.*",
    re.M,
)
# The expandable's lines as the engine stores them (and the dialects write them): kept as is.
_ENGINE_DETAILS = re.compile(r"<details(?: open)?>|</details>|<summary>[^<>]*</summary>")
# A code span (kept as it is), a comment (dropped), an `<a href>` with plain text, or an
# `<img>`; one pass over the text outside code blocks.
# A code span: from the start of a backtick run to the next run of its length, within a bound
# (a longer span is read as text), so that no text costs more than linear time; a comment
# likewise never reaches past the next `<!--`.
_CODE_SPAN = r"(?<!`)(?P<ticks>`++)(?!`).{0,4000}?(?<!`)(?P=ticks)(?!`)"
_INLINE = re.compile(
    rf"(?P<code>{_CODE_SPAN})"
    r"|(?P<comment><!--(?:(?!<!--).)*?-->)"
    r"|<a\b(?P<a>[^<>]*)>(?P<label>[^<>\[\]\n]*)</a>"
    r"|<img\b(?P<img>[^<>]*)>",
    re.S | re.I,
)


_DETAILS_TAG = re.compile(
    r"<details(?P<open>\s+open(?:=\"[^\"]*\")?)?\s*>|</details\s*>"
    r"|<summary\s*>(?P<summary>.*?)</summary\s*>",
    re.S | re.I,
)
_ANY_TAG = re.compile(r"<[^<>]*>")


def _without_comments(text: str) -> str:
    """An HTML block without its comments, in one pass (the stdlib's HTML parser, under
    BeautifulSoup, reads unclosed comments in quadratic time); an unclosed one hides the rest
    of the block, as a browser hides it."""
    out: list[str] = []
    at = 0
    while (start := text.find("<!--", at)) >= 0:
        out.append(text[at:start])
        end = text.find("-->", start + 4)
        if end < 0:
            return "".join(out)
        at = end + 3
    out.append(text[at:])
    return "".join(out)


def _details(text: str) -> str | None:
    """An HTML block of `<details>` and `<summary>` alone (cut apart by the markdown between
    them, or written by an mkdocs/Docusaurus collapsible) as the engine's lines for each;
    None for any other block."""
    if _DETAILS_TAG.sub("", text).strip():
        return None
    out = []
    for m in _DETAILS_TAG.finditer(text):
        if m.group(0).lower().startswith("</details"):
            out.append("</details>")
        elif m.group(0).lower().startswith("<details"):
            out.append("<details open>" if m.group("open") else "<details>")
        else:
            inner = " ".join(html.unescape(_ANY_TAG.sub(" ", m.group("summary"))).split())
            out.append(f"<summary>{html.escape(inner, quote=False)}</summary>")
    return "\n\n".join(out)


def _inline(match: re.Match[str], notes: Notes) -> str:
    if match.group("code") is not None:
        return match.group(0)
    if match.group("comment") is not None:
        return ""
    if match.group("a") is not None:
        attrs = html_attrs(match.group("a"))
        href = attrs.get("href", "")
        label = match.group("label")
        if "id" in attrs or "name" in attrs:
            return match.group(0)  # an anchor (GitBook's heading anchor form): the model reads it
        if not href:
            return label  # an `<a id>` anchor: its place is kept by the heading it is in
        if not safe_url(href):
            notes.approximated.append("a link to a script kept as its text")
            return label
        return f"[{label}](<{href}>)" if " " in href else f"[{label}]({href})"
    attrs = html_attrs(match.group("img").rstrip("/"))
    src = attrs.get("src", "")
    if not safe_url(src):
        return ""
    alt = attrs.get("alt", "").replace("[", "").replace("]", "")
    return f"![{alt}](<{src}>)" if " " in src else f"![{alt}]({src})"


# Inline tags the document model reads (document/model.py); anchors keep their place.
_READ_INLINE = frozenset(
    ("br", "strong", "b", "em", "i", "code", "s", "del", "strike", "kbd", "sup", "sub", "a")
)
# A tag, not a link destination `](<a b.md>)` nor an autolink `<https://...>`.
_TAG = re.compile(rf"{_CODE_SPAN}|(?<!\()<(/?)([A-Za-z][\w-]*)(?=[\s>]|/>)", re.S)


def _note_inline_tags(text: str, notes: Notes) -> None:
    """Reports the inline tags (outside code spans) that the document model drops."""
    dropped = {
        m.group(3).lower()
        for m in _TAG.finditer(text)
        if m.group(3) is not None and m.group(3).lower() not in _READ_INLINE
    }
    if "mark" in dropped:
        notes.approximated.append("HTML <mark> kept as its text, without its colour")
        dropped.discard("mark")
    if dropped:
        tags = ", ".join(f"<{n}>" for n in sorted(dropped)[:8])
        notes.approximated.append(f"inline HTML {tags} kept as its text")


def _alerts(lines: list[str], notes: Notes) -> list[str]:
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append(line)
            i += 1
            continue
        if (f := _FENCE.match(line)) is not None:
            fence = f.group(1)
            out.append(line)
            i += 1
            continue
        m = _ALERT.match(line)
        if m is None:
            out.append(line)
            i += 1
            continue
        indent, style = m.group(1), ALERT_STYLES[m.group(2).lower()]
        body: list[str] = []
        i += 1
        while i < len(lines) and (q := _QUOTED.match(lines[i])) is not None:
            body.append(q.group(2))
            i += 1
        out.append(f'{indent}{{% hint style="{style}" %}}')
        out.extend(indent + b if b else "" for b in _alerts(body, notes))
        out.append(f"{indent}{{% endhint %}}")
    return out


_HINT_OPEN = re.compile(r"^([ \t]*)\{%\s*hint\b[^%]*%\}\s*$")
_HINT_CLOSE = re.compile(r"^[ \t]*\{%\s*endhint\s*%\}\s*$")


def _code_out_of_hints(lines: list[str], notes: Notes) -> list[str]:
    """A code block in a hint, moved out of it: GitBook's hint holds no code blocks
    (DocumentBlockHint's nodes in its API 0.202), and flattened into the hint the code would
    lose its block and language. The hint closes before the code and opens again after."""
    out: list[str] = []
    hint: re.Match[str] | None = None
    fence: str | None = None
    split = False
    for line in lines:
        if fence is not None:
            out.append(line)
            if line.strip().startswith(fence) and not line.strip()[len(fence) :].strip():
                fence = None
                if hint is not None:
                    out.append(hint.group(0))
            continue
        f = _FENCE.match(line)
        if hint is not None and f is not None and line.startswith(hint.group(1)):
            if out and out[-1] == hint.group(0):
                out.pop()  # nothing before the code: no empty hint
            else:
                out.append(f"{hint.group(1)}{{% endhint %}}")
            fence = f.group(1)
            split = True
            out.append(line)
            continue
        if f is not None:
            fence = f.group(1)
            out.append(line)
            continue
        if (m := _HINT_OPEN.match(line)) is not None:
            hint = m
        elif _HINT_CLOSE.match(line):
            if hint is not None and out and out[-1] == hint.group(0):
                out.pop()  # the hint reopened after its last code block holds nothing more
                hint = None
                continue
            hint = None
        out.append(line)
    if split:
        notes.approximated.append("a hint split around its code blocks: GitBook hints hold none")
    return out


_EMBED = re.compile(r"^([ \t]*)\{%\s*embed\s[^%]*%\}\s*$")
_END_EMBED = re.compile(r"^[ \t]*\{%\s*endembed\s*%\}\s*$")
_CAPTION_LINES = 20


def _embeds(lines: list[str], notes: Notes) -> list[str]:
    """GitBook's `{% embed %}caption{% endembed %}`: the embed, its caption a paragraph below
    it (GitBook's embed block holds no caption, DocumentBlockEmbed in its API 0.202). An embed
    in a list item is reported: list items hold no embeds, so it shows as its link."""
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append(line)
            continue
        if (f := _FENCE.match(line)) is not None:
            fence = f.group(1)
            out.append(line)
            continue
        m = _EMBED.match(line)
        if m is None:
            out.append(line)
            continue
        if m.group(1):
            notes.approximated.append(
                "an embed in a list item shown as its link: list items hold no embeds"
            )
        out.append(line)
        end = next(
            (
                k
                for k in range(i, min(len(lines), i + _CAPTION_LINES))
                if _END_EMBED.match(lines[k])
            ),
            None,
        )
        if end is not None:
            caption = [c for c in lines[i:end] if c.strip()]
            if caption:
                notes.approximated.append("an embed's caption kept as a paragraph below it")
                out.extend(["", *caption])
            i = end + 1
    return out


_QUOTED_FENCE = re.compile(r"^( {0,3})>[ \t]?([ \t]*(`{3,}|~{3,}).*)$")


def _code_out_of_quotes(lines: list[str], notes: Notes) -> list[str]:
    """A code block in a quote, moved out of it, as out of a hint: GitBook's quote holds no
    code block (DocumentBlockQuote's nodes in its API 0.202)."""
    out: list[str] = []
    fence: str | None = None
    quoted: str | None = None  # the fence of a code block taken out of a quote
    moved = False
    for line in lines:
        if quoted is not None:
            m = _QUOTED.match(line)
            inner = m.group(2) if m is not None else line
            out.append(inner)
            if inner.strip().startswith(quoted) and not inner.strip()[len(quoted) :].strip():
                quoted = None
            continue
        if fence is not None:
            out.append(line)
            if line.strip().startswith(fence) and not line.strip()[len(fence) :].strip():
                fence = None
            continue
        if (q := _QUOTED_FENCE.match(line)) is not None:
            quoted = q.group(3)
            moved = True
            out.append(q.group(2))
            continue
        if (f := _FENCE.match(line)) is not None:
            fence = f.group(1)
        out.append(line)
    if moved:
        notes.approximated.append("a quote split around its code blocks: GitBook quotes hold none")
    return out


def clean(text: str, notes: Notes) -> str:
    """`text` with alerts, comments and HTML rewritten (see the module's notes)."""
    if "[!" in text:
        text = "\n".join(_alerts(text.split("\n"), notes))
    if ">" in text and ("```" in text or "~~~" in text):
        text = "\n".join(_code_out_of_quotes(text.split("\n"), notes))
    if "{% embed" in text:
        text = "\n".join(_embeds(text.split("\n"), notes))
    if "{% hint" in text and ("```" in text or "~~~" in text):
        text = "\n".join(_code_out_of_hints(text.split("\n"), notes))
    if "<" not in text:
        return text
    lines = text.split("\n")
    code = [False] * (len(lines) + 1)
    blocks: list[tuple[int, int, str]] = []
    if all(_ENGINE_DETAILS.fullmatch(m.group(0)) for m in _MAY_HOLD_HTML_BLOCK.finditer(text)):
        # No line starts with a tag (but the engine's own expandable lines) and none is
        # indented code holding one: the code is its fences, found without the block parse
        # (most pages: the parse is most of the cost).
        fence: str | None = None
        for n, line in enumerate(lines):
            f = _FENCE.match(line)
            if fence is None and _ENGINE_DETAILS.fullmatch(line.strip()):
                code[n] = True  # kept as it is, as code is
            elif fence is None and f is not None:
                fence = f.group(1)
                code[n] = True
            elif fence is not None:
                code[n] = True
                if line.strip().startswith(fence) and not line.strip()[len(fence) :].strip():
                    fence = None
    else:
        for token in _BLOCKS.parse(text):
            if token.map is None:
                continue
            start, end = token.map
            if token.type in ("fence", "code_block"):
                for n in range(start, min(end, len(lines))):
                    code[n] = True
            elif token.type == "html_block":
                blocks.append((start, end, token.content))
    out: list[str] = []
    pending: list[str] = []
    layout: set[str] = set()  # HTML attributes left out, reported once for the page

    def flush() -> None:
        if pending:
            joined = _INLINE.sub(lambda m: _inline(m, notes), "\n".join(pending))
            _note_inline_tags(joined, notes)
            out.extend(joined.split("\n"))
            pending.clear()

    def copy(i: int, stop: int) -> None:
        """Lines outside HTML blocks: code as it is, the rest through the inline passes."""
        for n in range(i, stop):
            if code[n]:
                flush()
                out.append(lines[n])
            else:
                pending.append(lines[n])

    i = 0
    for start, end, content in blocks:
        copy(i, start)
        i = max(i, start)
        flush()
        first = lines[start]
        head = content.split("\n", 1)[0]
        at = first.find(head) if head else -1
        prefix = first[:at] if at > 0 and not first[:at].strip(" \t>") else ""
        content = _without_comments(content)
        converted = _details(content)
        if converted is None:
            from docshelf.imports.htmlblocks import html_block  # bs4: only for HTML blocks

            converted = html_block(content, notes, layout)
        if converted:
            out.extend(prefix + c if c else prefix.rstrip() for c in converted.split("\n"))
        i = max(i, end)
    copy(i, len(lines))
    flush()
    if layout:
        names = ", ".join(sorted(layout)[:6]) + (", ..." if len(layout) > 6 else "")
        notes.approximated.append(f"HTML attributes {names} left out: a page has no layout")
    return "\n".join(out)
