"""Markdown helpers (docshelf.document.markdown): link spans and rewriting, GitBook documents and
search sections, as table cases with exact outputs and as properties over arbitrary text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it.common.utils import unescapeAll
from openapi_schema_validator import OAS30Validator

from docshelf.document import markdown as md
from docshelf.document.markdown import (
    Link,
    Section,
    iter_links,
    rewrite_links,
    split_sections,
    to_document,
)
from tests import gitbook_spec

# -- generated markdown ---------------------------------------------------------------------------

# Pieces that make the parser work: containers, code, link syntax half-finished, escapes, entities,
# every kind of line ending. Joined at random they reach the odd corners quicker than plain text.
_ATOMS = [
    *("[", "]", "(", ")", "<", ">", "!", "\\", "`", "```", "~~~", "*", "_", "~~", '"', "'", ":"),
    *("\n", "\r\n", "\r", " ", "\t", "    ", "> ", "- ", "1. ", "# ", "===", "---", "\0"),
    *("&amp;", "&", ";", "a", "é", "b.md", "http://x.y/", "me@x.y", "<div>", "[r]:", "[r]"),
    *("[a](b)", "![i](j.png)", "<https://u.v/w>", "[a](<c d> 't')", "x\\(y", "javascript:"),
]
markdown_text = st.one_of(
    st.lists(st.sampled_from(_ATOMS), max_size=40).map("".join),
    st.text(max_size=120),
)
_FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- iter_links ------------------------------------------------------------------------------------


def marked(text: str) -> tuple[str, list[tuple[int, int]]]:
    """`text` without its ⟦ ⟧ markers, and the spans they enclosed."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    start = 0
    for part in text.replace("⟧", "⟦").split("⟦"):
        if len(out) % 2:
            spans.append((start, length + len(part)))
        start = length = length + len(part)
        out.append(part)
    return "".join(out), spans


LINK_CASES = {
    "inline link, title, image": (
        '[a](⟦b.md⟧ "title") and ![alt](⟦img/x.png⟧)',
        [("b.md", False), ("img/x.png", True)],
    ),
    "angle brackets: the span is inside them": ("[a](<⟦my page.md⟧>)", [("my page.md", False)]),
    "escapes and entities are decoded": (r"[a](⟦a\(b&amp;c⟧)", [("a(b&c", False)]),
    "balanced parentheses": ("[a](⟦x(1).md⟧)", [("x(1).md", False)]),
    "url autolink, not e-mail": (
        "<⟦https://example.com/x⟧> <me@example.com>",
        [("https://example.com/x", False)],
    ),
    "code is not searched": (
        "```\n[a](b)\n```\n\n    [c](d)\n\n`[e](f)` [g](⟦h⟧) ``[i](j)``",
        [("h", False)],
    ),
    "reference definitions, flagged by what uses them": (
        '[x]: ⟦a.md⟧\n[Y]:\n  <⟦b c.png⟧> "t"\n[z]: ⟦z⟧\n\n[x] ![y] ![z][] [zz][z]',
        [("a.md", False), ("b c.png", True), ("z", False)],
    ),
    "inside containers": (
        "> quote [a](⟦b⟧)\n>\n> 1. item\n>    [c](\n>    ⟦d⟧)\n\n- x\n\n  ![i](⟦j⟧)",
        [("b", False), ("d", False), ("j", True)],
    ),
    "headings, ATX and setext": (
        "# T [a](⟦b⟧) #\n## #[c](⟦d⟧)\nS [e](⟦f⟧)\n---",
        [("b", False), ("d", False), ("f", False)],
    ),
    "image inside a link": ("[![i](⟦i.png⟧)](⟦page.md⟧)", [("i.png", True), ("page.md", False)]),
    "unsafe schemes are still links": (
        "[a](⟦javascript:void(0)⟧)",
        [("javascript:void(0)", False)],
    ),
    "a link in alt text is only text": ("![a [b](c)](⟦d⟧)", [("d", True)]),
    "not links": ("[a] (b) \\[c](d) [e]()\n\n<div>\n[h](i)\n</div>", []),
    "tab-indented lines are code": ("\t- [a](b)\n\n  \t[c](d)", []),
}


