"""Real projects' documentation (tests/data/corpus, see its README.md and each SOURCE.md)
imported through HTTP as a user would, one per kind: mkdocs with the Material theme, Docusaurus
with MDX and sidebars.js, a GitBook Git Sync repository, a plain folder with GitHub alerts, and a
Word document. Each imported space is compared with references this file computes from the
source files themselves, by each tool's own rules, never from Docshelf's output: page count,
navigation (titles and order, two levels), hints and their styles, tabs, images arriving as
space files and shown, code blocks' languages, links between pages, and no markup shown as
text."""

from __future__ import annotations

import io
import json
import posixpath
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests.test_import import Files, allow_loopback, setup, site

__all__ = ["allow_loopback", "site"]  # fixtures, used by name

JSON = dict[str, Any]
CORPUS = Path(__file__).parent / "data" / "corpus"

# -- reading the sources (the references) ---------------------------------------------------------

FENCE = re.compile(r"^(?P<indent>\s*(?:>\s*)?)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s{]*)")
IMAGE = re.compile(
    r"!\[[^\]]*\]\(\s*<?([^)\s>]+)|<img\b[^>]*?\bsrc=[\"']([^\"']+)"
    r"|useBaseUrl\(\s*['\"]([^'\"]+)"
)
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)")
# GitHub's alert types, mkdocs' and Docusaurus' admonition types as GitBook hint styles: GitHub
# draws NOTE blue (info), TIP green (success), IMPORTANT purple (no GitBook colour: success, as
# crucial-to-succeed), WARNING yellow (warning), CAUTION red (danger).
ALERTS = {"note": "info", "tip": "success", "important": "success", "warning": "warning"}
ALERTS |= {"caution": "danger"}
# mkdocs-material's types (hint is its alias of tip) and Docusaurus' in GitBook's styles.
ADMONITIONS = {"note": "info", "info": "info", "tip": "success", "hint": "success"}
ADMONITIONS |= {"warning": "warning", "danger": "danger", "caution": "warning"}
ADMONITIONS |= {"important": "success"}
GITHUB_ALERT = re.compile(r"^\s*>\s*\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$", re.I)
MKDOCS_ADMONITION = re.compile(r"^\s*(!!!|\?\?\?\+?)\s+(\w+)")
GITBOOK_HINT = re.compile(r'^\s*\{%\s*hint\s+style="(\w+)"')
DOCUSAURUS_ADMONITION = re.compile(r"^\s*:::(\w+)")
TAB_GROUP = re.compile(r"^\s*(<Tabs\b|\{%\s*tabs\s*%\}|===\s+\")")
# What a reader must never see as text: tags, comments, template tags, alert markers,
# admonition fences.
MARKUP = re.compile(
    r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|<!--|-->|\{%|%\}|\[!(?:NOTE|TIP|IMPORTANT|WARNING"
    r"|CAUTION)\]|^\s*(?::::|!!!|\?\?\?)",
    re.M,
)


def outside_code(text: str) -> list[str]:
    """The lines of a page outside its fenced code."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m is not None:
            fence = m.group("fence")
            continue
        if fence is not None:
            if line.strip().lstrip(">").strip().startswith(fence):
                fence = None
            continue
        lines.append(line)
    return lines


def languages(text: str) -> Counter[str]:
    """Each fenced code block's language, as its opening fence names it."""
    found: Counter[str] = Counter()
    fence: str | None = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m is not None:
            fence = m.group("fence")
            if m.group("info"):
                found[m.group("info").lower()] += 1
        elif fence is not None and line.strip().lstrip(">").strip().startswith(fence):
            fence = None
    return found


def hint_styles(text: str) -> list[str]:
    styles: list[str] = []
    for line in outside_code(text):
        if m := GITHUB_ALERT.match(line):
            styles.append(ALERTS[m.group(1).lower()])
        elif (m := MKDOCS_ADMONITION.match(line)) and m.group(1) == "!!!":
            styles.append(ADMONITIONS.get(m.group(2).lower(), "info"))
        elif m := GITBOOK_HINT.match(line):
            styles.append(m.group(1))
        elif (m := DOCUSAURUS_ADMONITION.match(line)) and m.group(1) != "details":
            styles.append(ADMONITIONS.get(m.group(1).lower(), "info"))
    return styles


def tab_groups(text: str) -> int:
    count, inside = 0, False
    for line in outside_code(text):
        if TAB_GROUP.match(line):
            if not (inside and line.strip().startswith("===")):
                count += 1
            inside = line.strip().startswith("===")
        elif line.strip() and not line.startswith((" ", "\t")):
            inside = False
    return count


def local(target: str) -> bool:
    return not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//|^#", target)


def resolve(root: Path, page: Path, target: str, served: dict[str, Path]) -> Path | None:
    """Where a relative link of `page` leads among the source's files, as the tool serves them:
    the file, the file without its extension, a folder's README.md/index.md, or (`served`) a
    path a site serves a file at."""
    raw = target.split("#", 1)[0].split("?", 1)[0]
    if not raw:
        return None
    bases = [root] if raw.startswith("/") else [page.parent, page.parent / page.stem]
    for base in bases:
        joined = Path(posixpath.normpath(str(base / raw.lstrip("/"))))
        for candidate in (
            joined,
            joined.with_name(joined.name + ".md"),
            joined.with_name(joined.name + ".mdx"),
            joined / "README.md",
            joined / "index.md",
        ):
            if candidate.is_file() and candidate.is_relative_to(root):
                return candidate
        rel = joined.relative_to(root) if joined.is_relative_to(root) else None
        if rel is not None and str(rel) in served:
            return served[str(rel)]
    return None


def first_heading(text: str) -> str | None:
    for line in outside_code(text):
        if m := re.match(r"^#\s+(.+?)\s*#*\s*$", line):
            return re.sub(r"\s*<a\b[^>]*>\s*</a>\s*$", "", m.group(1))
    return None


def front_matter(text: str) -> dict[str, Any]:
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 4)
    data = yaml.safe_load(text[4:end]) if end > 0 else None
    return data if isinstance(data, dict) else {}


@dataclass
class Reference:
    """What the source shows, page by page in navigation order."""

    pages: list[Path] = field(default_factory=list)  # the markdown files that are pages
    nav: list[tuple[str, list[str]]] = field(default_factory=list)  # titles, two levels
    images: set[Path] = field(default_factory=set)  # image files pages show
    served: dict[str, Path] = field(default_factory=dict)  # URL paths to files
    top: Path | None = None  # the folder imported, when not the corpus folder itself


def page_facts(ref: Reference, root: Path) -> tuple[dict[Path, Any], Counter[str]]:
    """Per page: hint styles, tab groups, images shown, links to other pages; all languages."""
    facts: dict[Path, Any] = {}
    langs: Counter[str] = Counter()
    for page in ref.pages:
        text = page.read_text()
        langs += languages(text)
        lines = "\n".join(outside_code(text))
        shown = [
            found
            for m in IMAGE.finditer(lines)
            if local(t := m.group(1) or m.group(2) or "/" + m.group(3))
            and (found := resolve(ref.top or root, page, t, ref.served)) is not None
        ]
        ref.images |= set(shown)
        linked = [
            found
            for m in LINK.finditer(lines)
            if local(m.group(1))
            and (found := resolve(ref.top or root, page, m.group(1), ref.served)) in ref.pages
        ]
        facts[page] = (hint_styles(text), tab_groups(text), len(shown), len(linked))
    return facts, langs


# -- each tool's navigation, read from its own files --------------------------------------------


def mkdocs_reference(root: Path) -> Reference:
    config = yaml.safe_load((root / "mkdocs.yml").read_text())
    docs = root / config.get("docs_dir", "docs")
    ref = Reference()
    for entry in config["nav"]:
        ((title, value),) = entry.items()
        if isinstance(value, str):
            ref.pages.append(docs / value)
            ref.nav.append((title, []))
        else:
            children = []
            for child in value:
                ((child_title, target),) = child.items()
                ref.pages.append(docs / target)
                children.append(child_title)
            ref.nav.append((title, children))
    return ref


def js_object(text: str) -> Any:
    """A sidebars.js that is one object literal (as this corpus' is) as JSON: keys quoted,
    strings in double quotes, trailing commas dropped."""
    body = text[text.index("=") + 1 : text.rindex("}") + 1]
    body = re.sub(r"//[^\n]*", "", body)
    body = re.sub(r"'([^']*)'", lambda m: json.dumps(m.group(1)), body)
    body = re.sub(r"([{,]\s*)([A-Za-z_]\w*)\s*:", r'\1"\2":', body)
    body = re.sub(r",(\s*[}\]])", r"\1", body)
    return json.loads(body)


def docusaurus_reference(root: Path) -> Reference:
    docs = root / "docs"
    by_id: dict[str, Path] = {}
    for path in docs.rglob("*.md*"):
        meta = front_matter(path.read_text())
        doc_id = meta.get("id") or path.stem
        by_id[str(path.parent.relative_to(docs) / doc_id).removeprefix("./")] = path

    def title(path: Path, label: str | None = None) -> str:
        text = path.read_text()
        meta = front_matter(text)
        found = label or meta.get("title") or first_heading(text) or meta.get("sidebar_label")
        return str(found or path.stem)

    ref = Reference()
    ref.served = {
        str(p.relative_to(root / "static")): p for p in (root / "static").rglob("*") if p.is_file()
    }
    # static/ is served at the site's root: a page's ../static/img/a.png is /img/a.png.
    ref.served |= {f"static/{k}": v for k, v in ref.served.items()}
    ((_, items),) = js_object((root / "sidebars.js").read_text()).items()
    for item in items:
        if item["type"] == "doc":
            ref.pages.append(by_id[item["id"]])
            ref.nav.append((title(by_id[item["id"]], item.get("label")), []))
        else:
            children = [by_id[i] for i in item["items"]]
            ref.pages.extend(children)
            ref.nav.append((item["label"], [title(c) for c in children]))
    return ref


def summary_reference(root: Path) -> Reference:
    settings = yaml.safe_load((root / ".gitbook.yaml").read_text())
    docs = root / settings.get("root", ".")
    summary = (docs / settings["structure"]["summary"]).read_text()
    ref = Reference()
    group: list[str] | None = None
    for line in summary.split("\n"):
        if m := re.match(r"^##\s+(.+)$", line):
            group = []
            ref.nav.append((m.group(1).strip(), group))
        elif m := re.match(r"^[-*]\s+\[([^\]]+)\]\(([^)]+)\)", line):
            ref.pages.append(docs / m.group(2))
            if group is None:
                ref.nav.append((m.group(1), []))
            else:
                group.append(m.group(1))
    return ref


def folder_reference(root: Path) -> Reference:
    """A plain folder as GitBook and GitHub list it: the README first, then the files by name,
    each titled by its first heading."""
    (docs,) = [p for p in root.iterdir() if p.is_dir()]
    files = sorted(docs.glob("*.md"), key=lambda p: (p.name != "README.md", p.name.casefold()))
    # An archive of one folder is imported from inside it: links leaving it lead nowhere.
    ref = Reference(pages=files, top=docs)
    ref.nav = [(first_heading(p.read_text()) or p.stem, []) for p in files]
    return ref


# -- reading the imported space -----------------------------------------------------------------


def walk(node: Any, code: bool = False) -> Any:
    """Every (node, inside code) of a document."""
    if isinstance(node, dict):
        yield node, code
        code = code or node.get("type") == "code"
        for value in node.values():
            if isinstance(value, list | dict):
                yield from walk(value, code)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item, code)


