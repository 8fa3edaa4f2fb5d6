"""The reading renderer (document/html.py): table-driven cases and a property that no output can
run script, whatever the markdown."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.document.html import Heading, render


def _links(href: str) -> str | None:
    if href.startswith("/pages/"):
        page, _, anchor = href[len("/pages/") :].partition("#")
        return f"#page-{page}" + (f"-{anchor}" if anchor else "")
    return href


def _images(src: str) -> str | None:
    return "files/" + src[len("/files/") :] if src.startswith("/files/") else None


CASES: list[tuple[str, str, str]] = [
    ("paragraph", "Hello *you*", "<p>Hello <em>you</em></p>\n"),
    ("heading anchor", "## Getting started", '<h2 id="getting-started">Getting started</h2>\n'),
    (
        "repeated anchors",
        "# A\n# A",
        '<h1 id="a">A</h1>\n<h1 id="a-1">A</h1>\n',
    ),
    ("strike", "~~gone~~", "<p><s>gone</s></p>\n"),
    ("list", "1. one\n2. two", "<ol>\n<li>one</li>\n<li>two</li>\n</ol>\n"),
    ("ordered start", "3. three", '<ol start="3">\n<li>three</li>\n</ol>\n'),
    (
        "task list",
        "- [ ] todo\n- [x] done",
        '<ul>\n<li class="task"><span class="task-box">☐</span> todo</li>\n'
        '<li class="task"><span class="task-box">☑</span> done</li>\n</ul>\n',
    ),
    (
        "table",
        "| a | b |\n|---|--:|\n| 1 | 2 |",
        '<table>\n<thead>\n<tr>\n<th>a</th>\n<th style="text-align:right">b</th>\n</tr>\n'
        '</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td style="text-align:right">2</td>\n</tr>\n'
        "</tbody>\n</table>\n",
    ),
    (
        "highlighted code",
        "```python\nx = 1\n```",
        '<div class="code-block"><div class="code-bar"><span class="code-language">Python'
        '</span></div><pre class="highlight" data-language="python"><code>'
        '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>\n'
        "</code></pre></div>\n",
    ),
    (
        "unknown language",
        "```nolang\n<b>\n```",
        '<div class="code-block"><div class="code-bar"><span class="code-language">nolang'
        '</span></div><pre class="highlight" data-language="nolang"><code>&lt;b&gt;\n'
        "</code></pre></div>\n",
    ),
    (
        "indented code",
        "    a < b",
        '<div class="code-block"><pre class="highlight"><code>a &lt; b\n</code></pre></div>\n',
    ),
    (
        "page link",
        "[Next](/pages/abc#part)",
        '<p><a href="#page-abc-part">Next</a></p>\n',
    ),
    ("in-page link", "[Up](#top)", '<p><a href="#p-top">Up</a></p>\n'),
    ("external link", "<https://x.org>", '<p><a href="https://x.org">https://x.org</a></p>\n'),
    ("javascript link", "[x](javascript:alert(1))", "<p>x</p>\n"),
    ("obfuscated javascript", "[x](<java\tscript:alert(1)>)", "<p>x</p>\n"),
    ("data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", "<p>x</p>\n"),
    ("file image", "![Logo](/files/f1)", '<p><img src="files/f1" alt="Logo"></p>\n'),
    (
        "other image",
        "![Far](https://x.org/a.png)",
        '<p><span class="image-missing">Far</span></p>\n',
    ),
    (
        "data image",
        "![d](data:image/png;base64,AAAA)",
        '<p><span class="image-missing">d</span></p>\n',
    ),
    (
        "hint",
        '{% hint style="danger" %}\nStop **now**\n{% endhint %}',
        '<div class="hint hint-danger"><span class="hint-label">Danger</span>\n'
        "<p>Stop <strong>now</strong></p>\n</div>\n",
    ),
    (
        "hint with an unknown style",
        '{% hint style="x" onclick="y" %}\nA\n{% endhint %}',
        '<div class="hint hint-info"><span class="hint-label">Info</span>\n<p>A</p>\n</div>\n',
    ),
    (
        "tabs",
        '{% tabs %}\n{% tab title="Py" %}\nA\n{% endtab %}\n{% endtabs %}',
        '<div class="tabs">\n<div class="tab"><p class="tab-title">Py</p>\n<p>A</p>\n</div>\n'
        "</div>\n",
    ),
    (
        "unclosed block",
        "{% hint %}\nA",
        '<div class="hint hint-info"><span class="hint-label">Info</span>\n<p>A</p>\n</div>',
    ),
    ("stray end tag", "A\n{% endhint %}", "<p>A</p>\n"),
    (
        "code title",
        '{% code title="app.py" %}\n```\nx\n```\n{% endcode %}',
        '<div class="code"><p class="code-title">app.py</p>\n'
        '<div class="code-block"><pre class="highlight"><code>x\n</code></pre></div>\n</div>\n',
    ),
    (
        "embed",
        '{% embed url="https://youtu.be/x" %}',
        '<p class="gitbook-embed"><a href="https://youtu.be/x">https://youtu.be/x</a></p>\n',
    ),
    (
        "embed of a script URL",
        '{% embed url="javascript:alert(1)" %}',
        '<p class="gitbook-embed">javascript:alert(1)</p>\n',
    ),
    (
        "content ref",
        '{% content-ref url="b.md" %}\n[B](/pages/b)\n{% endcontent-ref %}',
        '<div class="content-ref">\n<p><a href="#page-b">B</a></p>\n</div>\n',
    ),
    (
        "expandable",
        "<details>\n<summary>More</summary>\n\nInside\n\n</details>",
        "<details>\n<summary>More</summary>\n<p>Inside</p>\n</details>",
    ),
    ("unknown gitbook tag stays text", "{% swagger %}", "<p>{% swagger %}</p>\n"),
    ("raw script", "<script>alert(1)</script>\n\nok", "\n<p>ok</p>\n"),
    ("raw attributes", 'a <b onclick="x()">b</b>', "<p>a <b>b</b></p>\n"),
    ("raw image", '<img src="x" onerror="alert(1)">', ""),
    ("raw link", '<a href="javascript:x">t</a>', "<p>t</p>\n"),
    ("raw style", "<style>*{}</style>", ""),
    ("unbalanced raw tags", "<div>\n\n*a*", "<div>\n<p><em>a</em></p>\n</div>"),
    ("comment", "<!-- secret -->", ""),
    ("entities", "&lt;script&gt;", "<p>&lt;script&gt;</p>\n"),
]


@pytest.mark.parametrize(
    ("markdown", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_render(markdown: str, expected: str) -> None:
    out = render(
        markdown, links=_links, images=_images, anchor_prefix="p-" if "#top" in markdown else ""
    )
    assert out.html == expected


def test_headings_are_listed_with_their_prefixed_anchors() -> None:
    out = render("# One\n\ntext\n\n## Two `code`\n\n> ### Quoted", anchor_prefix="x-")
    assert out.headings == (
        Heading(1, "x-one", "One"),
        Heading(2, "x-two-code", "Two code"),
        Heading(3, "x-quoted", "Quoted"),
    )


def test_defaults_keep_external_links_and_refuse_the_rest() -> None:
    out = render("[a](https://a.org) [b](/pages/x) ![c](https://a.org/c.png) ![d](/files/y)")
    assert out.html == (
        '<p><a href="https://a.org">a</a> b <img src="https://a.org/c.png" alt="c"> '
        '<span class="image-missing">d</span></p>\n'
    )


def test_a_resolver_cannot_reintroduce_a_script_url() -> None:
    out = render(
        "[a](/pages/x) ![b](/files/y)", links=lambda _: "javascript:x", images=lambda _: "data:x"
    )
    assert out.html == '<p>a <span class="image-missing">b</span></p>\n'


# -- no script, whatever the markdown -------------------------------------------------------------

_PIECES = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//x.js>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    "<svg onload=alert(1)>",
    "<iframe src=//x>",
    '<div style="background:url(javascript:x)">',
    "<style>@import 'x'</style>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](<java\nscript:x>)",
    "![x](javascript:alert(1))",
    "![x](data:image/svg+xml,<svg onload=alert(1)>)",
    "[x](data:text/html,<script>)",
    "<javascript:alert(1)>",
    '{% embed url="javascript:alert(1)" %}',
    "{% hint style=\"x' onmouseover='y\" %}",
    '{% tab title="<script>x</script>" %}',
    "```\n<script>x</script>\n```",
    "`<script>`",
    '" onmouseover="x',
    "<details open ontoggle=alert(1)>",
    "<<script>script>",
    "<scr<script>ipt>",
    "&#x3C;script&#x3E;",
    "{% endhint %}",
    "- [ ] ",
    "| a |\n|---|\n| <b onclick=x> |",
    "\n\n",
    "> ",
    "    ",
    "# ",
]


class _Inspector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "iframe", "svg", "object", "embed", "math", "base"):
            self.bad.append(tag)
        for name, value in attrs:
            if name.startswith("on") or name in ("srcdoc", "formaction"):
                self.bad.append(f"{tag} {name}")
            if name in ("href", "src") and value is not None:
                squeezed = "".join(c for c in value if c > " ").lower()
                if ":" in squeezed.split("/")[0] and not squeezed.startswith(
                    ("http:", "https:", "mailto:")
                ):
                    self.bad.append(f"{tag} {name}={value}")
            if name == "style" and value and ("url(" in value or "expression" in value):
                self.bad.append(f"{tag} style")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=20)), max_size=12))
def test_no_output_runs_script(pieces: list[str]) -> None:
    markdown = "".join(pieces)

    def anything(url: str) -> str | None:
        return url  # even a resolver that passes everything through

    out = render(markdown, links=anything, images=anything).html
    inspector = _Inspector()
    inspector.feed(out)
    inspector.close()
    assert inspector.bad == [], (markdown, out)


def test_output_is_deterministic_and_total() -> None:
    text: Any = "# A\n" + "[x](" * 2000 + "\n" + "> " * 200 + "deep"
    assert render(text).html == render(text).html