@pytest.mark.parametrize(("source", "expected"), LINK_CASES.values(), ids=LINK_CASES.keys())
def test_iter_links(source: str, expected: list[tuple[str, bool]]) -> None:
    text, spans = marked(source)
    assert iter_links(text) == [
        Link(start, end, target, image)
        for (start, end), (target, image) in zip(spans, expected, strict=True)
    ]


def test_iter_links_offsets_count_carriage_returns() -> None:
    source = "one\r\ntwo\r\n\r\n[a](b)\r\n\r\n[c]: d\r\n"
    assert iter_links(source) == [Link(16, 17, "b", False), Link(27, 28, "d", False)]


@_FAST
@given(markdown_text)
def test_links_are_ordered_disjoint_spans_of_their_targets(source: str) -> None:
    previous_end = 0
    for link in iter_links(source):
        assert previous_end <= link.start <= link.end <= len(source)
        previous_end = link.end
        raw = source[link.start : link.end].replace("\0", "\ufffd")
        # Autolinks take their source literally; everywhere else escapes and entities count.
        assert link.target in (raw, unescapeAll(raw))


# -- rewrite_links ---------------------------------------------------------------------------------

REWRITE_CASES = {
    "only what the resolver names": (
        "[a](b.md) [c](d.md) ![i](b.md)",
        {("b.md", False): "/p/b"},
        "[a](/p/b) [c](d.md) ![i](b.md)",
    ),
    "kept: title, spacing, the rest of the line": (
        "x [a](  b 'T'  ) y",
        {("b", False): "c"},
        "x [a](  c 'T'  ) y",
    ),
    "angle brackets added when needed": (
        "[a](b.md)",
        {("b.md", False): "my page.md"},
        "[a](<my page.md>)",
    ),
    "angle brackets kept, contents escaped": (
        "[a](<b c>)",
        {("b c", False): "d<e>"},
        r"[a](<d\<e\>>)",
    ),
    "unbalanced parentheses escaped": ("[a](b)", {("b", False): "c)"}, r"[a](c\))"),
    "backslashes and entity lookalikes escaped": (
        "[a](b)",
        {("b", False): "x\\y&amp;z&"},
        r"[a](x\\y\&amp;z&)",
    ),
    "line breaks percent-encoded": ("[a](b)", {("b", False): "c\nd"}, "[a](<c%0Ad>)"),
    "empty definitions need brackets": (
        "[r]: b 'T'\n\n[r]",
        {("b", False): ""},
        "[r]: <> 'T'\n\n[r]",
    ),
    "image definitions": ("[r]: b\n\n![r]", {("b", True): "c.png"}, "[r]: c.png\n\n![r]"),
    "autolink to another url": (
        "<https://a.b/c>",
        {("https://a.b/c", False): "https://d.e"},
        "<https://d.e>",
    ),
    "autolink to a relative path becomes a link": (
        "go <https://a.b/c_d>",
        {("https://a.b/c_d", False): "c.md"},
        r"go [https://a.b/c\_d](c.md)",
    ),
    "and not an image after a !": (
        "!<https://a.b>",
        {("https://a.b", False): "x"},
        r"\![https://a.b](x)",
    ),
    "nor a definition's destination after a label and colon": (
        "[r]:<https://a.b>[\n\n[q]:\n<https://a.b>[\n\n[p]: !<https://a.b>",
        {("https://a.b", False): ""},
        "[r]\\:[https://a.b](<>)[\n\n[q]\\:\n[https://a.b](<>)[\n\n[p]: !<https://a.b>",
    ),
    "a colon elsewhere is left alone": (
        "see:<https://a.b>",
        {("https://a.b", False): "x"},
        "see:[https://a.b](x)",
    ),
    "but an autolink in a link's text cannot be": (
        "[see <https://a.b>](c)",
        {("https://a.b", False): "x", ("c", False): "d"},
        "[see <https://a.b>](d)",
    ),
    "code untouched, line endings kept": (
        "`[a](b)`\r\n[a](b)\r\n",
        {("b", False): "c"},
        "`[a](b)`\r\n[a](c)\r\n",
    ),
}


