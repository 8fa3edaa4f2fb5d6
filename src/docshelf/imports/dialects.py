"""The markdown dialects of mkdocs (Material, pymdownx) and Docusaurus rewritten into the
markdown Docshelf stores (GitBook's): pure text in, text out, plus what could not be kept.

- Front matter (YAML) gives a page's title, description and order.
- Heading attribute lists (`## Title { #id .class }`) become the heading's anchor, written as
  GitBook writes custom anchors (`## Title <a href="#id" id="id"></a>`), and leave the title.
- Admonitions (`!!! note`, `??? tip`, `/// warning | Title`, `:::danger[Title]`) become GitBook
  hints, `{% hint style="..." %}`; collapsible ones (`???`, `/// details`, `:::details`)
  become expandables (`<details><summary>`). `_STYLES` is the mapping of types to styles.
- Content tabs (`=== "Tab"`) become `{% tabs %}{% tab title="Tab" %}...`.
- Snippet includes (`--8<-- "file.md"`) are inlined from the project; those that cannot be are
  reported and left out.

Code fences are copied untouched. Everything here is line based and linear in the text.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "STYLES",
    "Notes",
    "convert",
    "docusaurus_paths",
    "front_matter",
    "humanize",
    "load_yaml",
]

# Admonition types (mkdocs-material's and Docusaurus's) to GitBook's four hint styles.
STYLES: dict[str, str] = {
    **dict.fromkeys(
        ("note", "abstract", "summary", "tldr", "info", "todo", "seealso", "question", "help"),
        "info",
    ),
    **dict.fromkeys(("faq", "example", "quote", "cite", "secondary"), "info"),
    **dict.fromkeys(("tip", "hint", "important", "success", "check", "done"), "success"),
    **dict.fromkeys(("warning", "caution", "attention"), "warning"),
    **dict.fromkeys(("danger", "error", "failure", "fail", "missing", "bug"), "danger"),
}
_COLLAPSIBLE = ("details", "collapse", "spoiler")
MAX_INCLUDE_DEPTH = 4
# Containers (admonitions, tabs) inside each other that are rewritten; deeper ones stay as text.
# Each level re-reads its lines once, so this bounds the work to MAX_NESTING passes over a page.
MAX_NESTING = 16
# Text a page may take in through snippet includes, all told.
MAX_INCLUDED_BYTES = 512 * 1024


@dataclass
class Notes:
    """What a conversion left out or changed, as (what, why) pairs."""

    unresolved: list[str] = field(default_factory=list)  # snippet targets not found
    approximated: list[str] = field(default_factory=list)  # constructs kept only in part


# What a project's YAML (mkdocs.yml, .gitbook.yaml, _category_.yml, front matter) may cost. A real
# configuration is a few KB, its nav some thousands of entries; past these bounds (an alias
# bomb, whose nav would be walked for minutes) the YAML is refused while it is composed, in
# milliseconds. (Plain numbers: kit.yamlbound, which loads PyYAML, is imported where YAML is
# read, in the import worker, not by the API process.)
YAML_CHARS = 1024 * 1024
YAML_DEPTH = 64
YAML_NODES = 50_000  # once aliases are expanded
YAML_ALIASES = 1_000


def read_yaml(text: str) -> Any:
    """`text` as YAML (unknown tags read as plain values, nothing constructed for them); raises
    kit.yamlbound.YamlRefused when it is not valid YAML or is past the bounds above."""
    from docshelf.kit import yamlbound

    bounds = yamlbound.Bounds(
        text_chars=YAML_CHARS, depth=YAML_DEPTH, nodes=YAML_NODES, aliases=YAML_ALIASES
    )
    return yamlbound.load(text, bounds, tolerant=True)


def load_yaml(text: str) -> Any:
    """`text` as YAML, or None when it is not valid YAML or past the bounds."""
    from docshelf.kit import yamlbound

    try:
        return read_yaml(text)
    except yamlbound.YamlRefused:
        return None


_FRONT_KEY = re.compile(r"[A-Za-z0-9_-]+\s*:")


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """A leading YAML block as a mapping (empty when there is none or it is not a mapping),
    and the text after it."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---" or len(lines) < 2:
        return {}, text
    if not _FRONT_KEY.match(lines[1]) and lines[1].strip() not in ("---", "..."):
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            data = load_yaml("\n".join(lines[1:i]))
            return (data if isinstance(data, dict) else {}), "\n".join(lines[i + 1 :])
    return {}, text


