"""GitBook's JSONDocument to and from stored markdown (document/model.py): the mapping, its
round trips as properties, validation, and the HTTP writes and reads that use it."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_schema_validator import OAS31Validator
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.document import blocks
from docshelf.document.model import (
    MAX_DOCUMENT_DEPTH,
    document_to_markdown,
    markdown_to_document,
    validate_document,
)
from docshelf.kit.errors import BadRequest
from tests import gitbook_spec
from tests.helpers import error
from tests.test_content import created_ids, new_cr, setup, write

JSON = dict[str, Any]

# -- builders --------------------------------------------------------------------------------------


def keyed(document: JSON) -> JSON:
    """A document as page reads show it: top-level blocks carry their keys."""
    return blocks.keyed(copy.deepcopy(document))


def leaf(text: str, *marks: str) -> JSON:
    return {"object": "leaf", "text": text, "marks": [{"object": "mark", "type": m} for m in marks]}


def text(*leaves: JSON) -> JSON:
    return {"object": "text", "leaves": list(leaves) or [leaf("")]}


def block(kind: str, *nodes: JSON, **data: Any) -> JSON:
    return {"object": "block", "type": kind, "data": data, "nodes": list(nodes)}


def void(kind: str, **data: Any) -> JSON:
    return {"object": "block", "type": kind, "isVoid": True, "data": data}


def para(*nodes: JSON) -> JSON:
    return block("paragraph", *nodes)


def plain(s: str) -> JSON:
    return para(text(leaf(s)))


def doc(*nodes: JSON) -> JSON:
    return {"object": "document", "data": {}, "nodes": list(nodes)}


def url(u: str) -> JSON:
    return {"kind": "url", "url": u}


EVERY_KIND = doc(
    block("heading-1", text(leaf("Title"))),
    block("heading-2", text(leaf("Sub"))),
    block("heading-3", text(leaf("Third"))),
    block("heading-2", text(leaf("Anchored")), id="custom-anchor"),
    para(
        text(leaf("a "), leaf("bold", "bold"), leaf(" "), leaf("it", "italic"), leaf(" ")),
        {
            "object": "inline",
            "type": "link",
            "data": {"ref": {"kind": "page", "page": "p1"}},
            "nodes": [text(leaf("page"))],
        },
        text(leaf(" "), leaf("x", "code"), leaf(" "), leaf("K", "keyboard"), leaf(" and ")),
        {"object": "inline", "type": "inline-math", "isVoid": True, "data": {"formula": "x^2"}},
        text(
            leaf(" "),
            leaf("gone", "strikethrough"),
            leaf(" "),
            leaf("up", "superscript"),
            leaf(" "),
        ),
        {
            "object": "inline",
            "type": "link",
            "data": {"ref": {"kind": "anchor", "page": "p1", "anchor": "part"}},
            "nodes": [text(leaf("anchor"))],
        },
        text(leaf(" "), leaf("down", "subscript")),
    ),
    block("hint", plain("Careful."), style="warning"),
    block("blockquote", plain("Quoted"), block("blockquote", plain("deeper"))),
    block("list-unordered", block("list-item", plain("one")), block("list-item", plain("two"))),
    block("list-ordered", block("list-item", plain("first")), start=3),
    block(
        "list-tasks",
        block("list-item", plain("todo"), checked=False),
        block("list-item", plain("done"), checked=True),
    ),
    void("divider"),
    block(
        "code",
        block("code-line", text(leaf("x = 1"))),
        block("code-line", text(leaf("```"))),
        syntax="python",
        title="main.py",
    ),
    void("math", formula="E = mc^2"),
    void("embed", url="https://example.com/video"),
    void("file", ref={"kind": "file", "file": "f1"}),
    void("reusable-content", ref={"kind": "reusable-content", "reusableContent": "rc1"}),
    {
        "object": "block",
        "type": "images",
        "isVoid": False,
        "data": {},
        "nodes": [
            {
                "object": "block",
                "type": "image",
                "isVoid": True,
                "data": {"ref": url("https://example.com/a.png"), "alt": "A"},
                "fragments": [],
            },
            {
                "object": "block",
                "type": "image",
                "isVoid": True,
                "data": {"ref": url("https://example.com/b.png"), "alt": "B"},
                # A caption (an imported <figure>'s <figcaption>) is the image's title.
                "fragments": [
                    {"object": "fragment", "fragment": "caption", "nodes": [plain('The "B"')]}
                ],
            },
        ],
    },
    block(
        "tabs",
        block("tabs-item", plain("One"), title="First"),
        block("tabs-item", block("code", block("code-line", text(leaf("y")))), title="Second"),
    ),
    {
        "object": "block",
        "type": "expandable",
        "isVoid": True,
        "data": {"defaultExpanded": True},
        "fragments": [
            {
                "object": "fragment",
                "fragment": "expandable-title",
                "type": "expandable-title",
                "nodes": [para(text(leaf("More")))],
            },
            {
                "object": "fragment",
                "fragment": "expandable-body",
                "type": "expandable-body",
                "nodes": [plain("Hidden")],
            },
        ],
    },
    {
        "object": "block",
        "type": "table",
        "isVoid": True,
        "data": {
            "view": {"type": "grid", "columns": ["c0", "c1"], "hideHeader": False},
            "records": {
                "r0": {"orderIndex": "a000000", "values": {"c0": "r0-c0", "c1": "r0-c1"}},
            },
            "definition": {
                "c0": {"id": "c0", "title": "Name", "type": "text", "textAlignment": "left"},
                "c1": {"id": "c1", "title": "Size", "type": "text", "textAlignment": "right"},
            },
        },
        "fragments": [
            {"object": "fragment", "fragment": "r0-c0", "nodes": [plain("a | b")]},
            {"object": "fragment", "fragment": "r0-c1", "nodes": [para(text(leaf("2", "bold")))]},
        ],
    },
)

EVERY_KIND_MARKDOWN = """\
# Title

