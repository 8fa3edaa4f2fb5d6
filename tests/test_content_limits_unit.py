"""The pure parts of the content limits: link labels found in linear time give markdown-it's own
answers, pathological bodies are either processed or refused by `check`, page listings stop at
the depth limit without recursing, and imports refuse trees past it."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from docshelf.content.presenter import nest_pages
from docshelf.document import markdown as md
from docshelf.document.limits import (
    LINKS,
    MAX_BLOCK_NESTING,
    MAX_IMPORT_DEPTH,
    MAX_MARKDOWN_BYTES,
    MAX_MARKUP,
    MAX_PAGE_DEPTH,
)
from docshelf.imports.convert import ConversionError, Skipped, from_markdown, from_zip

# -- linear link labels ---------------------------------------------------------------------------

_REFERENCE = MarkdownIt("commonmark", {"maxNesting": 100}).enable("strikethrough")

# Bracket-heavy pieces: labels opened and never closed, closed twice, nested links and images,
# code spans and autolinks that take brackets away from labels.
_ATOMS = [
    *("[", "]", "[[", "]]", "![", "(", ")", "](", "](x)", "]()", "[a](b)", "![i](j)", "[r]"),
    *("`", "``", "*", "_", "~~", "\\", "<", ">", "<http://x.y/[>", "&amp;", '"t"', "!", " "),
    *("\n", "\n\n", "> ", "- ", "    ", "a", "é", "[r]: /u\n"),
]
bracket_text = st.lists(st.sampled_from(_ATOMS), max_size=200).map("".join)


def tokens(parser: MarkdownIt, text: str) -> list[dict[str, Any]]:
    return [t.as_dict() for t in parser.parse(text)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bracket_text)
def test_linear_labels_parse_as_markdown_it_does(text: str) -> None:
    assert tokens(md._DOC, text) == tokens(_REFERENCE, text)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 150 + "a" + "]" * 150 + "(x)",
        "[" * 99 + "[a](b)" + "]" * 99,
        "![" * 60 + "[a](b)" + "](c)" * 60,
        "[a " * 120 + "](x)" * 120,
        "[[[[[[[[[[[[[[[[[[[[[foo]()",
        "![[a](b)](c) [x [y](z) ]",
    ],
)
def test_linear_labels_at_the_nesting_bound(text: str) -> None:
    assert tokens(md._DOC, text) == tokens(_REFERENCE, text)


# -- pathological bodies --------------------------------------------------------------------------

N = 20_000
PATHOLOGICAL = {
    "brackets": "[" * N,
    "images": "![" * (N // 2),
    "open links": "[a](" * (N // 4),
    "closed twice": "[a]]" * (N // 4),
    "stars": "*" * N,
    "spaced stars": "* " * (N // 2),
    "underscores": "a_" * (N // 2),
    "emphasis runs": "*a " * (N // 4) + "b*" * (N // 4),
    "backticks": "`" * N,
    "backtick runs": "".join("`" * i + "a" for i in range(1, 200)),
    "angles": "<" * N,
    "quotes": ">" * N,
    "quote lines": "> " * (N // 2),
    "nested lists": "".join("  " * i + "- a\n" for i in range(200)),
    "ordered lists": "".join("   " * i + "1. a\n" for i in range(200)),
    "brackets and text": "[ *a* " * (N // 6),
    "references": "[a]: /x\n" * (N // 8),
}


@pytest.mark.parametrize("text", list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL))
def test_pathological_bodies_are_processed_or_refused(text: str) -> None:
    """Each helper finishes on it (how fast is measured in benchmarks/markdown_pathological.py)
    and a document, refused or not, stays within the JSON encoder's nesting limit."""
    problem = md.check(text)
    assert problem is None or "nests block quotes or lists" in problem
    md.iter_links(text)
    md.split_sections(text)
    orjson.dumps(md.to_document(text))
    assert md.rewrite_links(text, lambda target, image: None) == text