_NUMBER_PREFIX = re.compile(r"^\d+[-_. ]+(?=\S)")


def humanize(name: str) -> str:
    """A file or folder name as a title: `01-getting_started.md` -> `Getting started`."""
    stem = name.rsplit("/", 1)[-1]
    if "." in stem[1:]:
        stem = stem.rsplit(".", 1)[0]
    stem = _NUMBER_PREFIX.sub("", stem)
    words = re.sub(r"[-_\s]+", " ", stem).strip()
    return (words[:1].upper() + words[1:]) if words else name


# -- line rules ----------------------------------------------------------------------------------

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_ATTR_HEADING = re.compile(r"^(#{1,6}[ \t]+.*?)[ \t]*\{:?[ \t]*([^{}]*)\}[ \t]*#*[ \t]*$")
_MKDOCS_ADMONITION = re.compile(
    r'^(!!!|\?\?\?\+?)[ \t]+([\w-]+)((?:[ \t]+[\w-]+)*)(?:[ \t]+"(.*)")?\s*$'
)
_TAB = re.compile(r'^===!?\+?[ \t]+"(.*)"\s*$')
_PYMDOWN_OPEN = re.compile(r"^(/{3,})[ \t]*([\w-]+)(?:[ \t]*\|[ \t]*(.*?))?\s*$")
_DOCUSAURUS_OPEN = re.compile(r"^(:{3,})[ \t]*([\w-]+)(?:\[(.*)\]|[ \t]+(.*?))?\s*$")
_SNIPPET = re.compile(r"""^[ \t]*-{1,}8<-{1,}[ \t]+["']?([^"'\s]+)["']?\s*$""")
_PYMDOWN_KNOWN = (*STYLES, *_COLLAPSIBLE, "admonition", "tab")
_MDX_IMPORT = re.compile(r"""^import\s+[\w{}\s,*]+\s+from\s+['"][^'"]+['"];?\s*$""")
_TABS_CLOSE = re.compile(r"^\s*</Tabs>\s*$")
_AUTODOC = re.compile(r"^:::[ \t]+([A-Za-z_][\w]*(?:\.[\w]+)+)[ \t]*$")
_MDX_EXPORT = re.compile(r"^export\s+(?:const|let|var|function|default|class)\b")
_STATEMENT_LINES = 200  # lines an MDX export may span


def _statement_end(lines: list[str], i: int) -> int:
    """The line after the JavaScript statement starting on line i: where its brackets close."""
    depth = 0
    for k in range(i, min(len(lines), i + _STATEMENT_LINES)):
        text = re.sub(r"""(["'`])(?:\\.|(?!\1).)*\1""", "", lines[k])
        depth += sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")
        if depth <= 0:
            return k + 1
    return i + 1


_TABS_START = re.compile(r"^\s*<Tabs\b")
_TAB_ITEM_START = re.compile(r"^\s*<TabItem\b")
# A `<TabItem ...>` opening tag, to where it ends: what follows on its line is the tab's own.
_TAB_ITEM_OPENING = re.compile(r"""\s*<TabItem\b(?:[^>"'{]|"[^"]*"|'[^']*'|\{[^}]*\})*>""")
_TAB_ITEM_END = "</TabItem>"
_ATTR = re.compile(r"""\b(label|value)=\{?\s*(?:"([^"]*)"|'([^']*)'|`([^`$]*)`)\s*\}?""")
_TAG_LINES = 50  # lines an opening tag may span


def _opening_tag(lines: list[str], i: int) -> tuple[str | None, int]:
    """The JSX opening tag starting on line i (it may span lines), and the line after it."""
    for k in range(i, min(len(lines), i + _TAG_LINES)):
        if lines[k].rstrip().endswith(">") and not lines[k].rstrip().endswith("=>"):
            return " ".join(line.strip() for line in lines[i : k + 1]), k + 1
    return None, i + 1