## Sub

### Third

## Anchored <a href="#custom-anchor" id="custom-anchor"></a>

a **bold** _it_ [page](/pages/p1) `x` <kbd>K</kbd> and $$x^2$$ ~~gone~~ <sup>up</sup> \
[anchor](/pages/p1#part) <sub>down</sub>

{% hint style="warning" %}

Careful.

{% endhint %}

> Quoted
>
> > deeper

- one
- two

3. first

- [ ] todo
- [x] done

---

{% code title="main.py" %}

````python
x = 1
```
````

{% endcode %}

$$
E = mc^2
$$

{% embed url="https://example.com/video" %}

{% file src="/files/f1" %}

{% include "rc1" %}

![A](https://example.com/a.png)
![B](https://example.com/b.png "The \\"B\\"")

{% tabs %}
{% tab title="First" %}

One

{% endtab %}
{% tab title="Second" %}

```
y
```

{% endtab %}
{% endtabs %}

<details open>

<summary>More</summary>

Hidden

</details>

| Name | Size |
| --- | --: |
| a \\| b | **2** |
"""


def test_every_kind_has_its_markdown() -> None:
    assert document_to_markdown(EVERY_KIND) == EVERY_KIND_MARKDOWN
    assert markdown_to_document(EVERY_KIND_MARKDOWN) == EVERY_KIND


@pytest.fixture(scope="module")
def document_schema() -> OAS31Validator:
    spec = gitbook_spec.load("0.202.0")
    return OAS31Validator(
        {**spec["components"]["schemas"]["JSONDocument"], "components": spec["components"]}
    )


def test_documents_validate_against_gitbook(document_schema: OAS31Validator) -> None:
    errors = [e.message for e in document_schema.iter_errors(EVERY_KIND)]
    assert errors == []
    flattened = markdown_to_document("> ```\n> code in a quote\n> ```\n\n- ![i](i.png)\n")
    assert [e.message for e in document_schema.iter_errors(flattened)] == []


# -- properties ------------------------------------------------------------------------------------

WORD = st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)
INNER = st.from_regex(r"[a-z0-9 *_\[\]<>#!~|$&{}().:\\`+=-]{0,8}", fullmatch=True)
SIMPLE_MARKS = ("bold", "italic", "strikethrough", "keyboard", "superscript", "subscript")