@dataclass
class Shown:
    hints: list[str]
    tabs: int
    images: int
    links: int
    languages: Counter[str]
    markup: list[str]


def shown(document: JSON) -> Shown:
    hints: list[str] = []
    languages_: Counter[str] = Counter()
    markup: list[str] = []
    images = links = tabs = 0
    previous: str | None = None
    for block in document["nodes"]:
        # A hint split around its code blocks (GitBook's hints hold none) is one hint.
        kind = block["type"]
        if kind == "hint" and previous == "hint-code":
            previous = "hint"
        elif kind == "hint":
            hints.append(block["data"]["style"])
            previous = "hint"
        elif kind == "code" and previous in ("hint", "hint-code"):
            previous = "hint-code"
        else:
            previous = None
    for node, in_code in walk(document["nodes"]):
        kind = node.get("type") if node.get("object") in ("block", "inline") else None
        if kind == "tabs":
            tabs += 1
        elif kind == "code":
            if node["data"].get("syntax"):
                languages_[node["data"]["syntax"].lower()] += 1
        elif kind in ("image", "inline-image") and node["data"]["ref"]["kind"] == "file":
            images += 1
        elif kind == "link" and node["data"]["ref"]["kind"] in ("page", "anchor"):
            links += node["data"]["ref"].get("page") is not None
        coded = in_code or any(m["type"] == "code" for m in node.get("marks", []))
        if node.get("object") == "leaf" and not coded and MARKUP.search(node["text"]):
            markup.append(node["text"][:120])
    return Shown(hints, tabs, images, links, languages_, markup)