def _tab_labels(opening: str) -> dict[str, str]:
    """`<Tabs values={[{label: 'A', value: 'a'}]}>`: each value's label."""
    from docshelf.imports.jsdata import NotData, exported

    start = opening.find("values={")
    end = opening.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        values = exported("export default " + opening[start + len("values={") : end])
    except NotData:
        return {}
    out: dict[str, str] = {}
    for entry in values if isinstance(values, list) else []:
        if isinstance(entry, dict):
            value, label = entry.get("value"), entry.get("label")
            if isinstance(value, str) and isinstance(label, str):
                out[value] = label
    return out


def _indented(lines: list[str], start: int, width: int = 4) -> tuple[list[str], int]:
    """The block of lines indented by `width` from `start` on (blank lines inside it kept),
    dedented, and the index after it."""
    body: list[str] = []
    i = start
    pad = " " * width
    while i < len(lines):
        line = lines[i].replace("\t", pad)
        if line.startswith(pad):
            body.append(line[width:])
        elif not line.strip():
            body.append("")
        else:
            break
        i += 1
    while body and not body[-1].strip():
        body.pop()
        i -= 1
    return body, i


def _closing(lines: list[str], start: int, marker: str) -> int:
    """The index of the line closing a fenced container opened with `marker` (nested ones of
    the same kind counted), or len(lines)."""
    depth = 0
    fence: str | None = None
    char = marker[0]
    for i in range(start, len(lines)):
        stripped = lines[i].strip()
        if match := _FENCE.match(lines[i]):
            if fence is None:
                fence = match.group(2)
            elif stripped.startswith(fence) and not stripped[len(fence) :].strip():
                fence = None
            continue
        if fence is not None:
            continue
        if stripped and set(stripped) == {char} and len(stripped) >= len(marker):
            if depth == 0:
                return i
            depth -= 1
        elif stripped.startswith(char * 3) and stripped.strip(char).strip():
            depth += 1
    return len(lines)


def _block(kind: str, title: str | None, body: list[str], notes: Notes, collapsible: bool) -> str:
    lines = "\n".join(body).strip("\n")
    if collapsible:
        summary = html.escape(title or humanize(kind), quote=False)
        return f"<details>\n\n<summary>{summary}</summary>\n\n{lines}\n\n</details>"
    style = STYLES.get(kind.lower())
    if style is None:
        notes.approximated.append(f'admonition type "{kind}" shown as an info hint')
        style = "info"
    head = f"**{title}**\n\n" if title else ""
    return f'{{% hint style="{style}" %}}\n{head}{lines}\n{{% endhint %}}'


def _anchor_heading(match: re.Match[str]) -> str:
    text, attrs = match.group(1), match.group(2)
    ids = [a[1:] for a in attrs.split() if a.startswith("#") and len(a) > 1]
    if not ids:
        return text
    anchor = html.escape(ids[0])
    return f'{text} <a href="#{anchor}" id="{anchor}"></a>'


