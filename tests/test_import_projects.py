"""Importing whole projects over HTTP and through the CLI: an mkdocs site, a Docusaurus site, a
GitBook repository, a plain folder and a Word document, each written here with every construct
the importer maps. Checked: the detected kind, the tree (titles, order, kinds), hints, tabs and
expandables, front matter, the honest report, and that the space's links listing has nothing
broken."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.cli.main import main
from docshelf.config import Settings
from docshelf.imports.convert import ConversionError, Skipped, from_zip
from tests.test_import import Files, allow_loopback, setup, site, tree, zip_of

__all__ = ["allow_loopback", "site"]  # fixtures, used by name
UNSUPPORTED = "unsupported file type: .json files are not imported, only markdown and images"

MKDOCS_YML = """\
site_name: Example
docs_dir: source
theme:
  name: material
markdown_extensions:
  - pymdownx.superfences:
      custom_fences:
        - name: mermaid
          class: mermaid
          format: !!python/name:pymdownx.superfences.fence_code_format
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
nav:
  - Home: index.md
  - about.md
  - Guide:
      - guide/index.md
      - Install: guide/install.md
      - guide/use.md
  - Reference:
      - ref/api.md
      - - ref/errors.md
  - Blog: https://blog.example.com
"""

MKDOCS = {
    "mkdocs.yml": MKDOCS_YML,
    "README.md": "# The repository\n",
    "snippets/abbr.md": "Shared *snippet*.\n",
    "source/index.md": (
        "---\ndescription: Where to start\n---\n\n# Welcome { #welcome }\n\n"
        "Read [install](guide/install.md#linux), [use](guide/use/) and [about](about).\n\n"
        '!!! note "Read this"\n    Noted.\n\n'
        "??? tip\n    Folded.\n\n"
        "/// warning | Careful\nWarned.\n///\n\n"
        '=== "Linux"\n    apt install x\n\n=== "macOS"\n    brew install x\n\n'
        '--8<-- "snippets/abbr.md"\n\n--8<-- "snippets/missing.md"\n\n'
        "![logo](img/logo.png)\n"
    ),
    "source/about.md": "# About { #about }\n\n## Team {#team .wide}\n\n[home](index.md)\n",
    "source/guide/index.md": "# The guide\n\nStart [here](install.md).\n",
    "source/guide/install.md": "# Install\n\n## Linux\n\n[back](../index.md)\n",
    "source/guide/use.md": "Use it, see [install](install/#linux) from its URL.\n",
    "source/ref/api.md": "# API\n\n!!! example\n    Call it.\n\n!!! custom\n    Odd.\n",
    "source/ref/errors.md": "# Errors\n",
    "source/orphan.md": "# Orphan\n\n[api](ref/api.md)\n",
    "source/img/logo.png": b"\x89PNG\r\n\x1a\n" + b"\0" * 16,
}


async def pages_of(client: httpx.AsyncClient, sid: str, who: Any) -> list[dict[str, Any]]:
    r = await client.get(f"/v1/spaces/{sid}/content/pages", headers=who.headers)
    listed: list[dict[str, Any]] = r.json()["pages"]
    return listed


def flat(pages: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for page in pages:
        out[page["title"]] = page["id"]
        out.update(flat(page.get("pages", [])))
    return out


async def body(client: httpx.AsyncClient, sid: str, page_id: str, who: Any) -> dict[str, Any]:
    r = await client.get(
        f"/v1/spaces/{sid}/content/page/{page_id}",
        params={"format": "markdown"},
        headers=who.headers,
    )
    assert r.status_code == 200, r.text
    page: dict[str, Any] = r.json()
    return page


async def links(client: httpx.AsyncClient, sid: str, who: Any) -> dict[str, Any]:
    r = await client.get(f"/v1/spaces/{sid}/links", headers=who.headers)
    listing: dict[str, Any] = r.json()
    return listing


async def import_url(
    client: httpx.AsyncClient, sid: str, who: Any, url: str, source: str
) -> dict[str, Any]:
    r = await client.post(
        f"/v1/spaces/{sid}/content/import", json={"url": url, "source": source}, headers=who.headers
    )
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


async def test_mkdocs_project(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    base, files = site
    sid, _admin, editor, reader = await setup(client, db)
    files["/site.zip"] = (
        "application/zip",
        zip_of({f"site-main/{k}": v for k, v in MKDOCS.items()}),
    )
    result = await import_url(client, sid, editor, base + "/site.zip", "zip")
    nav = "mkdocs.yml's nav"
    assert result == {
        "revision": result["revision"],
        "detected": "mkdocs",
        "importedResources": 10,
        "totalResources": 11,
        "skipped": [
            {
                "path": "README.md",
                "reason": "outside source/, where mkdocs.yml's docs_dir starts",
                "kind": "skipped",
            },
            {
                "path": "index.md",
                "reason": "snippet include 'snippets/missing.md' not found: left out",
                "kind": "unresolved",
            },
            {
                "path": "ref/api.md",
                "reason": 'admonition type "custom" shown as an info hint',
                "kind": "approximated",
            },
            {
                "path": "orphan.md",
                "reason": f"not in {nav}: imported after its pages, at the top level",
                "kind": "approximated",
            },
        ],
        "skippedCounts": {"skipped": 1, "unresolved": 1, "approximated": 2},
    }
    pages = await pages_of(client, sid, reader)
    assert tree(pages) == [
        ("Home", "document", []),
        ("About", "document", []),
        ("Guide", "document", [("Install", "document", []), ("Use", "document", [])]),
        ("Reference", "group", [("API", "document", []), ("Errors", "document", [])]),
        # The nav's external entry is a link page, as GitBook makes one.
        ("Blog", "link", []),
        ("Orphan", "document", []),
    ]
    blog = next(p for p in pages if p["title"] == "Blog")
    assert (blog["href"], blog["target"]) == (
        "https://blog.example.com",
        {"kind": "url", "url": "https://blog.example.com"},
    )
    ids = flat(pages)
    home = await body(client, sid, ids["Home"], reader)
    assert home["description"] == "Where to start"
    text = home["markdown"]
    assert "{ #" not in text and "!!!" not in text and "===" not in text
    for part in (
        '{% hint style="info" %}\n**Read this**\n\nNoted.\n{% endhint %}',
        "<details>\n\n<summary>Tip</summary>\n\nFolded.\n\n</details>",
        '{% hint style="warning" %}\n**Careful**\n\nWarned.\n{% endhint %}',
        '{% tabs %}\n{% tab title="Linux" %}\napt install x\n{% endtab %}\n'
        '{% tab title="macOS" %}\nbrew install x\n{% endtab %}\n{% endtabs %}',
        "Shared *snippet*.",
    ):
        assert part in text, (part, text)
    about = (await body(client, sid, ids["About"], reader))["markdown"]
    assert about.startswith('## Team <a href="#team" id="team"></a>\n')
    api = (await body(client, sid, ids["API"], reader))["markdown"]
    assert '{% hint style="info" %}\n**Example**\n\nCall it.\n{% endhint %}' in api
    listing = await links(client, sid, reader)
    assert listing["stats"] == {"total": 7, "broken": {"total": 0, "changeRequest": 0}}
    assert {i["status"] for i in listing["items"]} == {"ok"}


DOCUSAURUS = {
    "docusaurus.config.js": "module.exports = {title: 'Site'};\n",
    "sidebars.js": "module.exports = {};\n",
    "blog/2024-01-01-hello.md": "# Hello\n",
    "docs/intro.md": (
        "---\nsidebar_position: 1\nslug: /\ntitle: Introduction\ndescription: First steps\n---\n\n"
        "See [install](./tutorial/install), [configure](/docs/tutorial/configure) and "
        "[the file](tutorial/01-install.md).\n\n"
        ":::tip[Pro tip]\nDo it.\n:::\n\n:::details Click me\nHidden.\n:::\n"
    ),
    "docs/zeta.md": "---\nsidebar_position: 2\nsidebar_label: Last words\n---\n\nNo heading.\n",
    "docs/tutorial/_category_.json": (
        '{"label": "Tutorial basics", "position": 3, '
        '"link": {"type": "generated-index", "description": "Learn the basics"}}'
    ),
    "docs/tutorial/01-install.md": "# Install\n\n:::danger\nHot.\n:::\n\n[home](/docs/)\n",
    "docs/tutorial/02-configure.mdx": (
        "---\nid: configure\ntitle: Configure it\n---\n\nimport Tabs from '@theme/Tabs';\n\n"
        "Back to [install](../tutorial/install).\n\n<Tabs>\n"
        '  <TabItem value="js" label="JavaScript">\n'
        "    const x = 1;\n  </TabItem>\n</Tabs>\n"
    ),
    "docs/advanced/_category_.yml": (
        "label: Advanced\nposition: 4\nlink:\n  type: doc\n  id: advanced/overview\n"
    ),
    "docs/advanced/overview.md": "# Overview\n\nOver [there](deep.md#part).\n",
    "docs/advanced/deep.md": "---\nsidebar_position: 1\n---\n# Deep\n\n## Part\n",
    "docs/advanced/alpha.md": "# Alpha\n",
}


async def test_docusaurus_project_through_the_cli(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    sid, admin, *_ = await setup(client, db)
    folder = tmp_path / "website"
    for name, content in DOCUSAURUS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content)
    env = {"DOCSHELF_DATABASE_URL": settings.resolved_database_url}
    result = await asyncio.to_thread(
        CliRunner().invoke,
        main,
        ["--data-dir", str(settings.data_dir), "import", sid, str(folder), "--as", admin.email],
        env=env,
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "Imported into revision" in lines[-1]
    assert lines[:5] == [
        "Detected: docusaurus",
        "8 pages and 0 files to import: 7 of 8 resources; 1 skipped, 0 unresolved, 2 approximated",
        "skipped blog/2024-01-01-hello.md: outside docs/, where Docusaurus' docs starts",
        "approximated sidebars.js: exports no sidebars that can be read as data: pages laid "
        "out by folder",
        "approximated tutorial/02-configure.mdx: MDX import left out: "
        "import Tabs from '@theme/Tabs';",
    ]
    pages = await pages_of(client, sid, admin)
    assert tree(pages) == [
        ("Introduction", "document", []),
        ("Last words", "document", []),
        (
            "Tutorial basics",
            "document",
            [("Install", "document", []), ("Configure it", "document", [])],
        ),
        ("Advanced", "document", [("Deep", "document", []), ("Alpha", "document", [])]),
    ]
    ids = flat(pages)
    intro = await body(client, sid, ids["Introduction"], admin)
    assert intro["description"] == "First steps"
    assert intro["markdown"].endswith(
        '{% hint style="success" %}\n**Pro tip**\n\nDo it.\n{% endhint %}\n\n'
        "<details>\n\n<summary>Click me</summary>\n\nHidden.\n\n</details>\n"
    )
    tutorial = await body(client, sid, ids["Tutorial basics"], admin)
    assert tutorial["description"] == "Learn the basics"
    configure = await body(client, sid, ids["Configure it"], admin)
    assert configure["markdown"].endswith(
        '{% tabs %}\n{% tab title="JavaScript" %}\nconst x = 1;\n{% endtab %}\n{% endtabs %}\n'
    )
    install = await body(client, sid, ids["Install"], admin)
    assert install["markdown"].startswith('{% hint style="danger" %}\nHot.\n{% endhint %}\n')
    listing = await links(client, sid, admin)
    assert listing["stats"] == {"total": 4, "broken": {"total": 0, "changeRequest": 0}}


async def test_gitbook_repository_and_plain_folder(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    base, files = site
    sid, _admin, editor, reader = await setup(client, db)
    files["/book.zip"] = (
        "application/zip",
        zip_of(
            {
                ".gitbook.yaml": "root: ./content/\nstructure:\n  summary: toc.md\n",
                "package.json": "{}",
                "content/toc.md": "# Contents\n\n* [Start](start.md)\n  * [Next](more/next.md)\n",
                "content/start.md": (
                    '# Start page\n\n{% hint style="info" %}\nKept.\n{% endhint %}\n\n'
                    "[next](more/next.md)\n"
                ),
                "content/more/next.md": "# Next page\n\n[start](../start.md)\n",
            }
        ),
    )
    files["/folder.zip"] = (
        "application/zip",
        zip_of(
            {
                "getting-started/install_guide.md": "No heading, [up](../README.md).\n",
                "getting-started/a.md": "---\norder: 1\n---\n# First { #first }\n",
                "README.md": "# Home\n\n[install](getting-started/install_guide)\n",
            }
        ),
    )
    book = await import_url(client, sid, editor, base + "/book.zip", "zip")
    assert (book["detected"], book["totalResources"], book["importedResources"]) == (
        "gitbook",
        3,  # .gitbook.yaml and toc.md say how to read the others, they are not counted
        2,
    )
    assert book["skipped"] == [
        {
            "path": "package.json",
            "reason": UNSUPPORTED,
            "kind": "skipped",
        }
    ]
    folder = await import_url(client, sid, editor, base + "/folder.zip", "zip")
    assert (folder["detected"], folder["skipped"]) == ("folder", [])
    pages = await pages_of(client, sid, reader)
    assert tree(pages) == [
        ("Start", "document", [("Next", "document", [])]),
        ("Home", "document", []),
        (
            "Getting started",
            "document",
            [("First", "document", []), ("Install guide", "document", [])],
        ),
    ]
    ids = flat(pages)
    start = (await body(client, sid, ids["Start"], reader))["markdown"]
    assert start.startswith('{% hint style="info" %}\nKept.\n{% endhint %}\n')
    listing = await links(client, sid, reader)
    assert listing["stats"] == {"total": 4, "broken": {"total": 0, "changeRequest": 0}}


def word_document() -> bytes:
    import docx
    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(picture, "PNG")
    document = docx.Document()
    document.add_paragraph("A preface before any heading.")
    document.add_heading("Overview", level=1)
    document.add_paragraph("The overview.")
    document.add_heading("Details", level=2)
    document.add_paragraph("Some details.")
    document.add_picture(io.BytesIO(picture.getvalue()))
    document.add_heading("Usage", level=1)
    document.add_paragraph("How to use it.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


async def test_word_document(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    base, files = site
    sid, _admin, editor, reader = await setup(client, db)
    ctype = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    files["/user-guide.docx"] = (ctype, word_document())
    result = await import_url(client, sid, editor, base + "/user-guide.docx", "docx")
    assert result == {
        "revision": result["revision"],
        "detected": "docx",
        "importedResources": 1,
        "totalResources": 1,
        "skipped": [],
        "skippedCounts": {"skipped": 0, "unresolved": 0, "approximated": 0},
    }
    pages = await pages_of(client, sid, reader)
    assert tree(pages) == [
        ("User guide", "document", []),
        ("Overview", "document", []),
        ("Usage", "document", []),
    ]
    ids = flat(pages)
    image = (await client.get(f"/v1/spaces/{sid}/content/files", headers=reader.headers)).json()[
        "items"
    ]
    assert [(f["name"], f["contentType"]) for f in image] == [("image1.png", "image/png")]
    overview = (await body(client, sid, ids["Overview"], reader))["markdown"]
    assert overview == (
        f"The overview.\n\n## Details\n\nSome details.\n\n![](/files/{image[0]['id']})\n"
    )
    assert (await body(client, sid, ids["User guide"], reader))["markdown"] == (
        "A preface before any heading.\n"
    )
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"url": base + "/user-guide.docx", "source": "zip"},
        headers=editor.headers,
    )
    assert r.status_code == 400
    files["/broken.docx"] = (ctype, b"PK\3\4 not really")
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"url": base + "/broken.docx", "source": "docx"},
        headers=editor.headers,
    )
    assert r.json() == {
        "error": {
            "code": 400,
            "message": "Cannot import this docx content: broken.docx is not a readable Word "
            "(.docx) document",
        }
    }


def test_mkdocs_without_nav_uses_folders_and_index_pages() -> None:
    imported = from_zip(
        zip_of(
            {
                "mkdocs.yml": "site_name: X\n",
                "docs/index.md": "# Home\n",
                "index.md": "# Not a page of the site\n",
                "docs/user-guide/index.md": "Guide without a heading.\n",
                "docs/user-guide/b.md": "# Bee\n",
                "docs/user-guide/a.md": "---\norder: 2\n---\n# Ay\n",
                "docs/api_reference/endpoints.md": "# Endpoints\n",
            }
        )
    )
    assert imported.detected == "mkdocs"
    assert [(p.ref, p.parent, p.title) for p in imported.pages] == [
        ("p1", None, "Home"),
        ("p2", None, "Api reference"),
        ("p3", "p2", "Endpoints"),
        ("p4", None, "User guide"),
        ("p5", "p4", "Ay"),
        ("p6", "p4", "Bee"),
    ]
    assert imported.skipped == (
        Skipped("index.md", "outside docs/, where mkdocs.yml's docs_dir starts"),
    )


def test_projects_that_cannot_be_read_are_refused() -> None:
    bad_yaml = zip_of({"mkdocs.yml": "- just a list\n", "docs/index.md": "# A\n"})
    with pytest.raises(ConversionError, match=r"mkdocs\.yml is not a YAML mapping of settings"):
        from_zip(bad_yaml)
    no_docs = zip_of({"mkdocs.yml": "docs_dir: site\n", "other/index.md": "# A\n"})
    with pytest.raises(ConversionError, match=r"no folder site/"):
        from_zip(no_docs)
    outside = zip_of({".gitbook.yaml": "root: ../elsewhere\n", "README.md": "# A\n"})
    with pytest.raises(ConversionError, match="points outside the project"):
        from_zip(outside)


def test_an_mkdocs_alias_bomb_is_refused_unread_and_reported() -> None:
    """A nav of a few lines whose aliases expand to half a million entries: refused while
    composed (its nav was walked for ~3 s into half a million duplicate entries, 25 s one
    level up), and the pages are imported by folder, the config reported as approximated."""
    lines = ["site_name: Bomb", "l0: &l0 [" + ", ".join(["index.md"] * 9) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, 6)]
    bomb = "\n".join([*lines, "nav: [*l5]"]) + "\n"
    imported = from_zip(zip_of({"mkdocs.yml": bomb, "docs/index.md": "# Home\n"}))
    assert imported.detected == "mkdocs"
    assert [(p.ref, p.parent, p.title) for p in imported.pages] == [("p1", None, "Home")]
    assert imported.skipped == (
        Skipped(
            "mkdocs.yml",
            "not read (more than 50000 nodes once YAML aliases are expanded): the pages under "
            "docs/ are imported by folder",
            "approximated",
        ),
    )
    # Other YAML of a project (front matter here) within the same bounds: left unread.
    front = "---\n" + "\n".join([*lines, "title: *l5"]) + "\n---\n# Page\n"
    imported = from_zip(zip_of({"mkdocs.yml": "site_name: X\n", "docs/index.md": front}))
    assert [p.title for p in imported.pages] == ["Page"]


def test_a_word_section_over_a_limit_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page per top-level heading: one over a limit is left out, named, and the others kept;
    a document that is all one page over it is refused."""
    import docx

    from docshelf.document import markdown as md
    from docshelf.imports.docx import convert_docx

    monkeypatch.setattr(md, "MAX_MARKDOWN_BYTES", 100)
    document = docx.Document()
    document.add_heading("Short", level=1)
    document.add_paragraph("Fits.")
    document.add_heading("Long", level=1)
    document.add_paragraph("x" * 200)
    out = io.BytesIO()
    document.save(out)
    imported = convert_docx(out.getvalue(), "guide.docx")
    assert [(p.title, p.markdown) for p in imported.pages] == [("Short", "Fits.\n")]
    assert imported.skipped == (
        Skipped(
            "guide.docx: Long",
            "over the page size limit (markdown is 201 bytes; a page holds at most 100): left out",
        ),
    )
    alone = docx.Document()
    alone.add_paragraph("x" * 200)
    out = io.BytesIO()
    alone.save(out)
    with pytest.raises(ConversionError, match=r"^guide\.docx: markdown is 201 bytes"):
        convert_docx(out.getvalue(), "guide.docx")


