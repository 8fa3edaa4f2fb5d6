"""Import converters (docshelf.imports.convert): markdown, HTML and GitBook / Git Sync zips to a
page tree, as table cases with whole expected values, and the archives that must be refused."""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import stat
import zipfile
from pathlib import Path
from typing import Literal

import pytest

from docshelf.document.limits import MAX_IMPORT_DEPTH, MAX_MARKDOWN_BYTES
from docshelf.imports.convert import (
    SUMMARY_MAX_DEPTH,
    ConversionError,
    Imported,
    ImportedFile,
    ImportedPage,
    ImportedReusable,
    OverLimit,
    Skipped,
    from_folder,
    from_html,
    from_markdown,
    from_zip,
)

PNG = b"\x89PNG\r\n\x1a\n-fake"
UNSUPPORTED = "unsupported file type: .{} files are not imported, only markdown and images"


def make_zip(files: dict[str, str | bytes], *, directories: bool = False) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        if directories:
            for folder in sorted({n.rsplit("/", 1)[0] + "/" for n in files if "/" in n}):
                zf.writestr(folder, b"")
        for name, content in files.items():
            zf.writestr(name, content)
    return buf.getvalue()


def page(
    ref: str,
    parent: str | None,
    title: str,
    markdown: str,
    kind: Literal["document", "group"] = "document",
) -> ImportedPage:
    return ImportedPage(ref, parent, title, markdown, kind)


# -- zip layouts ----------------------------------------------------------------------------------