class _Converter:
    def __init__(self, include: Callable[[str], str | None], notes: Notes) -> None:
        self.include = include
        self.notes = notes
        self.included = 0
        self.autodoc: list[str] = []

    def run(self, text: str, depth: int = 0) -> str:
        return "\n".join(self._lines(text.split("\n"), depth))

    def _lines(self, lines: list[str], depth: int, nest: int = 0) -> list[str]:
        out: list[str] = []
        i = 0
        fence: str | None = None
        if nest >= MAX_NESTING:
            self.notes.approximated.append(
                f"blocks nested more than {MAX_NESTING} deep kept as text"
            )
            return lines
        while i < len(lines):
            line = lines[i]
            if fence is not None:
                out.append(line)
                stripped = line.strip()
                if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                    fence = None
                i += 1
                continue
            if (match := _FENCE.match(line)) is not None:
                fence = match.group(2)
                out.append(line)
                i += 1
                continue
            if (match := _ATTR_HEADING.match(line)) is not None:
                out.append(_anchor_heading(match))
                i += 1
                continue
            if (match := _SNIPPET.match(line)) is not None:
                out.extend(self._snippet(match.group(1), depth))
                i += 1
                continue
            if (match := _MKDOCS_ADMONITION.match(line)) is not None:
                body, i = _indented(lines, i + 1)
                title = match.group(4)
                if title == "":
                    title = None  # `!!! note ""`: no title bar at all
                elif title is None:
                    title = humanize(match.group(2))
                collapsible = match.group(1).startswith("???")
                inner = self._lines(body, depth, nest + 1)
                out.append(_block(match.group(2), title, inner, self.notes, collapsible))
                continue
            if _TAB.match(line):
                i = self._tabs(lines, i, depth, nest, out)
                continue
            if _MDX_IMPORT.match(line):
                # MDX's component imports mean nothing outside Docusaurus.
                self.notes.approximated.append(f"MDX import left out: {line.strip()[:80]}")
                i += 1
                continue
            if (match := _AUTODOC.match(line)) is not None:
                # mkdocstrings / mkautodoc write an API reference from the project's code at
                # build time: there is nothing of it in the markdown to import.
                _, i = _indented(lines, i + 1)
                self.autodoc.append(match.group(1))
                continue
            if _MDX_EXPORT.match(line):
                # MDX's exports (components, data) are code of the site: left out whole.
                end = _statement_end(lines, i)
                self.notes.approximated.append(f"MDX export left out: {line.strip()[:80]}")
                i = end
                continue
            if _TABS_START.match(line):
                i = self._docusaurus_tabs(lines, i, depth, nest, out)
                continue
            match = _PYMDOWN_OPEN.match(line) or _DOCUSAURUS_OPEN.match(line)
            if match is not None and (line.startswith(":") or match.group(2) in _PYMDOWN_KNOWN):
                end = _closing(lines, i + 1, match.group(1))
                kind = match.group(2)
                title = next((g for g in match.groups()[2:] if g), None)
                inner = self._lines(lines[i + 1 : end], depth, nest + 1)
                if kind == "tab":
                    self.notes.approximated.append("a pymdownx tab block kept as its content")
                    out.append(f"**{title or 'Tab'}**\n\n" + "\n".join(inner))
                else:
                    collapsible = kind.lower() in _COLLAPSIBLE
                    out.append(_block(kind, title, inner, self.notes, collapsible))
                i = end + 1
                continue
            out.append(line)
            i += 1
        return out

    def _tabs(self, lines: list[str], i: int, depth: int, nest: int, out: list[str]) -> int:
        out.append("{% tabs %}")
        while i < len(lines) and (match := _TAB.match(lines[i])) is not None:
            body, i = _indented(lines, i + 1)
            title = match.group(1).replace('"', "&quot;")
            out.append(f'{{% tab title="{title}" %}}')
            out.extend(self._lines(body, depth, nest + 1))
            out.append("{% endtab %}")
            while i < len(lines) and not lines[i].strip() and i + 1 < len(lines):
                if not _TAB.match(lines[i + 1]):
                    break
                i += 1
        out.append("{% endtabs %}")
        return i

    def _docusaurus_tabs(
        self, lines: list[str], i: int, depth: int, nest: int, out: list[str]
    ) -> int:
        """`<Tabs>` with `<TabItem label="...">` children as GitBook tabs: a tab's text on the
        lines between its tags, or on the tags' own line (`<TabItem label="A">Text</TabItem>`);
        a tag inside a tab's code block is its code."""
        opening, first = _opening_tag(lines, i)
        end = next((k for k in range(first, len(lines)) if _TABS_CLOSE.match(lines[k])), None)
        if opening is None or end is None:
            out.append(lines[i])
            return i + 1
        labels = _tab_labels(opening)
        out.append("{% tabs %}")
        body: list[str] | None = None
        fence: str | None = None  # inside a tab's code block: no tag there is one
        k = first
        while k < end:
            line = lines[k]
            k += 1
            if body is None and _TAB_ITEM_START.match(line):
                # An opening tag whole on its line keeps the text after it on that line; one
                # over several lines is joined.
                whole = _TAB_ITEM_OPENING.match(line)
                tag = line
                if whole is None:
                    joined, k = _opening_tag(lines, k - 1)
                    tag = joined or ""
                    whole = _TAB_ITEM_OPENING.match(tag)
                attrs = {
                    m.group(1): m.group(2) or m.group(3) or m.group(4) or ""
                    for m in _ATTR.finditer(tag)
                }
                value = attrs.get("value")
                # A tab's title is its label; older sites give the labels on <Tabs values>.
                title = attrs.get("label") or labels.get(value or "") or value or "Tab"
                out.append(f'{{% tab title="{title.replace(chr(34), "&quot;")}" %}}')
                body = []
                # Written on one line (`<TabItem label="A">Text</TabItem>`): its text follows.
                line = tag[whole.end() :] if whole is not None else ""
                if not line.strip():
                    continue
            if body is None:
                continue
            opened = _FENCE.match(line)
            if fence is not None:
                if opened is not None and opened.group(2).startswith(fence):
                    fence = None
                body.append(line)
            elif opened is not None:
                fence = opened.group(2)
                body.append(line)
            elif line.rstrip().endswith(_TAB_ITEM_END):
                last = line.rstrip().removesuffix(_TAB_ITEM_END)
                if last.strip():  # the tab's last text, before its close
                    body.append(last)
                out.extend(self._tab(body, depth, nest))
                body = None
            else:
                body.append(line)
        if body is not None:  # a tab left open: its text is kept, not lost
            out.extend(self._tab(body, depth, nest))
        out.append("{% endtabs %}")
        return end + 1

    def _tab(self, body: list[str], depth: int, nest: int) -> list[str]:
        text = textwrap.dedent("\n".join(body))
        return [*self._lines(text.split("\n"), depth, nest + 1), "{% endtab %}"]

    def _snippet(self, target: str, depth: int) -> list[str]:
        if depth >= MAX_INCLUDE_DEPTH:
            self.notes.approximated.append(
                f"snippet {target!r} left out: includes nest more than {MAX_INCLUDE_DEPTH} deep"
            )
            return []
        text = self.include(target)
        if text is not None:
            self.included += len(text)
            if self.included > MAX_INCLUDED_BYTES:
                self.notes.approximated.append(
                    f"snippet {target!r} left out: the page includes more than "
                    f"{MAX_INCLUDED_BYTES} characters"
                )
                return []
        if text is None:
            self.notes.unresolved.append(target)
            return []
        return self.run(text, depth + 1).split("\n")


