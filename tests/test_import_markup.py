"""Alerts, comments and HTML in imported pages rewritten into the markdown Docshelf stores
(imports.markup): whole outputs for each construct, and what is reported."""

from __future__ import annotations

import time

import pytest

from docshelf.document.model import markdown_to_document
from docshelf.imports.dialects import Notes
from docshelf.imports.markup import clean


def run(text: str) -> tuple[str, Notes]:
    notes = Notes()
    return clean(text, notes), notes


CASES = {
    "GitHub alerts are hints": (
        "> [!NOTE]\n> Noted *here*.\n\n> [!TIP]\n> Tipped.\n\n> [!important]\n> Key.\n\n"
        "> [!WARNING]\n> Careful.\n\n> [!CAUTION]\n> Danger.\n\n> [!NOTE] not alone\n",
        '{% hint style="info" %}\nNoted *here*.\n{% endhint %}\n\n'
        '{% hint style="success" %}\nTipped.\n{% endhint %}\n\n'
        '{% hint style="success" %}\nKey.\n{% endhint %}\n\n'
        '{% hint style="warning" %}\nCareful.\n{% endhint %}\n\n'
        '{% hint style="danger" %}\nDanger.\n{% endhint %}\n\n'
        "> [!NOTE] not alone\n",
    ),
    "an alert in a list item keeps its indent": (
        "- item\n\n  > [!NOTE]\n  > Inside.\n",
        '- item\n\n  {% hint style="info" %}\n  Inside.\n  {% endhint %}\n',
    ),
    "comments are dropped, code is not": (
        "A <!-- inline --> b.\n\n<!--\nblock\n-->\n\n`<!-- span -->`\n\n"
        "```html\n<!-- fenced -->\n```\n",
        "A  b.\n\n\n`<!-- span -->`\n\n```html\n<!-- fenced -->\n```\n",
    ),
    "inline links and images become markdown, anchors stay": (
        'See <a href="other.md">other</a>, <img src="img/a.png" alt="A [x]"> and '
        '<a href="javascript:alert(1)">bad</a>.\n\n## T <a href="#t" id="t"></a>\n',
        'See [other](other.md), ![A x](img/a.png) and bad.\n\n## T <a href="#t" id="t"></a>\n',
    ),
    "an HTML table with breaks, lists and code links in cells": (
        "<table>\n<tr><th>Name</th><th>About</th></tr>\n"
        '<tr><td><a href="a.md"><strong>A</strong></a></td>'
        "<td>one<br>two<ul><li>x</li><li>y</li></ul></td></tr>\n</table>\n",
        "| Name | About |\n| --- | --- |\n| [**A**](a.md) | one<br>two<br>- x<br>- y |\n",
    ),
    "details with markdown between its tags": (
        "<details>\n<summary><strong>More</strong> here</summary>\n\nInner **md**.\n\n</details>\n",
        "<details>\n\n<summary>More here</summary>\n\nInner **md**.\n\n</details>\n",
    ),
    "details in one block": (
        "<details open><summary>Open</summary><p>Body <em>it</em></p></details>\n",
        "<details open>\n\n<summary>Open</summary>\n\nBody *it*\n\n</details>\n",
    ),
    "a figure is its image with its caption": (
        '<figure><img src=".gitbook/assets/p.png" alt="P"><figcaption><p>The "cap"</p>'
        "</figcaption></figure>\n",
        '![P](.gitbook/assets/p.png "The \\"cap\\"")\n',
    ),
    "nothing executable is kept": (
        '<div onclick="steal()"><script>steal()</script><p>Kept '
        '<a href="javascript:steal()">text</a></p><iframe src="x"></iframe></div>\n',
        "Kept text\n",
    ),
    "a code block in a hint is moved out of it": (
        '{% hint style="warning" %}\nBefore\n```py\nx = 1\n```\nAfter\n{% endhint %}\n\n'
        "> [!TIP]\n> ```sh\n> ls\n> ```\n",
        '{% hint style="warning" %}\nBefore\n{% endhint %}\n```py\nx = 1\n```\n'
        '{% hint style="warning" %}\nAfter\n{% endhint %}\n\n```sh\nls\n```\n',
    ),
    "a code block in a quote is moved out of it": (
        "> Run:\n>\n> ```shell\n> go test\n> ```\n>\n> Done.\n",
        "> Run:\n>\n```shell\ngo test\n```\n>\n> Done.\n",
    ),
    "an embed's caption is a paragraph below it": (
        '{% embed url="https://youtu.be/x" %}\nThe talk\n{% endembed %}\n\n'
        '- item\n\n  {% embed url="https://e.org" %}\n',
        '{% embed url="https://youtu.be/x" %}\n\nThe talk\n\n'
        '- item\n\n  {% embed url="https://e.org" %}\n',
    ),
}