@pytest.mark.parametrize(
    ("source", "mapping", "expected"), REWRITE_CASES.values(), ids=REWRITE_CASES.keys()
)
def test_rewrite_links(source: str, mapping: dict[tuple[str, bool], str], expected: str) -> None:
    assert rewrite_links(source, lambda target, image: mapping.get((target, image))) == expected


@_FAST
@given(markdown_text)
def test_rewrite_that_changes_nothing_is_byte_identical(source: str) -> None:
    assert rewrite_links(source, lambda target, image: None) == source
    assert rewrite_links(source, lambda target, image: target) == source


@_FAST
@given(markdown_text, st.sampled_from(["https://n.example/a(b", "my page (1).md", "", "a\\b&amp;"]))
def test_rewritten_links_read_back_as_written(source: str, new: str) -> None:
    before = iter_links(source)
    after = iter_links(rewrite_links(source, lambda target, image: new))
    assert [link.image for link in after] == [link.image for link in before]
    # The one link that is left alone: a relative path cannot replace an autolink that sits in
    # another link's source. Anything an autolink can hold always replaces it.
    for old, link in zip(before, after, strict=True):
        assert link.target == new or (link.target == old.target and ":" not in new)


# -- to_document -----------------------------------------------------------------------------------


def leaf(text: str, *marks: str) -> dict[str, Any]:
    return {"object": "leaf", "text": text, "marks": [{"object": "mark", "type": m} for m in marks]}


def text(*leaves: dict[str, Any]) -> dict[str, Any]:
    return {"object": "text", "leaves": list(leaves) or [leaf("")]}


def block(kind: str, *nodes: dict[str, Any], **data: Any) -> dict[str, Any]:
    return {"object": "block", "type": kind, "data": data, "nodes": list(nodes)}


def para(*nodes: dict[str, Any]) -> dict[str, Any]:
    return block("paragraph", *nodes)


def plain(s: str) -> dict[str, Any]:
    return para(text(leaf(s)))


def url(href: str) -> dict[str, Any]:
    return {"kind": "url", "url": href}


def link(href: str, *nodes: dict[str, Any]) -> dict[str, Any]:
    return {"object": "inline", "type": "link", "data": {"ref": url(href)}, "nodes": list(nodes)}


def inline_image(src: str, alt: str | None = None) -> dict[str, Any]:
    data = {"ref": url(src)} | ({"alt": alt} if alt else {})
    return {"object": "inline", "type": "inline-image", "isVoid": True, "data": data}


def image(src: str, alt: str | None = None) -> dict[str, Any]:
    data = {"ref": url(src)} | ({"alt": alt} if alt else {})
    return {"object": "block", "type": "image", "isVoid": True, "data": data, "fragments": []}


DIVIDER = {"object": "block", "type": "divider", "isVoid": True, "data": {}}