# Docusaurus serves `static/` at the site's root: pages name its files as `/img/a.png`, as a
# path to the folder (`../static/img/a.png`, `@site/static/img/a.png`), or through JSX
# (`src={useBaseUrl('img/a.png')}`, `src={require('./a.png').default}`).
_STATIC_PATH = re.compile(r"""(?<=[("'=])(?:(?:\.\./)+|@site/)static/""")
_JSX_URL = re.compile(
    r"""\{\s*(useBaseUrl|require)\(\s*(['"])([^'"{}]+)\2\s*\)(?:\.default)?\s*\}"""
)


def _jsx_url(match: re.Match[str]) -> str:
    url = match.group(3)
    if match.group(1) == "useBaseUrl" and not re.match(r"^[a-z]+:|^/", url):
        url = "/" + url
    return '"' + html.escape(url) + '"'


def docusaurus_paths(text: str) -> str:
    """A Docusaurus page's paths to its site's static files, written as paths from the root
    (where the import puts `static/`), and JSX URLs as plain attributes."""
    if "{" in text:
        text = _JSX_URL.sub(_jsx_url, text)
    return _STATIC_PATH.sub("/", text) if "static/" in text else text


def convert(text: str, include: Callable[[str], str | None], notes: Notes) -> str:
    """`text` with the dialects above rewritten; `include(path)` reads a snippet, None when
    there is no such file."""
    converter = _Converter(include, notes)
    out = converter.run(text)
    if converter.autodoc:
        names = ", ".join(converter.autodoc[:3]) + (", ..." if len(converter.autodoc) > 3 else "")
        notes.approximated.append(
            f"{len(converter.autodoc)} API reference blocks (::: {names}) left out: "
            "mkdocstrings/mkautodoc generate them from code"
        )
    return out
