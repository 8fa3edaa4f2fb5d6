"""How close imports of real projects come to their source: the corpus of tests/data/corpus
(mkdocs-material, Docusaurus, GitBook Git Sync, a plain folder with GitHub alerts, a Word
document) converted as an import converts them, and compared with references computed from the
source files (the same readers as tests/test_import_corpus.py):

- navigation matched: two-level entries (title and place) equal to the tool's own navigation;
- markup shown as text: pages whose document shows a tag, comment, template tag or alert marker
  as text (outside code), and how many such texts;
- images carried: images the source pages show that arrived as files, and image nodes that
  show one of them;
- hints, tabs, code blocks with their language: source against import;
- the report: skipped / unresolved / approximated entries.

    PYTHONPATH=src .venv/bin/python benchmarks/imports_corpus.py

No database: conversion only (what the import then writes is the same pages and files).
"""

from __future__ import annotations

import re
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests.test_import_corpus import (  # noqa: E402
    CORPUS,
    REFERENCES,
    Reference,
    page_facts,
    shown,
    zipped,
)

from docshelf.document.model import markdown_to_document  # noqa: E402
from docshelf.imports.convert import from_zip  # noqa: E402
from docshelf.imports.service import convert  # noqa: E402

RUNS = 5
_FILE = re.compile(r"^\./f\d+$")
_PAGE = re.compile(r"^\./p\d+(#.*)?$")


def nav_of(pages: Any) -> list[tuple[str, list[str]]]:
    children: dict[str | None, list[Any]] = {}
    for page in pages:
        children.setdefault(page.parent, []).append(page)
    return [(p.title, [c.title for c in children.get(p.ref, [])]) for p in children.get(None, [])]


def matched(ours: list[tuple[str, list[str]]], theirs: list[tuple[str, list[str]]]) -> str:
    entries = sum(1 + len(kids) for _, kids in theirs)
    same = 0
    for (title, kids), (want, want_kids) in zip(ours, theirs, strict=False):
        same += title == want
        same += sum(a == b for a, b in zip(kids, want_kids, strict=False))
    return f"{same}/{entries}"


def document_facts(markdown: str) -> tuple[Any, int, int]:
    """The shown facts of a page, and its image and page-link nodes resolved by the import."""
    document = markdown_to_document(markdown)
    images = links = 0

    def walk(node: Any) -> None:
        nonlocal images, links
        if isinstance(node, dict):
            kind = node.get("type") if node.get("object") in ("block", "inline") else None
            ref = (node.get("data") or {}).get("ref") or {}
            url = ref.get("url", "") if ref.get("kind") == "url" else ""
            if kind in ("image", "inline-image") and _FILE.match(url):
                images += 1
            elif kind == "link" and _PAGE.match(url):
                links += 1
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(document)
    return shown(document), images, links


def row(name: str) -> dict[str, Any]:
    kind, read = REFERENCES[name]
    root = CORPUS / name
    ref: Reference = read(root)
    facts, languages = page_facts(ref, root)
    data = zipped(root)  # as the tests import it: the corpus' SOURCE.md left out
    took = float("inf")
    for _ in range(RUNS):  # the best of a few: the machine is shared
        started = time.perf_counter()
        imported = from_zip(data)
        took = min(took, time.perf_counter() - started)
    documents = [p for p in imported.pages if p.kind == "document"]
    markup_pages = markup_texts = images_shown = hints = tabs = 0
    langs: Counter[str] = Counter()
    for page in documents:
        seen, images, _ = document_facts(page.markdown)
        markup_pages += bool(seen.markup)
        markup_texts += len(seen.markup)
        images_shown += images
        hints += len(seen.hints)
        tabs += seen.tabs
        langs += seen.languages
    counts = Counter(s.kind for s in imported.skipped)
    return {
        "project": f"{name} ({kind}, read as {imported.detected})",
        "pages": f"{len(documents)}/{len(ref.pages)}",
        "navigation matched": matched(nav_of(imported.pages), ref.nav),
        "markup shown as text": f"{markup_texts} on {markup_pages} pages",
        "images carried": f"{len(imported.files)}/{len(ref.images)} files, "
        f"{images_shown}/{sum(f[2] for f in facts.values())} shown",
        "hints": f"{hints}/{sum(len(f[0]) for f in facts.values())}",
        "tabs": f"{tabs}/{sum(f[1] for f in facts.values())}",
        "code languages": f"{sum((langs & languages).values())}/{sum(languages.values())}",
        "report": f"{counts['skipped']} skipped, {counts['unresolved']} unresolved, "
        f"{counts['approximated']} approximated",
        "convert (best of 5)": f"{took * 1000:.0f} ms",
    }


def word_row() -> dict[str, Any]:
    (doc,) = (CORPUS / "mammoth-docx").glob("*.docx")
    with zipfile.ZipFile(doc) as archive:
        media = [n for n in archive.namelist() if n.startswith("word/media/")]
    took = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter()
        imported = convert("docx", doc.read_bytes(), doc.name)
        took = min(took, time.perf_counter() - started)
    seen, images, _ = document_facts(imported.pages[0].markdown)
    return {
        "project": "mammoth-docx (docx)",
        "pages": f"{len(imported.pages)}/1",
        "navigation matched": "-",
        "markup shown as text": f"{len(seen.markup)} on {int(bool(seen.markup))} pages",
        "images carried": f"{len(imported.files)}/{len(media)} files, {images}/{len(media)} shown",
        "hints": "-",
        "tabs": "-",
        "code languages": "-",
        "report": f"{len(imported.skipped)} entries",
        "convert (best of 5)": f"{took * 1000:.0f} ms",
    }


def main() -> None:
    rows = [row(name) for name in REFERENCES] + [word_row()]
    for r in rows:
        print(r["project"])
        for key, value in r.items():
            if key != "project":
                print(f"  {key:22} {value}")


if __name__ == "__main__":
    main()