@st.composite
def words(draw: st.DrawFn) -> str:
    """Text that starts and ends with a letter or digit (CommonMark only closes delimiters
    next to such characters in every context)."""
    first = draw(WORD)
    if draw(st.booleans()):
        return first
    return first + draw(INNER) + draw(WORD)


@st.composite
def text_node(draw: st.DrawFn, code: bool = True) -> JSON:
    n = draw(st.integers(1, 3))
    leaves = []
    previous: tuple[str, ...] | None = None
    for _ in range(n):
        marks = tuple(m for m in SIMPLE_MARKS if draw(st.booleans()) and draw(st.booleans()))
        if code and draw(st.integers(0, 4)) == 0:
            marks = (*marks, "code")
        if marks == previous:
            marks = ()
            if previous == ():
                continue
        if leaves:
            # Marked runs meet at a space, as typed text does.
            if previous == ():
                leaves[-1]["text"] += " "
            else:
                leaves.append(leaf(" "))
            previous = ()
            if marks == ():
                leaves[-1]["text"] += draw(words())
                continue
        leaves.append(leaf(draw(words()), *marks))
        previous = marks
    return text(*leaves)


REFS = st.sampled_from(
    [
        url("https://example.com/a?b=c"),
        url("https://example.com/(x)"),
        {"kind": "page", "page": "abc123"},
        {"kind": "anchor", "page": "abc123", "anchor": "part-2"},
        {"kind": "anchor", "anchor": "here"},
        {"kind": "file", "file": "f9"},
    ]
)


@st.composite
def inline_nodes(draw: st.DrawFn, code: bool = True, inlines: bool = True) -> list[JSON]:
    nodes = [draw(text_node(code))]
    if not inlines:
        return nodes
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["link", "inline-math", "inline-image"]))
        if kind == "link":
            node = {
                "object": "inline",
                "type": "link",
                "data": {"ref": draw(REFS)},
                "nodes": [text(leaf(draw(words())))],
            }
        elif kind == "inline-math":
            formula = draw(st.from_regex(r"[a-z0-9^+= ]{1,8}", fullmatch=True))
            node = {"object": "inline", "type": "inline-math", "isVoid": True}
            node["data"] = {"formula": formula}
        else:
            node = {"object": "inline", "type": "inline-image", "isVoid": True}
            node["data"] = {"ref": url("https://example.com/i.png"), "alt": draw(words())}
        trailing = text(leaf(" " + draw(words())))
        nodes.extend([node, trailing])
    return nodes


def paragraph(code: bool = True) -> st.SearchStrategy[JSON]:
    return inline_nodes(code).map(lambda nodes: para(*nodes))