ZIP_CASES: dict[str, tuple[dict[str, str | bytes], Imported]] = {
    "summary with groups and nesting": (
        {
            "SUMMARY.md": (
                "# Table of contents\n\n"
                "* [Introduction](README.md)\n"
                "* [Getting started](start/README.md)\n"
                "  * [Install](start/install.md)\n"
                "    * [On Linux](start/linux.md)\n"
                "  * [Configure](<start/configure me.md>)\n\n"
                "## Guides\n\n"
                "- [Writing](guides/writing.md)\n"
                "- [Missing](guides/missing.md)\n"
                "  - [Child of missing](guides/child.md)\n\n"
                "## Reference\n\n"
                "* [API](https://api.example.com)\n"
                "  * [Under a link](guides/writing.md#more)\n"
                "* Plain entry\n"
            ),
            "README.md": "---\ndescription: The home page\n---\n\n# Welcome\n\nHello.\n",
            "start/README.md": "# Start here\n\nFirst steps.\n",
            "start/install.md": "# Installing\n\nRun it.\n",
            "start/linux.md": "apt install it\n",
            "start/configure me.md": "# Configure\n",
            "guides/writing.md": "# Writing\n\nWrite.\n",
            "guides/child.md": "Child.\n",
            "guides/unlisted.md": "# Unlisted\n",
        },
        Imported(
            pages=(
                # GitBook's front matter: its description is the page's.
                ImportedPage("p1", None, "Introduction", "Hello.\n", description="The home page"),
                page("p2", None, "Getting started", "First steps.\n"),
                page("p3", "p2", "Install", "Run it.\n"),
                page("p4", "p3", "On Linux", "apt install it\n"),
                page("p5", "p2", "Configure", ""),
                page("p6", None, "Guides", "", "group"),
                page("p7", "p6", "Writing", "Write.\n"),
                page("p8", "p6", "Missing", ""),
                page("p9", "p8", "Child of missing", "Child.\n"),
                page("p10", None, "Reference", "", "group"),
                # An external entry is a link page, as GitBook makes it.
                ImportedPage("p11", "p10", "API", "", "link", href="https://api.example.com"),
                # A link page holds no pages: its entries go to its parent.
                page("p12", "p10", "Under a link", ""),
                page("p13", "p10", "Plain entry", ""),
            ),
            files=(),
            total=8,
            imported=7,
            skipped=(
                Skipped(
                    "guides/missing.md",
                    'listed in SUMMARY.md as "Missing" but not in the archive: '
                    "imported as an empty page",
                    "unresolved",
                ),
                Skipped(
                    "guides/writing.md",
                    'listed in SUMMARY.md as "Under a link" but listed more than once: '
                    "imported as an empty page",
                    "approximated",
                ),
                Skipped("guides/unlisted.md", "markdown not listed in SUMMARY.md"),
            ),
        ),
    ),
    "summary: README as a normal entry, a file listed twice, titles from headings": (
        {
            "SUMMARY.md": (
                "* [](guide.md)\n* [Home](README.md)\n  * [Again](guide.md)\n* [Folder](sub/)\n"
            ),
            "README.md": "Home body\n",
            "guide.md": "# The guide\n\nText\n",
            "sub/README.md": "# Sub\n\nSub body\n",
        },
        Imported(
            pages=(
                page("p1", None, "The guide", "Text\n"),
                page("p2", None, "Home", "Home body\n"),
                page("p3", "p2", "Again", ""),
                page("p4", None, "Folder", "Sub body\n"),
            ),
            files=(),
            total=3,
            imported=3,
            skipped=(
                Skipped(
                    "guide.md",
                    'listed in SUMMARY.md as "Again" but listed more than once: '
                    "imported as an empty page",
                    "approximated",
                ),
            ),
        ),
    ),
    "folders and READMEs": (
        {
            "b-guide/README.md": "# The guide\n\nAbout the guide.\n",
            "b-guide/zeta.md": "# Zeta\n",
            "b-guide/alpha.md": "No heading here.\n",
            "b-guide/deep/more.md": "# More\n",
            "README.md": "# Home\n\nWelcome.\n",
            "a-first.md": "# First\n",
            "c-notes/readme.md": "Notes without a heading.\n",
            "assets/logo.png": PNG,
        },
        Imported(
            pages=(
                page("p1", None, "Home", "Welcome.\n"),
                page("p2", None, "First", ""),
                page("p3", None, "The guide", "About the guide.\n"),
                page("p4", "p3", "Alpha", "No heading here.\n"),
                page("p5", "p3", "Deep", ""),
                page("p6", "p5", "More", ""),
                page("p7", "p3", "Zeta", ""),
                page("p8", None, "C notes", "Notes without a heading.\n"),
            ),
            files=(ImportedFile("f1", "logo.png", "image/png", PNG),),
            total=8,
            imported=8,
            skipped=(),
        ),
    ),
    "a single top-level folder is stripped, litter ignored": (
        {
            "docs-main/README.md": "# Docs\n",
            "docs-main/guide/intro.md": "# Intro\n\n![](../.gitbook/assets/shot.webp)\n",
            "docs-main/.gitbook/assets/shot.webp": b"RIFFwebp",
            "docs-main/.gitbook/includes/snippet.md": "# Reusable block\n\n> [!TIP]\n> Tip.\n",
            "docs-main/.gitbook.yaml": "root: ./\n",
            "docs-main/.DS_Store": b"\0\0",
            "__MACOSX/docs-main/._README.md": b"\0\0",
            "docs-main/notes.docx": b"PK\3\4",
        },
        Imported(
            pages=(
                page("p1", None, "Docs", ""),
                page("p2", None, "Guide", ""),
                page("p3", "p2", "Intro", "![](./f1)\n"),
            ),
            files=(ImportedFile("f1", "shot.webp", "image/webp", b"RIFFwebp"),),
            total=7,
            imported=4,
            skipped=(
                # In the order of their paths in the archive (the wrapping folder's first).
                Skipped("__MACOSX/", "macOS metadata folder"),
                Skipped(".DS_Store", "hidden file"),
                Skipped("notes.docx", UNSUPPORTED.format("docx")),
            ),
            # GitBook's reusable contents become the space's.
            reusables=(
                ImportedReusable(
                    ".gitbook/includes/snippet.md",
                    "snippet",
                    '# Reusable block\n\n{% hint style="success" %}\nTip.\n{% endhint %}\n',
                ),
            ),
        ),
    ),
    "links and images between imported pages and files": (
        {
            "README.md": (
                "# Home\n\n"
                "[intro](guide/intro.md) [anchored](guide/intro.md#setup) [folder](guide/)\n"
                "[folder readme](guide/README.md) [bare folder](guide)\n"
                "![logo](<assets/my logo.svg>) ![encoded](assets/my%20logo.svg)\n"
                "[image as link](assets/photo.JPG) [ref][r]\n\n"
                "[r]: guide/intro.md\n\n"
                "Untouched: [web](https://example.com/a.md) [here](#top) [gone](missing.md)\n"
                "[outside](../up.md) [not an image](guide/intro.md) `[code](guide/intro.md)`\n"
            ),
            "guide/README.md": "# Guide\n\n[home](../README.md) [sibling](intro.md#x)\n",
            "guide/intro.md": (
                "# Intro\n\n![img](../assets/photo.JPG) ![page as image](../README.md)\n"
                "[root-relative](/guide/README.md) [self](./intro.md)\n"
            ),
            "assets/my logo.svg": b"<svg/>",
            "assets/photo.JPG": b"\xff\xd8jpeg",
        },
        Imported(
            pages=(
                page(
                    "p1",
                    None,
                    "Home",
                    "[intro](./p3) [anchored](./p3#setup) [folder](./p2)\n"
                    "[folder readme](./p2) [bare folder](./p2)\n"
                    "![logo](<./f1>) ![encoded](./f1)\n"
                    "[image as link](./f2) [ref][r]\n\n"
                    "[r]: ./p3\n\n"
                    "Untouched: [web](https://example.com/a.md) [here](#top) [gone](missing.md)\n"
                    "[outside](../up.md) [not an image](./p3) `[code](guide/intro.md)`\n",
                ),
                page("p2", None, "Guide", "[home](./p1) [sibling](./p3#x)\n"),
                page(
                    "p3",
                    "p2",
                    "Intro",
                    "![img](./f2) ![page as image](../README.md)\n"
                    "[root-relative](./p2) [self](./p3)\n",
                ),
            ),
            files=(
                ImportedFile("f1", "my logo.svg", "image/svg+xml", b"<svg/>"),
                ImportedFile("f2", "photo.JPG", "image/jpeg", b"\xff\xd8jpeg"),
            ),
            total=5,
            imported=5,
            # Local links and images that lead to nothing of the archive: each named.
            skipped=(
                Skipped(
                    "README.md",
                    "links to 'missing.md', which is no page or image of the import: "
                    "left as written",
                    "unresolved",
                ),
                Skipped(
                    "README.md",
                    "links to '../up.md', which is no page or image of the import: left as written",
                    "unresolved",
                ),
                Skipped(
                    "guide/intro.md",
                    "shows the image '../README.md', which is no image of the import: "
                    "left as written",
                    "unresolved",
                ),
            ),
        ),
    ),
    "summary and README in lower case": (
        {"summary.md": "* [Home](./)\n", "readme.md": "Home\n", "a.md": "A\n"},
        Imported(
            pages=(page("p1", None, "Home", "Home\n"),),
            files=(),
            total=2,
            imported=1,
            skipped=(Skipped("a.md", "markdown not listed in summary.md"),),
        ),
    ),
    "lower-case README first at the root": (
        {"a.md": "A\n", "readme.md": "# Home\n\n[a](a.md)\n"},
        Imported(
            pages=(page("p1", None, "Home", "[a](./p2)\n"), page("p2", None, "A", "A\n")),
            files=(),
            total=2,
            imported=2,
            skipped=(),
        ),
    ),
    "skipped files are noted and counted": (
        {
            "README.md": "# Home\n",
            "notes.docx": b"PK",
            "data/table.csv": "a,b\n",
            "binary.md": b"\0\1\2",
            "clip.mp4": b"\0",
        },
        Imported(
            pages=(page("p1", None, "Home", ""),),
            files=(),
            total=5,
            imported=1,
            skipped=(
                Skipped("binary.md", "not a text file"),
                Skipped("clip.mp4", UNSUPPORTED.format("mp4")),
                Skipped("data/table.csv", UNSUPPORTED.format("csv")),
                Skipped("notes.docx", UNSUPPORTED.format("docx")),
            ),
        ),
    ),
}