@pytest.mark.parametrize(("source", "expected"), CASES.values(), ids=CASES.keys())
def test_markup(source: str, expected: str) -> None:
    assert run(source)[0] == expected


def test_what_is_not_kept_as_it_was_is_noted() -> None:
    _, notes = run(
        '<div><script>x()</script><mark style="color:red;">Red</mark><blink>b</blink>\n'
        "<figure><img src='a.png'><figcaption>C</figcaption></figure></div>\n\n"
        '{% hint style="info" %}\n```\ncode\n```\n{% endhint %}\n\n'
        '- a\n\n  {% embed url="https://e.org" %}\n  Cap\n  {% endembed %}\n\n'
        'Inline <span class="x">s</span>, <u>u</u>, <strong>kept</strong> and `<tt>`.\n'
        "Not tags: ![i](<my pic.png>) <https://e.org> a <b c.\n"
    )
    assert notes.approximated == [
        "an embed in a list item shown as its link: list items hold no embeds",
        "an embed's caption kept as a paragraph below it",
        "a hint split around its code blocks: GitBook hints hold none",
        "HTML <script> left out: no place in a page",
        "HTML <blink> kept as its text",
        "HTML <mark> kept as its text, without its colour",
        "inline HTML <span>, <u> kept as its text",
        "HTML attributes style left out: a page has no layout",
    ]
    assert notes.unresolved == []


def test_no_markup_is_left_as_text_in_the_document() -> None:
    source = "\n\n".join(source for source, _ in CASES.values())
    document = markdown_to_document(run(source)[0])

    def texts(node: object) -> list[str]:
        if isinstance(node, dict):
            found = [str(leaf["text"]) for leaf in node.get("leaves", [])]
            for value in node.values():
                if isinstance(value, list | dict):
                    found += texts(value)
            return found
        if isinstance(node, list):
            return [t for n in node for t in texts(n)]
        return []

    shown = [t for t in texts(document) if "<" in t and "-->" not in t]
    # Only code keeps markup: the fenced `<!-- fenced -->` and `<!-- span -->` spans.
    assert all("<!--" in t for t in shown), shown


def test_hostile_html_costs_linear_time_and_keeps_its_text() -> None:
    # Nesting past the converter's depth (it recurses per level) keeps the text, reported.
    out, notes = run("<div>" * 5000 + "deep" + "</div>" * 5000 + "\n")
    assert (out, notes.approximated) == (
        "deep\n",
        ["HTML nested more than 100 deep kept as its text"],
    )
    # Unclosed comments and quotes, which the standard library's HTML parser reads in quadratic
    # time (minutes here), and backtick runs: each in well under a second.
    started = time.perf_counter()
    assert run("<!--" * 50000)[0] == ""
    assert run('<div a="' * 50000)[0] == ""
    assert run("`" * 100000 + "<b>x</b>")[0] == "`" * 100000 + "<b>x</b>"
    assert run("<img " * 50000)[0] == "<img " * 50000
    assert time.perf_counter() - started < 10