DOCUMENT_CASES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "empty": ("", []),
    "headings, deeper ones as heading-3": (
        "# One\n## Two\n### Three\n###### Six\nSetext\n===",
        [
            block("heading-1", text(leaf("One"))),
            block("heading-2", text(leaf("Two"))),
            block("heading-3", text(leaf("Three"))),
            block("heading-3", text(leaf("Six"))),
            block("heading-1", text(leaf("Setext"))),
        ],
    ),
    "marks, merged where alike; soft break a space, hard break a newline": (
        "a *i* **b _bi_** ~~s~~ `c` **x**__y__\nsoft  \nhard",
        [
            para(
                text(
                    leaf("a "),
                    leaf("i", "italic"),
                    leaf(" "),
                    leaf("b ", "bold"),
                    leaf("bi", "bold", "italic"),
                    leaf(" "),
                    leaf("s", "strikethrough"),
                    leaf(" "),
                    leaf("c", "code"),
                    leaf(" "),
                    leaf("xy", "bold"),
                    leaf(" soft\nhard"),
                )
            )
        ],
    ),
    "links, with text on each side": (
        "See [the **docs**](https://x.y/d) [b](c)",
        [
            para(
                text(leaf("See ")),
                link("https://x.y/d", text(leaf("the "), leaf("docs", "bold"))),
                text(leaf(" ")),
                link("c", text(leaf("b"))),
                text(),
            )
        ],
    ),
    "autolinks and unsafe links": (
        "<https://a.b> [x](javascript:alert(1))",
        [
            para(
                text(),
                link("https://a.b", text(leaf("https://a.b"))),
                text(leaf(" [x](javascript:alert(1))")),
            )
        ],
    ),
    "lists": (
        "- a\n- b\n\n  b2\n\n3. x\n   1. y\n-\n",
        [
            block(
                "list-unordered",
                block("list-item", plain("a")),
                block("list-item", plain("b"), plain("b2")),
            ),
            block(
                "list-ordered",
                block(
                    "list-item", plain("x"), block("list-ordered", block("list-item", plain("y")))
                ),
                start=3,
            ),
            block("list-unordered", block("list-item", para(text()))),
        ],
    ),
    "code: fenced with its syntax, indented without": (
        "```python title\nx = 1\n\n```\n\n    a\n     b\n",
        [
            block(
                "code",
                block("code-line", text(leaf("x = 1"))),
                block("code-line", text()),
                syntax="python",
            ),
            block(
                "code", block("code-line", text(leaf("a"))), block("code-line", text(leaf(" b")))
            ),
        ],
    ),
    "quotes hold no code blocks": (
        "> q\n> ```\n> c\n> d\n> ```\n> > deeper\n\n>\n",
        [
            block(
                "blockquote",
                plain("q"),
                para(text(leaf("c", "code"), leaf("\n"), leaf("d", "code"))),
                block("blockquote", plain("deeper")),
            ),
            block("blockquote", para(text())),
        ],
    ),
    "images: a block at the top level, inline elsewhere": (
        "![a](a.png) ![](b.png)\n\nx ![c](c.png)\n\n- ![d](d.png)\n\n[![e](e.png)](f)",
        [
            {
                "object": "block",
                "type": "images",
                "isVoid": False,
                "data": {},
                "nodes": [image("a.png", "a"), image("b.png")],
            },
            para(text(leaf("x ")), inline_image("c.png", "c"), text()),
            block(
                "list-unordered",
                block("list-item", para(text(), inline_image("d.png", "d"), text())),
            ),
            para(text(), link("f", text(), inline_image("e.png", "e"), text()), text()),
        ],
    ),
    "dividers and raw html": ("---\n<div>\nhi\n</div>", [DIVIDER, plain("<div>\nhi\n</div>")]),
}


@pytest.mark.parametrize(("markdown", "nodes"), DOCUMENT_CASES.values(), ids=DOCUMENT_CASES.keys())
def test_to_document(markdown: str, nodes: list[dict[str, Any]]) -> None:
    assert to_document(markdown) == {"object": "document", "data": {}, "nodes": nodes}


@pytest.fixture(scope="module")
def document_schema() -> OAS30Validator:
    spec = gitbook_spec.load(gitbook_spec.SCHEMA_VERSION)
    # Refs point at "#/components/..."; carrying the components in the root lets them resolve.
    return OAS30Validator(
        {"$ref": "#/components/schemas/JSONDocument", "components": spec["components"]}
    )


@pytest.mark.parametrize(
    "markdown", [md for md, _ in DOCUMENT_CASES.values()], ids=DOCUMENT_CASES.keys()
)
def test_documents_validate_against_gitbook(markdown: str, document_schema: OAS30Validator) -> None:
    document_schema.validate(to_document(markdown))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=markdown_text)
def test_any_text_makes_a_valid_document(source: str, document_schema: OAS30Validator) -> None:
    document_schema.validate(to_document(source))


# -- split_sections --------------------------------------------------------------------------------