def write_folder(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


@pytest.mark.parametrize(("files", "expected"), ZIP_CASES.values(), ids=ZIP_CASES.keys())
def test_from_zip(files: dict[str, str | bytes], expected: Imported, tmp_path: Path) -> None:
    # A SUMMARY.md makes a GitBook repository; anything else here is a plain folder.
    gitbook = any(p.lower().endswith(("summary.md", ".gitbook.yaml")) for p in files)
    kind = "gitbook" if gitbook else "folder"
    expected = dataclasses.replace(expected, detected=kind)
    assert from_zip(make_zip(files)) == expected
    # Directory entries, as most zip tools write them, change nothing.
    assert from_zip(make_zip(files, directories=True)) == expected
    # Nor does reading the folder itself rather than an archive of it.
    assert from_folder(write_folder(tmp_path / "project", files)) == expected


def test_from_zip_windows_separators() -> None:
    data = make_zip({"docs\\README.md": "# Home\n\n[a](a.md)\n", "docs\\a.md": "# A\n"})
    assert from_zip(data).pages == (
        page("p1", None, "Home", "[a](./p2)\n"),
        page("p2", None, "A", ""),
    )


def test_a_file_not_in_utf8_is_read_and_reported() -> None:
    """Each byte that does not decode reads as U+FFFD, and the file is named (a tester saw
    text change without a word)."""
    why = "not UTF-8: bytes that are not were read as \N{REPLACEMENT CHARACTER}"
    single = from_markdown(b"# Caf\xe9\n\nOk.\n", "bad.md")
    assert single.pages == (page("p1", None, "Caf\ufffd", "Ok.\n"),)
    assert single.skipped == (Skipped("bad.md", why, "approximated"),)
    project = from_zip(make_zip({"README.md": "# Home\n", "about.md": b"# About\n\nCaf\xe9\n"}))
    assert [p.markdown for p in project.pages] == ["", "Caf\ufffd\n"]
    assert project.skipped == (Skipped("about.md", why, "approximated"),)


def test_a_link_in_a_zip_is_not_followed() -> None:
    """An archive's symbolic link holds the path it names (here, outside any import): it is
    left out and reported, as a folder's link to a folder is (a tester saw it become a page)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("README.md", "# Home\n")
        link = zipfile.ZipInfo("evil.md")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    imported = from_zip(buf.getvalue())
    assert imported.pages == (page("p1", None, "Home", ""),)
    assert imported.skipped == (Skipped("evil.md", "a link: not followed"),)


# -- refused archives -----------------------------------------------------------------------------


def _damaged_member() -> bytes:
    data = bytearray(make_zip({"a.md": "# A\n" + "text " * 200}))
    start = 30 + len("a.md")  # the local header, then the compressed bytes
    data[start : start + 8] = b"\xff" * 8
    return bytes(data)


REFUSED: dict[str, tuple[bytes, dict[str, int], str]] = {
    "parent path": (make_zip({"../evil.md": "x"}), {}, "../evil.md: paths with '..'"),
    "parent path inside": (make_zip({"a/../../evil.md": "x"}), {}, "paths with '..'"),
    "windows parent path": (make_zip({"a\\..\\..\\evil.md": "x"}), {}, "paths with '..'"),
    "absolute path": (make_zip({"/etc/passwd.md": "x"}), {}, "/etc/passwd.md: absolute paths"),
    "drive path": (make_zip({"C:/evil.md": "x"}), {}, "C:/evil.md: absolute paths"),
    "traversal in ignored litter": (make_zip({"__MACOSX/../../x": "x"}), {}, "paths with '..'"),
    "too many files": (
        make_zip({f"p{i}.md": "x" for i in range(4)}),
        {"max_files": 3},
        "the archive holds more than 3 files",
    ),
    "not a zip": (b"hello, world", {}, "not a valid zip archive"),
    "empty input": (b"", {}, "not a valid zip archive"),
    "truncated": (make_zip({"a.md": "x" * 1000})[:-30], {}, "not a valid zip archive"),
    "damaged member": (_damaged_member(), {}, "not a valid zip archive (a.md is damaged)"),
    "nothing to import": (make_zip({"a.txt": "x"}), {}, "the archive holds no markdown files"),
    "empty summary": (make_zip({"SUMMARY.md": "# TOC\n", "a.md": "x"}), {}, "lists no pages"),
    "over the size cap": (
        make_zip({"a.md": "x" * 600, "b.png": b"y" * 600}),
        {"max_total_bytes": 1000},
        "the archive unpacks to more than 1000 bytes",
    ),
}


@pytest.mark.parametrize(("data", "limits", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_from_zip_refuses(data: bytes, limits: dict[str, int], message: str) -> None:
    with pytest.raises(ConversionError) as info:
        from_zip(data, **limits)
    assert message in str(info.value)


def test_zip_bomb_stops_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """A member that inflates far beyond the cap is refused after reading about the cap's worth,
    whatever its header claims."""
    size = 32 * 1024 * 1024
    buf = io.BytesIO()
    chunk = bytes(1024 * 1024)
    with (
        zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf,
        zf.open("bomb.md", "w") as member,  # streamed: never the whole thing in memory
    ):
        for _ in range(size // len(chunk)):
            member.write(chunk)
    assert len(buf.getvalue()) < size // 100

    inflated = 0
    original_read = zipfile.ZipExtFile.read

    def counting_read(self: zipfile.ZipExtFile, n: int = -1) -> bytes:
        nonlocal inflated
        out = original_read(self, n)
        inflated += len(out)
        return out

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting_read)
    cap = 1024 * 1024
    with pytest.raises(ConversionError, match=r"^the archive unpacks to more than 1 MB$"):
        from_zip(buf.getvalue(), max_total_bytes=cap)
    assert cap < inflated <= cap + 64 * 1024


# -- single files ---------------------------------------------------------------------------------

MARKDOWN_CASES: dict[str, tuple[bytes, str, ImportedPage]] = {
    "first heading is the title": (
        b"# Getting *started*\n\nBody text.\n",
        "start.md",
        page("p1", None, "Getting started", "Body text.\n"),
    ),
    "no heading: the file name": (
        b"Just text.\n## Sub\n",
        "docs/my-notes.markdown",
        page("p1", None, "my-notes", "Just text.\n## Sub\n"),
    ),
    "a later h1, after an h2": (
        b"## Before\n\nIntro\n# Title\nAfter\n",
        "x.md",
        page("p1", None, "Title", "## Before\n\nIntro\n\nAfter\n"),
    ),
    "setext heading, CRLF and a BOM": (
        b"\xef\xbb\xbfThe title\r\n=========\r\n\r\nBody\r\n",
        "x.md",
        page("p1", None, "The title", "Body\n"),
    ),
    "front matter: its description kept, the rest dropped": (
        b"---\ndescription: >-\n  About it\nicon: rocket\n---\n\n# Title\n\nBody\n",
        "x.md",
        ImportedPage("p1", None, "Title", "Body\n", description="About it"),
    ),
    "front matter's title before the heading, which stays": (
        b"---\ntitle: From the front\n---\n# Heading\n\nBody\n",
        "x.md",
        page("p1", None, "From the front", "# Heading\n\nBody\n"),
    ),
    "front matter's title, the same heading taken out": (
        b"---\ntitle: Same\n---\n# Same\n\nBody\n",
        "x.md",
        page("p1", None, "Same", "Body\n"),
    ),
    "a leading divider is not front matter": (
        b"---\n\nText\n\n---\n",
        "x.md",
        page("p1", None, "x", "---\n\nText\n\n---\n"),
    ),
    "headings in code and quotes are not titles, nor an empty one": (
        b"```\n# not a title\n```\n> # quoted\n\n#\n",
        "code.md",
        page("p1", None, "code", "```\n# not a title\n```\n> # quoted\n\n#\n"),
    ),
    "empty file": (b"", "empty.md", page("p1", None, "empty", "")),
}


@pytest.mark.parametrize(
    ("data", "name", "expected"), MARKDOWN_CASES.values(), ids=MARKDOWN_CASES.keys()
)
def test_from_markdown(data: bytes, name: str, expected: ImportedPage) -> None:
    assert from_markdown(data, name) == Imported((expected,), (), 1, 1, ())


def test_from_markdown_reports_its_local_links() -> None:
    """A single page's local links and images lead to nothing of the import (a tester saw
    them dropped without a word): kept as written and reported, as a project's are."""
    data = b"# T\n\n![pic](img/logo.png) [other](other.md) [web](https://x.org) [here](#a)\n"
    imported = from_markdown(data, "notes.md")
    assert imported.pages[0].markdown == data.decode().split("\n", 2)[2]
    assert imported.skipped == (
        Skipped(
            "notes.md",
            "shows the image 'img/logo.png', which is no image of the import: left as written",
            "unresolved",
        ),
        Skipped(
            "notes.md",
            "links to 'other.md', which is no page or image of the import: left as written",
            "unresolved",
        ),
    )