SIDEBARS_TS = """\
import type {SidebarsConfig} from '@docusaurus/plugin-content-docs';
// Read as data, never run: a call or a function is not data and is skipped.
const extra = ['reference/cli'];
const sidebars: SidebarsConfig = {
  guide: [
    'intro',
    {
      type: 'category',
      label: 'Getting started',
      link: {type: 'doc', id: 'start/index'},
      items: ['start/install', {type: 'doc', id: 'configure', label: 'Configure it'}],
    },
    {type: 'link', label: 'GitHub', href: 'https://github.com/example/site'},
    {type: 'link', label: 'Bad', href: 'javascript:alert(1)'},
    {type: 'html', value: '<hr/>'},
    'missing/doc',
    'intro',
  ],
  reference: {
    'Command line': [...extra, {type: 'autogenerated', dirName: 'reference/api'}],
  },
  computed: require('./generated'),
} satisfies SidebarsConfig;

export default sidebars;
"""


def test_docusaurus_sidebars_are_read_as_data_not_run() -> None:
    imported = from_zip(
        zip_of(
            {
                "docusaurus.config.ts": "export default {title: 'Site'};\n",
                "sidebars.ts": SIDEBARS_TS,
                "static/img/logo.png": b"\x89PNG\r\n\x1a\n",
                "docs/intro.md": "# Intro\n\n![Logo](/img/logo.png)\n",
                "docs/start/index.md": "# Start\n",
                "docs/start/01-install.md": (
                    "---\nslug: /setup\n---\n# Install\n\n[conf](configure)\n"
                ),
                "docs/02-configure.md": "---\ntitle: Configuration\n---\nText.\n",
                "docs/reference/cli.md": "# CLI\n",
                "docs/reference/api/_category_.json": '{"label": "Endpoints", "position": 1}',
                "docs/reference/api/b.md": "---\nsidebar_position: 1\n---\n# Bee\n",
                "docs/reference/api/a.md": "---\nsidebar_position: 2\nsidebar_label: Ay\n---\nA.\n",
                "docs/reference/api/deeper/c.md": "# Sea\n",
                "docs/orphan.md": "# Orphan\n",
            }
        )
    )
    assert imported.detected == "docusaurus"
    shown = [(p.ref, p.parent, p.title, p.kind, p.href) for p in imported.pages]
    assert shown == [
        ("p1", None, "Guide", "group", None),
        ("p2", "p1", "Intro", "document", None),
        ("p3", "p1", "Getting started", "document", None),
        ("p4", "p3", "Install", "document", None),
        ("p5", "p3", "Configure it", "document", None),
        ("p6", "p1", "GitHub", "link", "https://github.com/example/site"),
        ("p7", None, "Reference", "group", None),
        ("p8", "p7", "Command line", "document", None),
        ("p9", "p8", "CLI", "document", None),
        ("p10", "p8", "Bee", "document", None),
        ("p11", "p8", "Ay", "document", None),
        ("p12", "p8", "Deeper", "document", None),
        ("p13", "p12", "Sea", "document", None),
        ("p14", None, "Orphan", "document", None),
    ]
    by_ref = {p.ref: p for p in imported.pages}
    assert by_ref["p2"].markdown == "![Logo](./f1)\n"  # static/img is served at /img
    assert by_ref["p4"].markdown == "[conf](./p5)\n"
    assert [(f.ref, f.name) for f in imported.files] == [("f1", "logo.png")]
    assert imported.skipped == (
        Skipped("javascript:alert(1)", "in sidebars.ts: a link that runs a script: left out"),
        Skipped(
            "html item",
            "a sidebar item of type 'html' has no page: left out in sidebars.ts",
            "approximated",
        ),
        Skipped("missing/doc", "a doc id that names no doc: left out in sidebars.ts", "unresolved"),
        Skipped(
            "intro.md",
            "listed more than once: kept at its first place in sidebars.ts",
            "approximated",
        ),
        Skipped(
            "computed",
            "a sidebar of sidebars.ts that is not data but code, not run: left out",
            "approximated",
        ),
        Skipped(
            "orphan.md",
            "in no sidebar of sidebars.ts: imported after them, at the top level",
            "approximated",
        ),
    )
