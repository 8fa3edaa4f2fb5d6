"""Reusable contents: a titled markdown body kept in a revision's third map and shown by every
page whose text holds `{% include "<id>" %}` (GitBook's JSON block `reusable-content`).

Stored page texts always name a reusable content by id, as links name pages by id, so a rename
never breaks a page; a write may also name it by a ref of its batch or by GitBook Git Sync's
path `.gitbook/includes/<slug>.md` (the slug of its title), both turned into the id.
"""

from __future__ import annotations

import posixpath
from typing import Any

from docshelf.content.tree.snapshot import Record, Snapshot
from docshelf.document.model import INCLUDE_LINE, document_parser, include_tag

INCLUDES_DIR = ".gitbook/includes"


def includes(text: str) -> list[tuple[int, str]]:
    """The include tags of a text as the document parser reads them: (line index, target).
    A tag inside code is text, not an include."""
    if "include" not in text or "{%" not in text:
        return []
    out = []
    for token in document_parser().parse(text):
        if token.type == "gitbook_tag" and token.meta.get("name") == "include" and token.map:
            out.append((token.map[0], token.meta["attrs"]["src"]))
    return out


def rewrite(text: str, targets: dict[str, str]) -> str:
    """`text` with the include tags whose target is in `targets` naming the new target."""
    found = [(line, t) for line, t in includes(text) if t in targets and targets[t] != t]
    if not found:
        return text
    lines = text.split("\n")
    for index, target in found:
        line = lines[index]
        match = INCLUDE_LINE.search(line)
        if match is not None:
            tag = include_tag(targets[target])
            lines[index] = line[: match.start()] + tag + line[match.end() :]
    return "\n".join(lines)


def git_slug(path: str) -> str | None:
    """The slug a Git Sync include path names (`../.gitbook/includes/intro.md` → `intro`)."""
    if not path.endswith(".md"):
        return None
    folder, name = posixpath.split(path[: -len(".md")])
    if not name or not (folder == INCLUDES_DIR or folder.endswith("/" + INCLUDES_DIR)):
        return None
    return name


async def expand(snap: Snapshot, text: str) -> str:
    """`text` with each include line replaced by the reusable content's markdown (under the
    same container prefix, `> ` in a quote), for the readers that render HTML. An include of
    something the revision does not hold shows nothing."""
    found = includes(text)
    if not found:
        return text
    records = await snap.reusables({t for _, t in found})
    bodies = await snap.markdowns({r["markdown"] for r in records.values() if r.get("markdown")})
    lines = text.split("\n")
    for index, target in reversed(found):
        line = lines[index]
        match = INCLUDE_LINE.search(line)
        if match is None:
            continue
        prefix = line[: match.start()]
        record = records.get(target)
        body = bodies.get(record.get("markdown") or "", "") if record else ""
        inner = body.rstrip("\n").split("\n") if body.strip() else []
        lines[index : index + 1] = [(prefix + part) if part else prefix.rstrip() for part in inner]
    return "\n".join(lines)


def present(record: Record) -> dict[str, Any]:
    """GitBook's RevisionReusableContent (and ChangedRevisionReusableContent, the same fields):
    `document` names the body (its text object's hash), absent when the body is empty."""
    out: dict[str, Any] = {"id": record["id"], "title": record["title"]}
    if record.get("markdown"):
        out["document"] = record["markdown"]
    return out