def test_from_markdown_cleans_html_and_alerts_as_a_project_does() -> None:
    """A single markdown file's HTML, comments and GitHub alerts are rewritten and reported as
    a project's pages are (a tester found them stored raw: scripts and handlers included)."""
    data = (
        b"# Mix\n\n<script>alert('x')</script>\n\n"
        b'<div onclick="evil()">Hi <a href="javascript:alert(1)">x</a></div>\n\n'
        b"<!-- a comment -->\n\n<table><tr><th>A</th></tr><tr><td>1</td></tr></table>\n\n"
        b"> [!WARNING]\n> Careful.\n"
    )
    imported = from_markdown(data, "mix.md")
    assert imported.pages == (
        page(
            "p1",
            None,
            "Mix",
            "Hi x\n\n\n| A |\n| --- |\n| 1 |\n\n"
            '{% hint style="warning" %}\nCareful.\n{% endhint %}\n',
        ),
    )
    assert imported.skipped == (
        Skipped("mix.md", "HTML <script> left out: no place in a page", "approximated"),
        Skipped("mix.md", "HTML attributes onclick left out: a page has no layout", "approximated"),
    )


def test_from_html_of_a_file_reports_its_local_links() -> None:
    """A page read from a file has no site to point its links back at: they lead to nothing
    of the import, kept and reported as a markdown file's are (a URL's are made absolute)."""
    data = b"<html><body><h1>T</h1><p><a href='x.html'>x</a> <a href='https://e.org'>e</a></p>"
    imported = from_html(data, "page.html")
    assert imported.pages[0].markdown == "[x](x.html) [e](https://e.org)\n"
    assert imported.skipped == (
        Skipped(
            "page.html",
            "links to 'x.html', which is no page or image of the import: left as written",
            "unresolved",
        ),
    )
    assert from_html(data, "https://e.org/docs/page.html").skipped == ()