HEADINGS = st.builds(
    lambda level, nodes: block(f"heading-{level}", *nodes),
    st.integers(1, 3),
    inline_nodes(),
)
LEAVES: dict[str, st.SearchStrategy[JSON]] = {
    "paragraph": paragraph(),
    "heading": HEADINGS,
    "divider": st.just(void("divider")),
    "code": st.builds(
        lambda lines, syntax, title: block(
            "code",
            *[block("code-line", text(leaf(line))) for line in lines],
            **({"syntax": syntax} if syntax else {}),
            **({"title": title} if title else {}),
        ),
        st.lists(st.from_regex(r"[a-z0-9 `{}%$<>-]{0,10}", fullmatch=True), min_size=1, max_size=3),
        st.sampled_from(["", "python", "js"]),
        st.sampled_from(["", "main.py"]),
    ),
    "math": st.builds(
        lambda f: void("math", formula=f), st.from_regex(r"[a-z0-9^+= \\]{1,12}", fullmatch=True)
    ),
    "embed": st.builds(lambda u: void("embed", url=u), st.sampled_from(["https://x.y/v?a=1"])),
    "file": st.just(void("file", ref={"kind": "file", "file": "f1"})),
    "reusable-content": st.builds(
        lambda r: void("reusable-content", ref={"kind": "reusable-content", "reusableContent": r}),
        st.sampled_from(["rc1", "a-B_9"]),
    ),
    "images": st.builds(
        lambda alts: {
            "object": "block",
            "type": "images",
            "isVoid": False,
            "data": {},
            "nodes": [
                {
                    "object": "block",
                    "type": "image",
                    "isVoid": True,
                    "data": {"ref": url(f"https://example.com/{n}.png")}
                    | ({"alt": alt} if alt else {}),
                    "fragments": [],
                }
                for n, alt in enumerate(alts)
            ],
        },
        st.lists(st.sampled_from(["", "alt text"]), min_size=1, max_size=2),
    ),
    "table": st.builds(
        lambda titles, rows: {
            "object": "block",
            "type": "table",
            "isVoid": True,
            "data": {
                "view": {
                    "type": "grid",
                    "columns": [f"c{n}" for n in range(len(titles))],
                    "hideHeader": False,
                },
                "records": {
                    f"r{r}": {
                        "orderIndex": f"a{r:06d}",
                        "values": {f"c{n}": f"r{r}-c{n}" for n in range(len(titles))},
                    }
                    for r in range(len(rows))
                },
                "definition": {
                    f"c{n}": {
                        "id": f"c{n}",
                        "title": t,
                        "type": "text",
                        "textAlignment": ("left", "center", "right")[n % 3],
                    }
                    for n, t in enumerate(titles)
                },
            },
            "fragments": [
                {"object": "fragment", "fragment": f"r{r}-c{n}", "nodes": [cells[n]]}
                for r, cells in enumerate(rows)
                for n in range(len(titles))
            ],
        },
        st.lists(st.sampled_from(["A", "b c", "x|y"]), min_size=1, max_size=3),
        st.lists(st.lists(paragraph(code=False), min_size=3, max_size=3), max_size=2),
    ),
}


def blocks_for(where: str, depth: int) -> st.SearchStrategy[list[JSON]]:
    from docshelf.document.model import ALLOWED

    allowed = ALLOWED[where]
    options = [
        s
        for kind, s in LEAVES.items()
        if kind in allowed or (kind == "heading" and "heading-1" in allowed)
    ]
    if depth < 3:
        children = st.deferred(lambda: blocks_for("item", depth + 1))
        for list_kind in ("list-unordered", "list-ordered", "list-tasks"):
            options.append(list_strategy(list_kind, depth))
        if "blockquote" in allowed:
            options.append(
                st.deferred(lambda: blocks_for("quote", depth + 1)).map(
                    lambda nodes: block("blockquote", *nodes)
                )
            )
        if "hint" in allowed:
            options.append(
                st.builds(
                    lambda style, nodes: block("hint", *nodes, style=style),
                    st.sampled_from(["info", "warning", "danger", "success"]),
                    st.deferred(lambda: blocks_for("hint", depth + 1)),
                )
            )
        if "tabs" in allowed:
            options.append(
                st.lists(
                    st.builds(
                        lambda title, nodes: block("tabs-item", *nodes, title=title),
                        st.sampled_from(["A", "Tab two", ""]),
                        st.deferred(lambda: blocks_for("tab", depth + 1)),
                    ),
                    min_size=1,
                    max_size=2,
                ).map(lambda tabs: block("tabs", *tabs))
            )
        if "expandable" in allowed:
            options.append(
                st.builds(
                    expandable,
                    inline_nodes(),
                    st.deferred(lambda: blocks_for("body", depth + 1)),
                    st.booleans(),
                )
            )
        del children
    return st.lists(st.one_of(options), min_size=1, max_size=3)


def expandable(title: list[JSON], body: list[JSON], expanded: bool) -> JSON:
    return {
        "object": "block",
        "type": "expandable",
        "isVoid": True,
        "data": {"defaultExpanded": True} if expanded else {},
        "fragments": [
            {
                "object": "fragment",
                "fragment": "expandable-title",
                "type": "expandable-title",
                "nodes": [para(*title)],
            },
            {
                "object": "fragment",
                "fragment": "expandable-body",
                "type": "expandable-body",
                "nodes": body,
            },
        ],
    }


