"""The Git Sync layout (gitsync/layout.py): a space as GitBook's repository files and back,
and the operations between two spaces. Pure: no database, no git."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.gitsync.layout import (
    SUMMARY,
    Asset,
    LayoutError,
    Page,
    Reusable,
    Space,
    asset_ref,
    asset_target,
    changes,
    export,
    ordered,
    page_paths,
    parse,
)


def _space(
    *pages: Page, reusables: tuple[Reusable, ...] = (), assets: tuple[Asset, ...] = ()
) -> Space:
    return Space(ordered(pages), reusables, assets)


SAMPLE = _space(
    Page(
        "p1",
        None,
        "document",
        "Intro",
        "intro",
        markdown='{% hint style="info" %}\nHi\n{% endhint %}',
    ),
    Page("g1", None, "group", "Guides", "guides"),
    Page(
        "p2", "g1", "document", "Setup", "setup", description="How: to", icon="rocket", hidden=True
    ),
    Page("p3", "p2", "document", "Deep [x]", "deep", emoji="1f600", markdown="body\n"),
    Page("l1", "g1", "link", "Site (x)", "site", href="https://example.com/a b"),
    Page("p4", None, "document", "After", "README"),
    reusables=(Reusable("r1", "Snippet", "shared"),),
    assets=(Asset("f1", "a.png", b"\x89PNG"),),
)


def test_the_layout_of_a_space() -> None:
    files = export(SAMPLE)
    assert sorted(files) == [
        ".gitbook.yaml",
        ".gitbook/assets/a.png",
        ".gitbook/includes/Snippet.md",
        "README.md",
        "SUMMARY.md",
        "guides/setup/README.md",
        "guides/setup/deep.md",
        "readme-page.md",
    ]
    assert files[SUMMARY].decode() == (
        "# Table of contents\n"
        "\n"
        "* [Intro](README.md)\n"
        "\n"
        '## Guides <a href="#guides" id="g1"></a>\n'
        "\n"
        "* [Setup](guides/setup/README.md)\n"
        "  * [Deep \\[x\\]](guides/setup/deep.md)\n"
        '* [Site (x)](<https://example.com/a b>) <a href="#site" id="l1"></a>\n'
        "\n"
        "<!-- ungrouped -->\n"
        "\n"
        "* [After](readme-page.md)\n"
    )
    assert files["guides/setup/README.md"].decode() == (
        "---\ndescription: 'How: to'\nicon: rocket\nhidden: true\nid: p2\n---\n\n# Setup\n"
    )
    assert files["README.md"].decode() == (
        '---\nslug: intro\nid: p1\n---\n\n# Intro\n\n{% hint style="info" %}\nHi\n{% endhint %}'
    )
    assert files[".gitbook/includes/Snippet.md"] == b"---\nid: r1\n---\n\n# Snippet\n\nshared"


def test_export_then_parse_is_the_identity() -> None:
    assert parse(export(SAMPLE)) == SAMPLE
    assert changes(SAMPLE, parse(export(SAMPLE))) == []


def _edit(files: dict[str, bytes], path: str, old: str, new: str) -> dict[str, bytes]:
    text = files[path].decode()
    assert old in text
    return {**files, path: text.replace(old, new).encode()}


def test_a_gitbook_repository_without_ids_is_all_new_pages() -> None:
    files = {
        "SUMMARY.md": b"# Table of contents\n\n* [Welcome](README.md)\n* [Guide](guide/README.md)\n"
        b"  * [Step](guide/step.md)\n",
        "README.md": b"# Welcome\n\nHello",
        "guide/README.md": b"---\ndescription: All of it\n---\n\n# Guide\n",
        "guide/step.md": b"No heading here",
        ".gitbook.yaml": b"root: ./\n",
    }
    space = parse(files)
    assert space.pages == (
        Page("+README.md", None, "document", "Welcome", "welcome", markdown="Hello"),
        Page("+guide/README.md", None, "document", "Guide", "guide", description="All of it"),
        Page(
            "+guide/step.md",
            "+guide/README.md",
            "document",
            "Step",
            "step",
            markdown="No heading here",
        ),
    )
    ops = changes(Space(), space)
    assert [(o["op"], o["ref"], o["into"], o["at"]) for o in ops] == [
        ("insert_page", "+README.md", None, 0),
        ("insert_page", "+guide/README.md", None, 1),
        ("insert_page", "+guide/step.md", "+guide/README.md", 0),
    ]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda f: _edit(f, "guides/setup/deep.md", "body\n", "new body\n"),
            [{"op": "update_page", "page": "p3", "markdown": "new body\n"}],
        ),
        (
            lambda f: _edit(f, "guides/setup/README.md", "# Setup", "# Set up"),
            [{"op": "update_page", "page": "p2", "title": "Set up"}],
        ),
        (
            lambda f: _edit(f, "guides/setup/README.md", "hidden: true\n", ""),
            [{"op": "update_page", "page": "p2", "hidden": False}],
        ),
        (
            # Deep moves to the top, first: one update with its new place.
            lambda f: _edit(
                _edit(f, SUMMARY, "  * [Deep \\[x\\]](guides/setup/deep.md)\n", ""),
                SUMMARY,
                "* [Intro](README.md)\n",
                "* [Deep](guides/setup/deep.md)\n* [Intro](README.md)\n",
            ),
            [{"op": "update_page", "page": "p3", "into": None, "at": 0}],
        ),
        (
            lambda f: {
                k: v
                for k, v in _edit(f, SUMMARY, "* [After](readme-page.md)\n", "").items()
                if k != "readme-page.md"
            },
            [{"op": "delete_page", "page": "p4"}],
        ),
        (
            lambda f: {**f, ".gitbook/assets/b.txt": b"new"},
            [{"op": "insert_file", "name": "b.txt", "data": b"new", "ref": asset_ref("b.txt")}],
        ),
        (
            lambda f: _edit(f, ".gitbook/includes/Snippet.md", "shared", "changed"),
            [
                {
                    "op": "update_reusable",
                    "reusable": "r1",
                    "title": "Snippet",
                    "markdown": "changed",
                }
            ],
        ),
    ],
)
def test_edits_in_the_tree_are_the_changes(edit: Any, expected: list[dict[str, Any]]) -> None:
    assert changes(SAMPLE, parse(edit(export(SAMPLE)))) == expected


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: {**f, "notes.txt": b"x"}, "notes.txt: forbidden path"),
        (lambda f: {**f, ".github/ci.yml": b"x"}, ".github/ci.yml: forbidden path"),
        (lambda f: {**f, "extra.md": b"# Extra"}, "extra.md: the page is not listed in SUMMARY.md"),
        (lambda f: {k: v for k, v in f.items() if k != SUMMARY}, "SUMMARY.md is missing"),
        (
            lambda f: {k: v for k, v in f.items() if k != "README.md"},
            "names README.md, which is not",
        ),
        (lambda f: _edit(f, SUMMARY, "* [Intro]", "Intro ["), "SUMMARY.md line 3: expected"),
        (
            lambda f: _edit(f, "README.md", "slug: intro\n", "slug: [\n"),
            "README.md: the front matter is not valid YAML",
        ),
        (
            lambda f: _edit(f, "README.md", "slug: intro\n", "color: red\n"),
            "unknown front matter key 'color'",
        ),
        (lambda f: _edit(f, "README.md", "id: p1", "id: p2"), "the id p2 is also the id of"),
        (lambda f: {**f, "README.md": b"\xff\xfe"}, "README.md: not UTF-8 text"),
        (lambda f: {**f, "README.md": b"x" * (5 * 1024 * 1024 + 1)}, "more than 5242880"),
    ],
)
def test_trees_that_cannot_be_a_space(edit: Any, message: str) -> None:
    with pytest.raises(LayoutError) as caught:
        changes(SAMPLE, parse(edit(export(SAMPLE))))
    assert message in str(caught.value)


def test_a_file_changes_or_goes_by_its_id() -> None:
    files = export(SAMPLE)
    assert changes(SAMPLE, parse({**files, ".gitbook/assets/a.png": b"other"})) == [
        {"op": "update_file", "file": "f1", "name": "a.png", "data": b"other"}
    ]
    gone = {k: v for k, v in files.items() if k != ".gitbook/assets/a.png"}
    assert changes(SAMPLE, parse(gone)) == [{"op": "delete_file", "file": "f1", "name": "a.png"}]


# Properties over generated spaces

_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
    min_size=0,
    max_size=30,
)
_TITLE = _TEXT.map(str.strip).filter(bool)
_SLUG = st.from_regex(r"[a-z0-9][a-z0-9-]{0,12}", fullmatch=True) | st.sampled_from(
    ["README", "SUMMARY", "Ünï", ".hidden", "a b"]
)
_BODY = st.text(
    st.characters(
        codec="utf-8",
        exclude_categories=("Cs",),
        exclude_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    ),
    max_size=60,
)


@st.composite
def spaces(draw: st.DrawFn) -> Space:
    n = draw(st.integers(0, 12))
    pages: list[Page] = []
    for i in range(n):
        documents = [p.key for p in pages if p.type == "document"]
        parent = draw(
            st.sampled_from([None, *documents, *[p.key for p in pages if p.type == "group"]])
        )
        kind = (
            draw(st.sampled_from(["document", "document", "link", "group"]))
            if parent is None
            else draw(st.sampled_from(["document", "document", "link"]))
        )
        taken = {p.slug for p in pages if p.parent == parent}
        slug = draw(_SLUG.filter(lambda s, t=taken: s not in t))
        optional = st.none() | _TITLE
        pages.append(
            Page(
                key=f"id{i}",
                parent=parent,
                type=kind,
                title=draw(_TITLE),
                slug=slug,
                emoji=draw(optional) if kind == "document" else None,
                icon=draw(optional) if kind == "document" else None,
                description=draw(st.none() | _BODY) if kind == "document" else None,
                hidden=draw(st.booleans()) if kind == "document" else False,
                href=f"https://example.com/{i}" if kind == "link" else None,
                markdown=draw(_BODY) if kind == "document" else "",
            )
        )
    reusables = tuple(
        Reusable(f"rc{i}", draw(_TITLE), draw(_BODY)) for i in range(draw(st.integers(0, 3)))
    )
    return Space(ordered(pages), reusables)


@settings(max_examples=150, deadline=None)
@given(spaces())
def test_any_space_survives_the_round_trip(space: Space) -> None:
    files = export(space)
    assert parse(files) == space
    # Pages known from the same bytes (a push's unchanged files) are the pages read again.
    paths = page_paths(space)
    known = {paths[p.key]: replace(p, parent="elsewhere") for p in space.pages if p.key in paths}
    assert parse(files, known) == space
    assert changes(space, parse(files)) == []
    assert export(parse(files)) == files  # deterministic


def _apply(base: Space, ops: list[dict[str, Any]]) -> Space:
    """A model of the content engine applying the operations in order (pages only)."""
    kids: dict[str | None, list[str]] = {}
    records: dict[str, Page] = {}
    for page in base.pages:
        kids.setdefault(page.parent, []).append(page.key)
        records[page.key] = page

    def drop(key: str) -> None:
        for kid in kids.pop(key, []):
            drop(kid)
        del records[key]

    for op in ops:
        if op["op"] == "insert_page":
            assert op["into"] is None or op["into"] in records
            kids.setdefault(op["into"], []).insert(op["at"], op["ref"])
            fields = {
                k: op[k]
                for k in (
                    "title",
                    "slug",
                    "emoji",
                    "icon",
                    "description",
                    "hidden",
                    "markdown",
                    "href",
                    "type",
                )
            }
            records[op["ref"]] = Page(op["ref"], op["into"], **fields)
        elif op["op"] == "update_page":
            page = records[op["page"]]
            if "at" in op:
                kids[page.parent].remove(page.key)
                assert op["into"] is None or op["into"] in records
                kids.setdefault(op["into"], []).insert(op["at"], page.key)
                page = replace(page, parent=op["into"])
            fields = {k: v for k, v in op.items() if k not in ("op", "page", "into", "at")}
            records[op["page"]] = replace(page, **fields)
        elif op["op"] == "delete_page":
            page = records[op["page"]]
            kids[page.parent].remove(page.key)
            drop(page.key)
    out: list[Page] = []

    def walk(parent: str | None) -> None:
        for key in kids.get(parent, []):
            out.append(records[key])
            walk(key)

    walk(None)
    return Space(tuple(out), base.reusables)


@settings(max_examples=150, deadline=None)
@given(spaces(), spaces())
def test_the_changes_turn_one_space_into_the_other(base: Space, new: Space) -> None:
    # Pages of both spaces with one id are one page: its type (and a link's URL) cannot change
    # over git, so a page of `new` that would change them is another page.
    before = {p.key: p for p in base.pages}

    def other(key: str | None) -> str | None:
        page = new_pages.get(key or "")
        same = (
            page is None
            or key not in before
            or (before[key].type == page.type and before[key].href == page.href)
        )
        return key if same else f"n{key}"

    new_pages = {p.key: p for p in new.pages}
    new = Space(
        tuple(replace(p, key=other(p.key) or "", parent=other(p.parent)) for p in new.pages),
        base.reusables,
    )
    assert _apply(base, changes(base, new)).pages == new.pages


def test_a_page_cannot_change_its_type() -> None:
    new = _space(*[replace(p, type="document") if p.key == "l1" else p for p in SAMPLE.pages])
    with pytest.raises(LayoutError, match="cannot turn from a link into a document"):
        changes(SAMPLE, new)


@pytest.mark.parametrize(
    ("page", "target", "name"),
    [
        ("guide/step.md", "../.gitbook/assets/a.png", "a.png"),
        ("README.md", ".gitbook/assets/a.png", "a.png"),
        ("README.md", "./.gitbook/assets/a.png#x", "a.png"),
        ("a/b/c.md", "/.gitbook/assets/two%20words.png", "two words.png"),
        ("a/b/c.md", "../../.gitbook/assets/a.png?raw=1", "a.png"),
        ("guide/step.md", ".gitbook/assets/a.png", None),  # guide/.gitbook/...: not the assets
        ("README.md", "../.gitbook/assets/a.png", None),  # above the root
        ("README.md", ".gitbook/assets/sub/a.png", None),  # assets hold no folders
        ("README.md", ".gitbook/assets/", None),
        ("README.md", "https://example.com/.gitbook/assets/a.png", None),
        ("README.md", "//example.com/.gitbook/assets/a.png", None),
        ("README.md", "/files/abc", None),
        ("README.md", "", None),
    ],
)
def test_asset_targets(page: str, target: str, name: str | None) -> None:
    assert asset_target(page, target) == name