def test_from_markdown_refuses_binary() -> None:
    with pytest.raises(ConversionError, match=r"^photo\.md is not a text file$"):
        from_markdown(b"\x89PNG\0\0", "photo.md")


HTML_PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Install guide</title>
<style>body { color: red }</style><script>var tracking = 1;</script></head>
<body>
<nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<main>
  <h1>Install guide</h1>
  <p>Read the <a href="intro.html">intro</a> first, or <a href="#steps">skip</a>.</p>
  <h2 id="steps">Steps</h2>
  <ul><li>Download<ul><li>Check the <em>hash</em></li></ul></li><li>Run <code>make</code></li></ul>
  <ol><li>One</li><li>Two</li></ol>
  <pre><code class="language-bash">make install
echo done
</code></pre>
  <p><img src="/img/diagram.png" alt="Diagram"> caf\xc3\xa9</p>
  <script>alert("nope")</script>
</main>
<footer>Footer</footer>
</body></html>"""

HTML_CASES: dict[str, tuple[bytes, str, ImportedPage]] = {
    "a documentation page": (
        HTML_PAGE,
        "https://docs.example.com/guide/install.html",
        page(
            "p1",
            None,
            "Install guide",
            "Read the [intro](https://docs.example.com/guide/intro.html) first, or "
            "[skip](#steps).\n\n"
            "## Steps\n\n"
            "- Download\n  - Check the *hash*\n- Run `make`\n\n"
            "1. One\n2. Two\n\n"
            "```bash\nmake install\necho done\n```\n\n"
            "![Diagram](https://docs.example.com/img/diagram.png) café\n",
        ),
    ),
    "no <title>: the first h1, taken out of the body; article over body": (
        b"<body><p>Outside</p><article><h1>Release notes</h1><p>New.</p></article></body>",
        "notes.html",
        page("p1", None, "Release notes", "New.\n"),
    ),
    "an h1 unlike the title stays": (
        b"<title>Site | Page</title><body><h1>Page</h1><p>x</p></body>",
        "https://example.com/",
        page("p1", None, "Site | Page", "# Page\n\nx\n"),
    ),
    "nothing usable: named from the address": (
        b"just some text",
        "https://example.com/docs/Getting%20Started.html",
        page("p1", None, "Getting Started", "just some text\n"),
    ),
}


@pytest.mark.parametrize(("data", "url", "expected"), HTML_CASES.values(), ids=HTML_CASES.keys())
def test_from_html(data: bytes, url: str, expected: ImportedPage) -> None:
    assert from_html(data, url) == Imported((expected,), (), 1, 1, (), detected="html")


def _chain(depth: int) -> dict[str, str | bytes]:
    """A SUMMARY.md whose every entry nests in the one before."""
    lines = [f"{'  ' * i}* [P{i}](p{i}.md)" for i in range(depth)]
    files: dict[str, str | bytes] = {f"p{i}.md": f"Body {i}\n" for i in range(depth)}
    return {"SUMMARY.md": "\n".join(lines) + "\n", **files}


def test_deep_summaries_are_read_whole_or_cut_where_too_deep() -> None:
    # markdown-it's default nesting limit used to drop everything below the tenth level.
    deepest = from_zip(make_zip(_chain(MAX_IMPORT_DEPTH)))
    assert len(deepest.pages) == deepest.imported == deepest.total == MAX_IMPORT_DEPTH
    assert deepest.skipped == ()
    assert [p.parent for p in deepest.pages] == [None] + [
        f"p{i}" for i in range(1, MAX_IMPORT_DEPTH)
    ]
    # Deeper than the reader reads (it would silently drop the rest of the file too): those
    # entries are cut out and reported, the entries after them still read.
    files = _chain(SUMMARY_MAX_DEPTH + 3)
    files["SUMMARY.md"] = str(files["SUMMARY.md"]) + "* [After](after.md)\n  * [Below](b.md)\n"
    files.update({"after.md": "# After\n", "b.md": "# Below\n"})
    imported = from_zip(make_zip(files))
    assert len(imported.pages) == MAX_IMPORT_DEPTH + 2
    assert [(p.ref, p.parent, p.title) for p in imported.pages[-3:]] == [
        (f"p{MAX_IMPORT_DEPTH}", f"p{MAX_IMPORT_DEPTH - 1}", f"P{MAX_IMPORT_DEPTH - 1}"),
        (f"p{MAX_IMPORT_DEPTH + 1}", None, "After"),
        (f"p{MAX_IMPORT_DEPTH + 2}", f"p{MAX_IMPORT_DEPTH + 1}", "Below"),
    ]
    limit = "over the page depth limit"
    assert (imported.total, imported.imported) == (SUMMARY_MAX_DEPTH + 5, MAX_IMPORT_DEPTH + 2)
    assert imported.skipped == (
        Skipped(
            "SUMMARY.md",
            f"{limit} (entries from line {SUMMARY_MAX_DEPTH + 1} to {SUMMARY_MAX_DEPTH + 3} "
            f"nest deeper than {SUMMARY_MAX_DEPTH} levels; an import holds at most "
            f"{MAX_IMPORT_DEPTH}): left out",
        ),
        *(
            Skipped(f"p{i}.md", f"{limit} (listed in SUMMARY.md too deep to import): left out")
            for i in range(SUMMARY_MAX_DEPTH, SUMMARY_MAX_DEPTH + 3)
        ),
        Skipped(
            f"p{MAX_IMPORT_DEPTH}.md",
            f"{limit} (it would be {MAX_IMPORT_DEPTH + 1} levels deep; an import holds at most "
            f"{MAX_IMPORT_DEPTH}): left out",
        ),
    )


def test_a_folder_reports_what_no_zip_holds(tmp_path: Path) -> None:
    """Links to folders are not followed (they may lead anywhere, or in a circle), special files
    are not read (a pipe would never end) and broken links cannot be: each is reported."""
    root = write_folder(tmp_path / "docs", {"README.md": "# Home\n", "guide/a.md": "# A\n"})
    (root / "shared").symlink_to(root / "guide", target_is_directory=True)
    (root / "gone.md").symlink_to(tmp_path / "nowhere.md")
    os.mkfifo(root / "pipe.md")
    imported = from_folder(root)
    assert [(p.ref, p.parent, p.title) for p in imported.pages] == [
        ("p1", None, "Home"),
        ("p2", None, "Guide"),
        ("p3", "p2", "A"),
    ]
    assert (imported.total, imported.imported) == (5, 2)
    assert imported.skipped == (
        Skipped("shared/", "a link to a folder: not followed"),
        Skipped("gone.md", "cannot be read: No such file or directory"),
        Skipped("pipe.md", "not a regular file"),
    )


def test_a_limit_refusal_pickles_whole() -> None:
    """It may be raised in an offload worker and read in the API process."""
    with pytest.raises(OverLimit) as info:
        from_markdown(b"a" * (MAX_MARKDOWN_BYTES + 1), "big.md")
    again = pickle.loads(pickle.dumps(info.value))
    assert (str(again), again.limit, again.reason()) == (
        str(info.value),
        "page size",
        f"over the page size limit (markdown is {MAX_MARKDOWN_BYTES + 1} bytes; a page holds "
        f"at most {MAX_MARKDOWN_BYTES}): left out",
    )
    assert str(again) == (
        f"big.md: markdown is {MAX_MARKDOWN_BYTES + 1} bytes; a page holds at most "
        f"{MAX_MARKDOWN_BYTES}"
    )


def test_links_to_nothing_are_named_up_to_twenty_a_page() -> None:
    links = "".join(f"[n{i}](gone/{i}.md) " for i in range(23))
    imported = from_zip(make_zip({"README.md": f"# Home\n\n{links}\n"}))
    assert [s.reason for s in imported.skipped[-2:]] == [
        "links to 'gone/19.md', which is no page or image of the import: left as written",
        "links to 3 more targets that are not in the import: left as written",
    ]
    assert len(imported.skipped) == 21
    assert {s.kind for s in imported.skipped} == {"unresolved"}


def test_links_left_as_written_when_rewriting_them_would_pass_a_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ref can be longer than the path it replaces: a page just within the size limit would
    then pass it, and the editor refuse the whole import. Its links stay as written instead."""
    from docshelf.document import markdown as md
    from docshelf.imports import convert

    monkeypatch.setattr(md, "MAX_MARKDOWN_BYTES", 1000)
    monkeypatch.setattr(convert, "MAX_MARKDOWN_BYTES", 1000)
    near = "[b](b) " * 10 + "x" * (1000 - 70 - 1) + "\n"
    assert len(near) == 1000
    imported = from_zip(make_zip({"a.md": near, "b.md": "# B\n", "c.md": "[b](b)\n"}))
    assert [(p.title, p.markdown) for p in imported.pages] == [
        ("A", near),
        ("B", ""),
        ("C", "[b](./p2)\n"),
    ]
    assert imported.skipped == (
        Skipped(
            "a.md",
            "links to other pages left as written: rewritten, the page is over the page size limit",
            "approximated",
        ),
    )