def zipped(root: Path) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name != "SOURCE.md":
                archive.write(path, path.relative_to(root).as_posix())
    return out.getvalue()


async def imported(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], name: str, source: str
) -> tuple[JSON, list[JSON], dict[str, JSON], Any]:
    base, files = site
    sid, _admin, editor, reader = await setup(client, db)
    root = CORPUS / name
    if source == "zip":
        files[f"/{name}.zip"] = ("application/zip", zipped(root))
        url = f"{base}/{name}.zip"
    else:
        (doc,) = root.glob("*.docx")
        ctype = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        files[f"/{doc.name}"] = (ctype, doc.read_bytes())
        url = f"{base}/{doc.name}"
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"url": url, "source": source},
        headers=editor.headers,
    )
    assert r.status_code == 201, r.text
    result: JSON = r.json()
    r = await client.get(f"/v1/spaces/{sid}/content/pages", headers=reader.headers)
    pages: list[JSON] = r.json()["pages"]
    documents: dict[str, JSON] = {}

    async def read(page: JSON) -> None:
        if page["type"] == "document":
            r = await client.get(
                f"/v1/spaces/{sid}/content/page/{page['id']}",
                params={"format": "document"},
                headers=reader.headers,
            )
            assert r.status_code == 200, r.text
            documents[page["id"]] = r.json()["document"]
        for child in page.get("pages", []):
            await read(child)

    for page in pages:
        await read(page)
    r = await client.get(f"/v1/spaces/{sid}/content/files", headers=reader.headers)
    assert r.status_code == 200, r.text
    return result, pages, documents, r.json()