def test_check_names_each_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    assert md.check("a" * MAX_MARKDOWN_BYTES) is None
    assert md.check("a" * MAX_MARKDOWN_BYTES + "b") == (
        f"markdown is {MAX_MARKDOWN_BYTES + 1} bytes; a page holds at most {MAX_MARKDOWN_BYTES}"
    )
    assert md.check("> " * MAX_BLOCK_NESTING + "a") is None
    assert md.check("> " * 40 + "a") == (
        f"markdown nests block quotes or lists 40 deep; at most {MAX_BLOCK_NESTING} levels are "
        "allowed"
    )
    # The parser itself stops at 100 levels: the count is what it kept, still over the limit.
    assert "nests block quotes or lists 100 deep" in str(md.check(">" * 5000))
    over = (
        f"markdown holds more than {MAX_MARKUP} markup characters outside code "
        f"([ ] ! < * _ ` ~ & \\); a page holds at most {MAX_MARKUP}"
    )
    # At the limit in cheap markup (brackets at the limit cost seconds: HTTP tests write them).
    assert md.check("*" * MAX_MARKUP) is None
    assert md.check("[" * (MAX_MARKUP + 1)) == over
    assert md.check("a_" * MAX_MARKUP + "\n\n*x*") == over
    # Code is not parsed for markup, so it does not count.
    assert md.check("```\n" + "[" * MAX_MARKUP * 2 + "\n```\n") is None
    assert md.check("    " + "<" * MAX_MARKUP * 2 + "\n") is None
    # Every form of link counts; shown against a lower bound, as cheap to parse as the rest
    # (tests/test_content_limits.py writes a page at the real one).
    monkeypatch.setattr(md, "MAX_LINKS", 1000)
    assert md.check("<https://x.y>\n" * 1000) is None
    assert md.check("[a]: /b\n" + "[a]\n" * 1000 + "![i](j)") is None
    assert md.check("![i](j)\n" * 1001) == "markdown holds 1001 links; a page holds at most 1000"
    assert md.check("<https://x.y>\n" * 1001) == (
        "markdown holds 1001 links; a page holds at most 1000"
    )
    assert md.violation("[x](y)\n" * 1001) == (
        LINKS,
        "markdown holds 1001 links; a page holds at most 1000",
    )


def test_derived_values_are_copies() -> None:
    text = "# Title\n\n[a](b) text\n"
    first = md.to_document(text)
    first["nodes"].clear()
    assert md.to_document(text)["nodes"] != []
    sections = md.split_sections(text)
    sections.clear()
    assert md.split_sections(text) != []


def test_documents_flatten_past_the_nesting_limit() -> None:
    doc = md.to_document("- " * 60 + "leaf\n")
    depth, nodes = 0, doc["nodes"]
    while nodes and nodes[0]["type"] in ("list-unordered", "list-item"):
        depth += 1
        nodes = nodes[0]["nodes"]
    assert depth == 2 * MAX_BLOCK_NESTING
    assert nodes[0]["type"] == "paragraph"


# -- page listings --------------------------------------------------------------------------------


def _chain(depth: int) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    records: dict[str, dict[str, Any]] = {}
    for i in range(depth):
        records[f"p{i}"] = {
            "id": f"p{i}",
            "title": f"P{i}",
            "slug": f"s{i}",
            "type": "group" if i == 0 else "document",
            "parent": f"p{i - 1}" if i else None,
            "children": [[f"p{i + 1}", f"s{i + 1}"]] if i + 1 < depth else [],
        }
    return {"id": "", "children": [["p0", "s0"]]}, records


def test_page_listing_stops_at_the_depth_limit() -> None:
    root, records = _chain(1000)  # far past Python's recursion limit and orjson's
    pages = nest_pages(records, root, "", lambda pid: f"https://x/{pid}")
    depth, level = 0, pages
    while level:
        depth += 1
        assert len(level) == 1
        assert level[0]["path"] == "/".join(f"s{i}" for i in range(depth))
        level = level[0].get("pages", [])
    assert depth == MAX_PAGE_DEPTH
    orjson.dumps({"pages": pages})


def test_page_listing_keeps_order_and_shape() -> None:
    root, records = _chain(3)
    records["p0"]["children"].append(["x", "x"])
    records["x"] = {
        "id": "x",
        "title": "X",
        "type": "link",
        "href": "https://e.com",
        "children": [],
    }
    records["x"]["parent"] = "p0"
    pages = nest_pages(records, root, "", lambda pid: pid)
    assert [p["id"] for p in pages[0]["pages"]] == ["p1", "x"]
    assert pages[0]["pages"][1] == {
        "id": "x",
        "title": "X",
        "kind": "link",
        "type": "link",
        "target": {"kind": "url", "url": "https://e.com"},
        "href": "https://e.com",
        "hidden": False,
    }
    assert pages[0]["pages"][0]["pages"][0]["path"] == "s0/s1/s2"


# -- imports --------------------------------------------------------------------------------------