def list_strategy(kind: str, depth: int) -> st.SearchStrategy[JSON]:
    def item(first: JSON, rest: list[JSON], checked: bool) -> JSON:
        data = {"checked": checked} if kind == "list-tasks" else {}
        return block("list-item", first, *rest, **data)

    items = st.lists(
        st.builds(
            item,
            paragraph(),
            st.deferred(lambda: blocks_for("item", depth + 1)) | st.just([]),
            st.booleans(),
        ),
        min_size=1,
        max_size=3,
    )
    starts = (
        st.sampled_from([{}, {"start": 0}, {"start": 7}]) if kind == "list-ordered" else st.just({})
    )
    return st.builds(lambda nodes, data: block(kind, *nodes, **data), items, starts)


DOCUMENTS = blocks_for("top", 0).map(lambda nodes: doc(*nodes))
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))


@PROPERTY
@given(DOCUMENTS)
def test_document_markdown_document_is_the_same(document: JSON) -> None:
    markdown = document_to_markdown(document)
    assert markdown_to_document(markdown) == document, markdown


MARKDOWN_PIECES = st.sampled_from(
    [
        "# h\n",
        "text *em* **strong** `code` ~~s~~\n",
        "- a\n- b\n",
        "1. x\n",
        "> q\n",
        "```py\ncode\n```\n",
        "---\n",
        "![a](i.png)\n",
        "[l](/pages/p1)\n",
        "| a |\n|---|\n| 1 |\n",
        "| a<br>b | <strong>c</strong> |\n|---|---|\n| 1 | 2 |\n",
        'x <a href="https://e.org">e</a><br><em>i</em> <img src="i.png" alt="I"><!-- c -->\n',
        '## h <a href="#h" id="h"></a>\n',
        "<!-- hidden -->\n",
        '{% hint style="info" %}\n',
        "{% endhint %}\n",
        "{% tabs %}\n",
        '{% tab title="t" %}\n',
        "{% endtab %}\n",
        "{% endtabs %}\n",
        "<details>\n",
        "<summary>s</summary>\n",
        "</details>\n",
        "$$\n",
        "x^2\n",
        '{% embed url="https://e.x" %}\n',
        "\n",
        "  ",
        "- [ ] t\n",
        "<kbd>k</kbd>\n",
        "a\\\nb\n",
        "$$f$$ x\n",
        "<!-- -->\n",
        '{% code title="x" %}\n',
        "{% endcode %}\n",
        '{% file src="/files/abc" %}\n',
        '{% include "rc1" %}\n',
        '{% include "../.gitbook/includes/x.md" %}\n',
        "  - nested\n",
        "> - q\n",
        "[x]: /y\n",
        "***b*** _a_b_\n",
        "* * *\n",
        "1) y\n",
        "    indented\n",
    ]
)


@PROPERTY
@given(st.lists(MARKDOWN_PIECES, max_size=12).map("".join))
def test_markdown_document_markdown_is_stable(markdown: str) -> None:
    once = document_to_markdown(markdown_to_document(markdown))
    assert markdown_to_document(once) == markdown_to_document(markdown), once
    assert document_to_markdown(markdown_to_document(once)) == once