def documents_in_order(pages: list[JSON]) -> list[JSON]:
    out: list[JSON] = []
    for page in pages:
        if page["type"] == "document":
            out.append(page)
        out.extend(documents_in_order(page.get("pages", [])))
    return out


def two_levels(pages: list[JSON]) -> list[tuple[str, list[str]]]:
    return [(p["title"], [c["title"] for c in p.get("pages", [])]) for p in pages]


REFERENCES = {
    "httpx-mkdocs": ("mkdocs", mkdocs_reference),
    "ynab-docusaurus": ("docusaurus", docusaurus_reference),
    "translatable-gitbook": ("gitbook", summary_reference),
    "ollama-folder": ("folder", folder_reference),
}


@pytest.mark.parametrize("name", REFERENCES)
async def test_a_real_project_arrives_as_the_source_shows_it(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    site: tuple[str, Files],
    allow_loopback: None,
    name: str,
) -> None:
    kind, read_reference = REFERENCES[name]
    root = CORPUS / name
    ref = read_reference(root)
    facts, langs = page_facts(ref, root)
    result, pages, documents, files = await imported(client, db, site, name, "zip")
    assert result["detected"] == kind
    # Navigation: titles and order, two levels; every source page is a page.
    assert two_levels(pages) == ref.nav
    in_order = documents_in_order(pages)
    assert len(in_order) == len(ref.pages)
    # Images: each image a page shows arrived as a space file.
    assert sorted(f["name"] for f in files["items"]) == sorted(p.name for p in ref.images)
    total = Counter[str]()
    for page, source in zip(in_order, ref.pages, strict=True):
        seen = shown(documents[page["id"]])
        styles, tabs, images, links = facts[source]
        where = f"{source.relative_to(root)} ({page['title']})"
        assert seen.markup == [], where
        assert seen.hints == styles, where
        assert seen.tabs == tabs, where
        # An image shown only by a construct the import leaves out must be in the report.
        reported = {s["path"] for s in result["skipped"] if s["kind"] == "approximated"}
        assert seen.images == images or (
            seen.images < images and any(str(source).endswith("/" + p) for p in reported)
        ), where
        assert seen.links >= links, where  # a link written twice is two links
        total += seen.languages
    assert total == langs
    # The report names every file it did not carry over as it was.
    assert all(s["path"] and s["reason"] for s in result["skipped"])