def test_a_folder_page_over_a_limit_stays_as_an_empty_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its pages still need a parent (and links to it a target); a page with nothing below it
    over a limit is left out."""
    from docshelf.document import markdown as md
    from docshelf.imports import convert

    monkeypatch.setattr(md, "MAX_MARKDOWN_BYTES", 100)
    monkeypatch.setattr(convert, "MAX_MARKDOWN_BYTES", 100)
    big = "# Guide\n\n" + "x" * 100 + "\n"
    imported = from_zip(
        make_zip(
            {
                "README.md": "# Home\n\n[guide](guide/) [big](big.md)\n",
                "big.md": big,
                "guide/README.md": big,
                "guide/a.md": "# A\n\n[up](README.md)\n",
            }
        )
    )
    assert [(p.ref, p.parent, p.title, p.markdown) for p in imported.pages] == [
        ("p1", None, "Home", "[guide](./p2) [big](big.md)\n"),
        ("p2", None, "Guide", ""),
        ("p3", "p2", "A", "[up](./p2)\n"),
    ]
    assert (imported.total, imported.imported) == (4, 2)
    over = "over the page size limit (markdown is 110 bytes; a page holds at most 100)"
    assert imported.skipped == (
        Skipped("big.md", f"{over}: left out"),
        Skipped("guide/README.md", f"{over}: imported as an empty page holding the pages below it"),
        Skipped(
            "README.md",
            "links to 'big.md', which is no page or image of the import: left as written",
            "unresolved",
        ),
    )