def test_inline_html_is_read_as_what_it_means_and_never_shown() -> None:
    # Imported pages (and GitBook's own markdown) carry HTML: what has a meaning in the
    # document model becomes it, the rest keeps its text, and no markup is left as text.
    markdown = (
        '## Team <a href="#team" id="team"></a>\n\n'
        "<!-- a comment\nover lines -->\n\n"
        'a<br>b <strong>bold</strong> <b>b</b> <em>it</em> <code>c</code> <a id="x"></a>'
        '<a href="https://e.org" onclick="steal()">e</a> <a href="javascript:steal()">j</a> '
        '<span class="x">s</span><!-- inline --> <img src="i.png" alt="I" onerror="steal()">\n'
    )
    link = {
        "object": "inline",
        "type": "link",
        "data": {"ref": url("https://e.org")},
        "nodes": [text(leaf("e"))],
    }
    image = {
        "object": "inline",
        "type": "inline-image",
        "isVoid": True,
        "data": {"ref": url("i.png"), "alt": "I"},
    }
    assert markdown_to_document(markdown) == doc(
        block("heading-2", text(leaf("Team")), id="team"),
        para(
            text(
                leaf("a\nb "),
                leaf("bold", "bold"),
                leaf(" "),
                leaf("b", "bold"),
                leaf(" "),
                leaf("it", "italic"),
                leaf(" "),
                leaf("c", "code"),
                leaf(" "),
            ),
            link,
            text(leaf(" j s ")),
            image,
            text(),
        ),
    )
    again = document_to_markdown(markdown_to_document(markdown))
    assert again.startswith('## Team <a href="#team" id="team"></a>\n'), again


def test_deep_documents_convert() -> None:
    # Both writers keep one list of lines per container and join once; depth is bounded by
    # validation, so a document at the bound converts both ways.
    nested = plain("leaf")
    for _ in range(MAX_DOCUMENT_DEPTH // 2 - 1):
        nested = block("list-unordered", block("list-item", nested))
    assert markdown_to_document(document_to_markdown(doc(nested)))["nodes"]


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"nodes": []}, "document.object: must be 'document'"),
        (
            doc(block("columns")),
            "document.nodes[0].type: unknown or unsupported block type 'columns'",
        ),
        (
            doc(block("blockquote", block("code"))),
            "document.nodes[0].nodes[0].type: a 'code' block cannot be placed here",
        ),
        (
            doc(para(text(leaf("x", "glow")))),
            "document.nodes[0].nodes[0].leaves[0].marks[0].type: "
            "unknown or unsupported mark type 'glow'",
        ),
        (
            doc(para({"object": "inline", "type": "mention", "data": {}})),
            "document.nodes[0].nodes[0].type: unknown or unsupported inline type 'mention'",
        ),
        (
            doc(block("hint", plain("x"), style="loud")),
            "document.nodes[0].data.style: must be one of info, warning, danger, success",
        ),
        (
            doc(para({"object": "inline", "type": "link", "data": {"ref": {"kind": "user"}}})),
            "document.nodes[0].nodes[0].data.ref.kind: reference kind 'user' is not supported "
            "here (supported: url, page, anchor, file)",
        ),
    ],
)
def test_validation_names_the_place(document: JSON, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        validate_document(document)
    assert caught.value.message == f"Invalid document: {message}"


def test_too_deep_and_too_large_documents_are_refused() -> None:
    nested = plain("leaf")
    for _ in range(MAX_DOCUMENT_DEPTH):
        nested = block("blockquote", nested)
    with pytest.raises(BadRequest, match="blocks nest at most"):
        validate_document(doc(nested))
    with pytest.raises(BadRequest, match="a document holds at most"):
        validate_document(doc(para(text(*[leaf("x")] * 200_001))))


# -- over HTTP -------------------------------------------------------------------------------------


async def test_document_bodies_write_and_reads_default_to_documents(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, _admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    body = doc(
        block("heading-1", text(leaf("Hello"))),
        block("hint", plain("Be kind."), style="success"),
    )
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "insert_page", "title": "Doc", "ref": "d", "document": {"document": body}},
        compat="false",
    )
    ids = await created_ids(r)
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    for url_ in (f"{base}/page/{ids['d']}", f"{base}/path/doc"):
        got = (await client.get(url_, headers=reader.headers)).json()
        assert got["document"] == keyed(body) and "markdown" not in got
    got = (await client.get(f"{base}/path/doc?format=markdown", headers=reader.headers)).json()
    assert got["markdown"] == '# Hello\n\n{% hint style="success" %}\n\nBe kind.\n\n{% endhint %}\n'

    # update_page takes a document too; a refused one changes nothing.
    before = (await client.get(f"{base}/page/{ids['d']}", headers=reader.headers)).json()
    bad = doc(block("drawing"))
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "update_page", "page": ids["d"], "document": {"document": bad}},
    )
    assert r.json() == error(
        400,
        "changes[0].document: Invalid document: document.nodes[0].type: "
        "unknown or unsupported block type 'drawing'",
    )
    assert (await client.get(f"{base}/page/{ids['d']}", headers=reader.headers)).json() == before
    both = {"document": body, "markdown": "x"}
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "update_page", "page": ids["d"], "document": both},
    )
    assert r.json() == error(400, "changes[0].document: give markdown or document, not both")
    new = doc(plain("Rewritten"))
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "update_page", "page": ids["d"], "document": {"document": new}},
    )
    assert r.status_code == 200, r.text
    got = (await client.get(f"{base}/page/{ids['d']}", headers=reader.headers)).json()
    assert got["document"] == keyed(new)