async def test_a_real_word_document(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    root = CORPUS / "mammoth-docx"
    (doc,) = root.glob("*.docx")
    with zipfile.ZipFile(doc) as archive:
        media = [n for n in archive.namelist() if n.startswith("word/media/")]
        body = archive.read("word/document.xml").decode()
    words = re.sub(r"<[^>]+>", " ", body).split()
    result, pages, documents, files = await imported(client, db, site, "mammoth-docx", "docx")
    assert result["detected"] == "docx"
    assert [p["type"] for p in pages] == ["document"]
    assert len(files["items"]) == len(media)
    seen = shown(documents[pages[0]["id"]])
    assert seen.markup == []
    assert seen.images == len(media)
    text = " ".join(
        node["text"] for node, _ in walk(documents[pages[0]["id"]]) if node.get("object") == "leaf"
    )
    assert all(word in text or word in pages[0]["title"] for word in words)


async def test_a_real_project_through_the_cli_keeps_its_images_and_says_what_it_changed(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    # The CLI reads a folder: GitBook's .gitbook/assets arrive as files, and every entry of the
    # report is printed with its file and reason, as the API answers it.
    import asyncio
    import shutil

    from click.testing import CliRunner

    from docshelf.cli.main import main
    from docshelf.imports.convert import from_folder

    sid, admin, *_ = await setup(client, db)
    for name in ("translatable-gitbook", "ynab-docusaurus"):
        folder = tmp_path / name
        shutil.copytree(CORPUS / name, folder, ignore=shutil.ignore_patterns("SOURCE.md"))
        report = from_folder(folder).skipped
        env = {"DOCSHELF_DATABASE_URL": settings.resolved_database_url}
        args = ["--data-dir", str(settings.data_dir), "import", sid, str(folder)]
        result = await asyncio.to_thread(
            CliRunner().invoke, main, [*args, "--as", admin.email], env=env
        )
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        printed = [f"{s.kind} {s.path}: {s.reason}" for s in report]
        assert lines[2 : 2 + len(printed)] == printed, name
        assert not any(
            line.startswith(("skipped ", "approximated ")) for line in lines[2 + len(printed) :]
        )
    r = await client.get(f"/v1/spaces/{sid}/content/files", headers=admin.headers)
    names = sorted(f["name"] for f in r.json()["items"])
    # socialcard.png from .gitbook/assets, and the Docusaurus static/ images its pages show.
    ynab = CORPUS / "ynab-docusaurus"
    facts = docusaurus_reference(ynab)
    page_facts(facts, ynab)
    assert names == sorted(["socialcard.png", *(p.name for p in facts.images)])