def make_zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def folders(n: int) -> str:
    return "/".join(f"d{i}" for i in range(n))


def deeper(path: str, depth: int) -> Skipped:
    return Skipped(
        path,
        f"over the page depth limit (it would be {depth} levels deep; an import holds at most "
        f"{MAX_IMPORT_DEPTH}): left out",
    )


def test_folder_imports_up_to_the_depth_and_reports_what_is_deeper() -> None:
    fits = from_zip(make_zip({"top.md": b"x", f"{folders(MAX_IMPORT_DEPTH - 1)}/page.md": b"x"}))
    assert len(fits.pages) == MAX_IMPORT_DEPTH + 1  # the folders, the page, top.md
    # A folder's README is the folder's own page, not a level below it.
    readme = f"{folders(MAX_IMPORT_DEPTH)}/README.md"
    assert len(from_zip(make_zip({"top.md": b"x", readme: b"x"})).pages) == MAX_IMPORT_DEPTH + 1
    # One level deeper: that file is left out and named, the rest imported.
    deep = f"{folders(MAX_IMPORT_DEPTH)}/page.md"
    imported = from_zip(make_zip({"top.md": b"x", deep: b"x", "d0/near.md": b"x"}))
    assert [(p.ref, p.parent, p.title) for p in imported.pages] == [
        ("p1", None, "D0"),
        ("p2", "p1", "Near"),
        ("p3", None, "Top"),
    ]
    assert (imported.total, imported.imported) == (3, 2)
    assert imported.skipped == (deeper(deep, MAX_IMPORT_DEPTH + 1),)


def test_thousands_of_folders_are_left_out_cleanly() -> None:
    deep = f"{folders(1199)}/page.md"
    imported = from_zip(make_zip({"top.md": b"x", deep: b"x"}))
    assert [p.title for p in imported.pages] == ["Top"]
    assert imported.skipped == (deeper(deep, 1200),)


def test_summary_imports_up_to_the_depth_and_reports_what_is_deeper() -> None:
    def summary(depth: int, *, group: bool = False) -> bytes:
        head = "# Summary\n\n## Part\n\n" if group else ""
        entries = "".join("  " * i + f"* [P{i}](p{i}.md)\n" for i in range(depth))
        files = {f"p{i}.md": b"x" for i in range(depth)}
        return make_zip({"SUMMARY.md": (head + entries).encode(), **files})

    assert len(from_zip(summary(MAX_IMPORT_DEPTH)).pages) == MAX_IMPORT_DEPTH
    # The entry one level too deep (under the group's level, or its own) is left out, named.
    for data, cut in (
        (summary(MAX_IMPORT_DEPTH + 1), f"p{MAX_IMPORT_DEPTH}.md"),
        (summary(MAX_IMPORT_DEPTH, group=True), f"p{MAX_IMPORT_DEPTH - 1}.md"),
    ):
        imported = from_zip(data)
        assert len(imported.pages) == MAX_IMPORT_DEPTH
        assert imported.skipped == (deeper(cut, MAX_IMPORT_DEPTH + 1),)


def test_imported_pages_over_the_body_limits_are_left_out() -> None:
    """Checked before the importer parses a page for its title: that parse is not bounded. A
    single page is refused; a page of a project is left out and named, the rest imported."""
    with pytest.raises(ConversionError) as info:
        from_markdown(b"[" * (MAX_MARKUP + 1), "x.md")
    assert str(info.value).startswith(f"x.md: markdown holds more than {MAX_MARKUP} markup")
    imported = from_zip(make_zip({"big.md": b"a" * (MAX_MARKDOWN_BYTES + 1), "ok.md": b"ok"}))
    assert [p.title for p in imported.pages] == ["Ok"]
    assert imported.skipped == (
        Skipped(
            "big.md",
            f"over the page size limit (markdown is {MAX_MARKDOWN_BYTES + 1} bytes; a page "
            f"holds at most {MAX_MARKDOWN_BYTES}): left out",
        ),
    )
    with pytest.raises(ConversionError) as info:
        from_zip(make_zip({"big.md": b"a" * (MAX_MARKDOWN_BYTES + 1)}))
    assert str(info.value) == (
        "nothing to import: every page was left out (big.md: over the page size limit "
        f"(markdown is {MAX_MARKDOWN_BYTES + 1} bytes; a page holds at most "
        f"{MAX_MARKDOWN_BYTES}): left out)"
    )