SECTION_CASES = {
    "empty": ("", []),
    "no headings": ("Just *text*.\n\nMore.", [Section(None, None, "Just text.\nMore.")]),
    "text before the first heading, markup stripped": (
        "Intro [link](x) `code` ![alt](p.png) <b>html</b>\n# Title *one*\nBody\nline\n\n- a\n- b",
        [
            Section(None, None, "Intro link code alt html"),
            Section("title-one", "Title one", "Body line\na\nb"),
        ],
    ),
    "nothing before the first heading, empty sections kept": (
        "# A\n## B\ntext",
        [Section("a", "A", ""), Section("b", "B", "text")],
    ),
    "code and html bodies": (
        "# C\n```js\nlet x;\n```\n<div>\n<p>Hi</p>\n</div>",
        [Section("c", "C", "let x;\nHi")],
    ),
    "GitHub slugs, numbered when repeated": (
        "# Hello, World!\n# Hello World\n# hello-world-1\n# Ünïcode_and 😀 émoji\n# ?!\n# ...",
        [
            Section("hello-world", "Hello, World!", ""),
            Section("hello-world-1", "Hello World", ""),
            Section("hello-world-1-1", "hello-world-1", ""),
            Section("ünïcode_and--émoji", "Ünïcode_and 😀 émoji", ""),
            Section("", "?!", ""),
            Section("-1", "...", ""),
        ],
    ),
    "headings in quotes and lists are body text": (
        "# Top\n> # quoted\n- # listed",
        [Section("top", "Top", "quoted\nlisted")],
    ),
}


@pytest.mark.parametrize(("markdown", "expected"), SECTION_CASES.values(), ids=SECTION_CASES.keys())
def test_split_sections(markdown: str, expected: list[Section]) -> None:
    assert split_sections(markdown) == expected


@_FAST
@given(markdown_text)
def test_sections_have_distinct_anchors(source: str) -> None:
    sections = split_sections(source)
    anchors = [s.anchor for s in sections if s.anchor is not None]
    assert len(anchors) == len(set(anchors))
    assert all(s.title is not None for s in sections[1:])


# -- pathological input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "*" * 3000 + "x" + "*" * 3000,
        "[" * 1000 + "](x)" * 50,
        "![" * 500 + "](x)" * 500,
        "> " * 500 + "[a](b)",
        "".join("  " * i + "- [x](y)\n" for i in range(200)),
        "`" * 3000,
    ],
    ids=["emphasis", "brackets", "images", "quotes", "lists", "backticks"],
)
def test_deep_nesting_does_not_raise(source: str) -> None:
    links = iter_links(source)
    assert rewrite_links(source, lambda target, image: target + "1").count("1") >= len(links)
    to_document(source)
    split_sections(source)


def test_a_large_documents_answer_is_kept_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The document of a page near the size limit is 8 MB of JSON; decoding it to key its
    blocks and encoding it again held the event loop ~0.5 s a read. It is kept encoded, keyed,
    from the parse (a worker's, for such a text), and sent as it is."""
    import types

    import orjson

    from docshelf.document import blocks

    text = "".join(
        f"## Part {i}\n\nSome *text* with a [link](https://example.com/{i}).\n\n"
        for i in range(12_000)
    )
    md.adopt(text, md.prepare(text))
    expected = blocks.keyed(md.to_document(text))
    real = md.orjson

    def no_loads(data: bytes) -> object:
        raise AssertionError("a large document was decoded on the serving path")

    monkeypatch.setattr(md, "orjson", types.SimpleNamespace(loads=no_loads, Fragment=real.Fragment))
    answered = md.answered_document(text)
    monkeypatch.setattr(md, "orjson", real)
    assert isinstance(answered, orjson.Fragment)
    assert orjson.loads(orjson.dumps({"document": answered}))["document"] == expected
    # A small document is kept as it is answered too.
    small = "# Title\n\nText.\n"
    kept = md.answered_document(small)
    assert isinstance(kept, orjson.Fragment)
    assert orjson.loads(orjson.dumps({"document": kept}))["document"] == blocks.keyed(
        md.to_document(small)
    )