async def test_large_documents_convert_in_the_worker(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, _admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)
    body = doc(*[plain(f"Paragraph number {n}.") for n in range(400)])
    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        {"operation": "insert_page", "title": "Big", "ref": "b", "document": {"document": body}},
        compat="false",
    )
    ids = await created_ids(r)
    base = f"/v1/spaces/{sid}/change-requests/{cr['id']}/content"
    got = (await client.get(f"{base}/page/{ids['b']}", headers=reader.headers)).json()
    assert got["document"] == keyed(body)


async def test_every_documented_page_link_form_resolves(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    space, _admin, editor, _reviewer, reader = await setup(client, db)
    sid = space["id"]
    cr = await new_cr(client, sid, editor)

    def page(ref: str, markdown: str = "", **fields: Any) -> JSON:
        body = {"markdown": markdown}
        return {"operation": "insert_page", "ref": ref, "document": body} | fields

    r = await write(
        client,
        sid,
        cr["id"],
        editor,
        page("guide", title="Guide"),
        page("install", title="Install", into="guide"),
        compat="false",
    )
    ids = await created_ids(r)
    links = (
        "[slug](/pages/guide) [slug md](/pages/guide/install.md) [id](/pages/{g}) "
        "[id md](/pages/{g}.md#top) [slug path](guide/install) [md](guide/install.md) "
        "[missing](/pages/nope)"
    ).format(g=ids["guide"])
    r = await write(
        client, sid, cr["id"], editor, page("links", links, title="Links"), compat="false"
    )
    ids |= await created_ids(r)
    got = await client.get(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/content/page/{ids['links']}",
        params={"format": "markdown", "format.markdown.refs": "stable"},
        headers=reader.headers,
    )
    g, i = ids["guide"], ids["install"]
    assert got.json()["markdown"] == (
        f"[slug](/pages/{g}) [slug md](/pages/{i}) [id](/pages/{g}) "
        f"[id md](/pages/{g}#top) [slug path](/pages/{i}) [md](/pages/{i}) "
        "[missing](/pages/nope)"
    )
    document = (
        await client.get(
            f"/v1/spaces/{sid}/change-requests/{cr['id']}/content/page/{ids['links']}",
            headers=reader.headers,
        )
    ).json()["document"]
    refs = [n["data"]["ref"] for n in document["nodes"][0]["nodes"] if n["object"] == "inline"]
    assert refs[:4] == [
        {"kind": "page", "page": g},
        {"kind": "page", "page": i},
        {"kind": "page", "page": g},
        {"kind": "anchor", "page": g, "anchor": "top"},
    ]


@PROPERTY
@given(
    st.text(
        alphabet=st.sampled_from(list('ab1 \n\t#*_-+>|`~$[](){}%<>!\\/:.="'))
        | st.characters(blacklist_categories=("Cs",)),
        max_size=200,
    )
)
def test_any_markdown_gives_a_valid_document(markdown: str) -> None:
    document = markdown_to_document(markdown)
    validate_document(document)  # what reads serve, a write would take back
    again = markdown_to_document(document_to_markdown(document))
    validate_document(again)
