"""What kind of project an archive or folder holds, and its page tree as that tool shows it.

- GitBook repository: `.gitbook.yaml` (`root`, `structure.summary`, `structure.readme`), then
  `SUMMARY.md` is the table of contents (convert.py reads it).
- mkdocs: `mkdocs.yml`; pages come from `docs_dir` (default `docs`) in the order of `nav`.
  A section's `index.md` or `README.md` is the section's page (mkdocs-material's
  navigation.indexes); a section without one is an empty page (a group at the top level).
  Pages left out of `nav` are still imported, after it, so links to them keep working; each is
  reported. Without `nav`, folders and their `index.md`/`README.md` are the tree, as mkdocs
  builds it.
- Docusaurus: `docusaurus.config.*`, `sidebars.*` or `_category_` files; pages come from
  `docs/`, titled by front matter `title` (else the first heading, else `sidebar_label`),
  ordered by `sidebar_position` and `_category_.json`/`.yml` (`label`, `position`, `link`).
  Links may use a page's URL (number prefixes dropped, `slug`, `id`).
- Plain folder: SUMMARY.md if there is one, else folders and their README.md files.

mkdocs and Docusaurus pages are read in their markdown dialect (dialects.py).
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Literal

from docshelf.document.limits import MAX_IMPORT_DEPTH, PAGE_DEPTH
from docshelf.document.markdown import is_external, link_path
from docshelf.imports.convert import (
    ConversionError,
    SkipKind,
    Skipped,
    _Archive,
    _Category,
    _Draft,
    _drop_deep_files,
    _emit_folder,
    _Folder,
    _folder_tree,
    _from_summary,
    _meta_text,
    _order,
    link_page,
    over_limit,
)
from docshelf.imports.dialects import humanize, load_yaml, read_yaml

__all__ = ["build"]

_MKDOCS = ("mkdocs.yml", "mkdocs.yaml")
_DOCUSAURUS = (
    "docusaurus.config.js",
    "docusaurus.config.ts",
    "docusaurus.config.mjs",
    "sidebars.js",
    "sidebars.ts",
    "sidebars.mjs",
    "sidebars.cjs",
    "sidebars.json",
)
_CATEGORY = ("_category_.json", "_category_.yml", "_category_.yaml")
_INDEXES = ("index.md", "README.md")
_NUMBER_PREFIX = re.compile(r"^\d+[-_. ]+(?=\S)")


def _config(arc: _Archive, names: tuple[str, ...]) -> str | None:
    return next((name for name in names if name in arc.configs), None)


def _detect(arc: _Archive) -> str:
    if ".gitbook.yaml" in arc.configs:
        return "gitbook"
    if any(p.lower() == "summary.md" for p in arc.texts):
        return "gitbook"
    if _config(arc, _MKDOCS):
        return "mkdocs"
    if _config(arc, _DOCUSAURUS) or any(posixpath.basename(p) in _CATEGORY for p in arc.configs):
        return "docusaurus"
    return "folder"


def build(arc: _Archive) -> str | None:
    """Fills `arc.drafts` as the detected tool lays the project out; the table of contents
    that was read, when it is a SUMMARY.md."""
    arc.kind = _detect(arc)
    own = {
        "gitbook": (".gitbook.yaml",),
        "mkdocs": _MKDOCS,
        "docusaurus": (*_DOCUSAURUS, *_CATEGORY),
    }.get(arc.kind, ())
    for path in sorted(arc.configs):
        if posixpath.basename(path) not in own:
            why = f"settings of another tool, unused in a {arc.kind} project"
            arc.skipped.append(Skipped(path, why))
            arc.total += 1
    if arc.kind == "gitbook":
        return _gitbook(arc)
    if arc.kind == "mkdocs":
        _mkdocs(arc)
    elif arc.kind == "docusaurus":
        _docusaurus(arc)
    else:
        arc.dialect = True
        _drop_deep_files(arc)
        _emit_folder(arc, _folder_tree(arc.texts), None)
    return None


def _reroot(arc: _Archive, root: str, why: str) -> None:
    """Keeps the pages and images under `root`, paths made relative to it; reports the rest."""
    root = posixpath.normpath(root.strip("/")) if root.strip("/ .") else ""
    if root.startswith(".."):
        raise ConversionError(f"{why} points outside the project")
    if not root:
        return
    prefix = root + "/"
    if not any(p.startswith(prefix) for p in (*arc.texts, *arc.images)):
        raise ConversionError(f"nothing to import: no folder {root}/ ({why})")
    for path in (*arc.texts, *arc.images):
        if not path.startswith(prefix):
            arc.skipped.append(Skipped(path, f"outside {root}/, where {why} starts"))
    # New tables rather than renaming in place: "docs/a.md" must not overwrite an "a.md" at
    # the top that is still to be reported.
    arc.texts = {p[len(prefix) :]: v for p, v in arc.texts.items() if p.startswith(prefix)}
    arc.images = {p[len(prefix) :]: v for p, v in arc.images.items() if p.startswith(prefix)}
    arc.data = {p[len(prefix) :]: v for p, v in arc.data.items() if p.startswith(prefix)}
    arc.root = prefix


# -- GitBook -------------------------------------------------------------------------------------


def _gitbook(arc: _Archive) -> str | None:
    settings = load_yaml(arc.configs.get(".gitbook.yaml", "")) or {}
    if not isinstance(settings, dict):
        settings = {}
    root = settings.get("root")
    if isinstance(root, str):
        _reroot(arc, root, ".gitbook.yaml's root")
    structure = settings.get("structure")
    structure = structure if isinstance(structure, dict) else {}
    wanted = structure.get("summary")
    summary = None
    if isinstance(wanted, str):
        summary = link_path(wanted, "")
        if summary not in arc.texts:
            summary = None
    if summary is None:
        summary = next((p for p in arc.texts if p.lower() == "summary.md"), None)
    if summary is not None:
        arc.total -= 1  # the table of contents is how the pages are read, not one of them
        _from_summary(arc, summary)
        return summary
    readme = structure.get("readme")
    names = (readme, "README.md") if isinstance(readme, str) else ("README.md",)
    _drop_deep_files(arc)
    _emit_folder(arc, _folder_tree(arc.texts), None, names)
    return None


# -- mkdocs --------------------------------------------------------------------------------------


def _mkdocs(arc: _Archive) -> None:
    from docshelf.kit.yamlbound import YamlRefused  # PyYAML: the import worker's alone

    name = _config(arc, _MKDOCS)
    assert name is not None
    try:
        config = read_yaml(arc.configs[name])
    except YamlRefused as refused:
        if not refused.bound:
            raise ConversionError(f"{name} is not a YAML mapping of settings") from None
        # Not read at all rather than read for minutes: its pages are imported by folder.
        config = {}
        why = f"not read ({refused.message}): the pages under docs/ are imported by folder"
        arc.skipped.append(Skipped(name, why, "approximated"))
    if not isinstance(config, dict):
        raise ConversionError(f"{name} is not a YAML mapping of settings")
    docs_dir = config.get("docs_dir", "docs")
    _reroot(arc, str(docs_dir) if isinstance(docs_dir, str) else "docs", f"{name}'s docs_dir")
    arc.dialect = True
    nav = config.get("nav")
    if not isinstance(nav, list):
        _drop_deep_files(arc)
        _emit_folder(arc, _folder_tree(arc.texts), None, _INDEXES)
        return
    used: set[str] = set()
    _nav(arc, name, nav, None, used, 1)
    for path in sorted(set(arc.texts) - used):
        arc.page(path, None)
        why = f"not in {name}'s nav: imported after its pages, at the top level"
        arc.skipped.append(Skipped(path, why, "approximated"))


def _nav(
    arc: _Archive, config: str, items: list[Any], parent: int | None, used: set[str], depth: int
) -> None:
    if depth > MAX_IMPORT_DEPTH:
        # Its pages are imported after the nav, as pages it leaves out are.
        why = over_limit(
            PAGE_DEPTH,
            f"sections nested more than {MAX_IMPORT_DEPTH} levels deep; "
            f"an import holds at most {MAX_IMPORT_DEPTH}",
        )
        arc.skipped.append(Skipped(f"{config}'s nav", why))
        return
    for item in items:
        if isinstance(item, list):  # an untitled group of entries: they belong to the parent
            _nav(arc, config, item, parent, used, depth + 1)
            continue
        if isinstance(item, str):
            _nav_page(arc, config, None, item, parent, used)
            continue
        if not isinstance(item, dict) or len(item) != 1:
            arc.skipped.append(Skipped(str(item)[:200], f"not a nav entry of {config}"))
            continue
        ((title, value),) = item.items()
        title = str(title)
        if isinstance(value, str):
            _nav_page(arc, config, title, value, parent, used)
        elif isinstance(value, list):
            _section(arc, config, title, value, parent, used, depth)
        else:
            arc.skipped.append(Skipped(title, f"not a nav entry of {config}"))


def _nav_page(
    arc: _Archive, config: str, title: str | None, target: str, parent: int | None, used: set[str]
) -> int | None:
    if is_external(target):
        made = link_page(arc, parent, title or target, target, f"in {config}'s nav")
        return None if made < 0 else made
    path = link_path(target.split("#", 1)[0], "")
    if path is None or path not in arc.texts:
        why = f"listed in {config}'s nav but not in the docs folder: left out"
        arc.skipped.append(Skipped(target, why, "unresolved"))
        return None
    if path in used:
        arc.skipped.append(Skipped(target, f"listed more than once in {config}'s nav"))
        return None
    used.add(path)
    return arc.page(path, parent, title)


def _section_index(value: list[Any]) -> tuple[str | None, list[Any]]:
    """A section's index page (an untitled `index.md` or `README.md` entry), and the rest."""
    for k, entry in enumerate(value):
        if isinstance(entry, str) and posixpath.basename(entry).lower() in (
            "index.md",
            "readme.md",
        ):
            return entry, value[:k] + value[k + 1 :]
    return None, value


def _section(
    arc: _Archive,
    config: str,
    title: str,
    value: list[Any],
    parent: int | None,
    used: set[str],
    depth: int,
) -> None:
    index, rest = _section_index(value)
    here = None if index is None else _nav_page(arc, config, title, index, parent, used)
    if here is None:
        here = arc.add(_Draft(parent, title, "", kind="group" if parent is None else "document"))
    _nav(arc, config, rest, here, used, depth + 1)


# -- Docusaurus ----------------------------------------------------------------------------------


def _docusaurus(arc: _Archive) -> None:
    _static_images(arc)
    _reroot(arc, "docs", "Docusaurus' docs")
    arc.dialect = True
    _drop_deep_files(arc)

    def category(folder: _Folder) -> _Category:
        found = _category_file(arc, folder.path)
        if found is None:
            index = _docusaurus_index(arc, folder, None)
            return _Category(index=index)
        data: Any
        path, text = found
        data = load_yaml(text) if not path.endswith(".json") else _json(text)
        if not isinstance(data, dict):
            arc.skipped.append(Skipped(path, "not a mapping of category settings: ignored"))
            data = {}
        link = data.get("link") if isinstance(data.get("link"), dict) else {}
        doc = link.get("id") if isinstance(link, dict) and link.get("type") == "doc" else None
        description = _meta_text(link, "description") if isinstance(link, dict) else None
        return _Category(
            title=_meta_text(data, "label"),
            order=_order(data.get("position")),
            index=_docusaurus_index(arc, folder, doc if isinstance(doc, str) else None),
            description=description,
        )

    sidebars = _sidebars(arc)
    if sidebars is None:
        _emit_folder(arc, _folder_tree(arc.texts), None, (), category)
    else:
        _from_sidebars(arc, *sidebars, category)
    for draft in arc.drafts:
        if draft.source is not None:
            draft.aliases = _docusaurus_urls(draft.source, arc.meta(draft.source))
        elif draft.folder is not None:
            url = _url_path(draft.folder)
            draft.aliases = (url, "docs/" + url)


_SIDEBARS = ("sidebars.js", "sidebars.ts", "sidebars.mjs", "sidebars.cjs", "sidebars.json")


def _static_images(arc: _Archive) -> None:
    """Docusaurus serves `static/` at the site's root (`static/img/a.png` is `/img/a.png`):
    the images of it that the docs name join the docs' own, where a link from the root finds
    them. The rest (favicons, logos of the site's frame) are reported, not imported."""
    docs = "\n".join(text for path, text in arc.texts.items() if path.startswith("docs/"))
    for path in sorted(arc.images):
        if not path.startswith("static/"):
            continue
        if path[len("static/") :] not in docs:
            arc.skipped.append(Skipped(path, "in static/, and no doc shows it"))
            arc.images.pop(path)
            arc.data.pop(path)
            continue
        served = "docs/" + path[len("static/") :]
        if served in arc.images:
            arc.skipped.append(Skipped(path, f"the same path as docs/{served}, which is kept"))
            continue
        arc.images[served] = arc.images.pop(path)
        arc.data[served] = arc.data.pop(path)


def _sidebars(arc: _Archive) -> tuple[str, dict[str, Any]] | None:
    """The project's sidebars (read as data, never run), or None to lay pages out by folder;
    why is reported."""
    from docshelf.imports.jsdata import NotData, exported

    name = next((n for n in _SIDEBARS if n in arc.configs), None)
    if name is None:
        arc.skipped.append(
            Skipped(
                "sidebars.js",
                "no sidebars file: pages laid out by folder, as Docusaurus' autogenerated "
                "sidebar does",
                "approximated",
            )
        )
        return None
    try:
        data = _json(arc.configs[name]) if name.endswith(".json") else exported(arc.configs[name])
    except NotData as refused:
        why = f"not read ({refused}): pages laid out by folder"
        arc.skipped.append(Skipped(name, why, "approximated"))
        return None
    if not isinstance(data, dict) or not data:
        why = "exports no sidebars that can be read as data: pages laid out by folder"
        arc.skipped.append(Skipped(name, why, "approximated"))
        return None
    return name, data


def _doc_ids(arc: _Archive) -> dict[str, str]:
    """Docusaurus' doc ids (the path without extension and number prefixes, its last part
    replaced by front matter `id`), each to its file."""
    ids: dict[str, str] = {}
    for path in sorted(arc.texts):
        folder = posixpath.dirname(path)
        stem = posixpath.splitext(posixpath.basename(path))[0]
        own = arc.meta(path).get("id")
        names = [posixpath.join(folder, stem), _url_path(posixpath.join(folder, stem))]
        if isinstance(own, str) and own.strip("/"):
            names.insert(0, _url_path(posixpath.join(folder, own.strip("/"))))
            names.insert(0, posixpath.join(folder, own.strip("/")))
        for doc_id in names:
            ids.setdefault(doc_id, path)
    return ids


class _Sidebars:
    def __init__(self, arc: _Archive, config: str, category: Any) -> None:
        self.arc = arc
        self.config = config
        self.category = category
        self.ids = _doc_ids(arc)
        self.used: set[str] = set()

    def report(self, what: str, why: str, kind: SkipKind = "approximated") -> None:
        self.arc.skipped.append(Skipped(what[:200], f"{why} in {self.config}", kind))

    def doc(self, doc_id: Any, label: Any, parent: int | None) -> int | None:
        path = self.ids.get(str(doc_id).strip("/")) if isinstance(doc_id, str) else None
        if path is None:
            self.report(str(doc_id), "a doc id that names no doc: left out", "unresolved")
            return None
        if path in self.used:
            self.report(path, "listed more than once: kept at its first place")
            return None
        self.used.add(path)
        return self.arc.page(path, parent, label if isinstance(label, str) and label else None)

    def items(self, items: Any, parent: int | None, depth: int) -> None:
        if isinstance(items, dict):  # the shorthand `{"Label": [items]}`
            items = [{"type": "category", "label": k, "items": v} for k, v in items.items()]
        if not isinstance(items, list):
            self.report(str(items), "not a list of sidebar items: left out", "skipped")
            return
        if depth > MAX_IMPORT_DEPTH:
            why = over_limit(
                PAGE_DEPTH, f"categories nested more than {MAX_IMPORT_DEPTH} levels deep"
            )
            self.report("a category", why, "skipped")
            return
        for item in items:
            self.item(item, parent, depth)

    def item(self, item: Any, parent: int | None, depth: int) -> None:
        if isinstance(item, str):
            self.doc(item, None, parent)
            return
        if not isinstance(item, dict):
            self.report(repr(item), "an item that is not data (code): left out")
            return
        kind = item.get("type")
        if kind is None and "items" in item:
            kind = "category"
        if kind is None and len(item) == 1:
            self.items(item, parent, depth)
            return
        label = item.get("label") if isinstance(item.get("label"), str) else None
        if kind in ("doc", "ref"):
            self.doc(item.get("id"), label, parent)
        elif kind == "link":
            href = item.get("href")
            if isinstance(href, str) and is_external(href):
                link_page(self.arc, parent, label or href, href, f"in {self.config}")
            else:
                self.report(str(href), "a link to the site itself, not a doc: left out")
        elif kind == "category":
            self.category_item(item, label or "Untitled", parent, depth)
        elif kind == "autogenerated":
            folder = str(item.get("dirName") or ".").strip("/") or "."
            self.autogenerated(folder, parent)
        else:
            self.report(f"{kind} item", f"a sidebar item of type {kind!r} has no page: left out")

    def category_item(self, item: dict[str, Any], label: str, parent: int | None, d: int) -> None:
        link = item.get("link") if isinstance(item.get("link"), dict) else {}
        assert isinstance(link, dict)
        here: int | None = None
        if link.get("type") == "doc":
            here = self.doc(link.get("id"), label, parent)
        if here is None:
            description = _meta_text(link, "description")
            kind: Literal["group", "document"] = "group" if parent is None else "document"
            here = self.arc.add(_Draft(parent, label, "", kind=kind, description=description))
        self.items(item.get("items", []), here, d + 1)

    def autogenerated(self, folder: str, parent: int | None) -> None:
        """A folder's docs as Docusaurus generates them: `_category_` files, positions."""
        tree = _folder_tree({p: "" for p in self.arc.texts if p not in self.used})
        node: _Folder | None = tree
        for part in [] if folder == "." else folder.split("/"):
            node = node.folders.get(part) if node is not None else None
        if node is None:
            self.report(folder, "an autogenerated folder that is not in docs/: left out")
            return
        before = len(self.arc.drafts)
        _emit_folder(self.arc, node, parent, (), self.category, own_page=False)
        for draft in self.arc.drafts[before:]:
            if draft.source is not None:
                self.used.add(draft.source)


def _from_sidebars(arc: _Archive, config: str, sidebars: dict[str, Any], category: Any) -> None:
    """Pages as the sidebars show them: one sidebar is the space's tree, several are a group
    each. Docs in no sidebar still come, after them, so links to them keep working."""
    reader = _Sidebars(arc, config, category)
    for name, items in sidebars.items():
        if not isinstance(items, list | dict):
            why = f"a sidebar of {config} that is not data but code, not run: left out"
            arc.skipped.append(Skipped(str(name), why, "approximated"))
            continue
        parent = None
        if len(sidebars) > 1:
            parent = arc.add(_Draft(None, humanize(str(name)), "", kind="group"))
        reader.items(items, parent, 1 if parent is None else 2)
    for path in sorted(set(arc.texts) - reader.used):
        arc.page(path, None)
        why = f"in no sidebar of {config}: imported after them, at the top level"
        arc.skipped.append(Skipped(path, why, "approximated"))


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _category_file(arc: _Archive, folder: str) -> tuple[str, str] | None:
    base = arc.root + ("" if folder == "." else folder + "/")
    for name in _CATEGORY:
        if base + name in arc.configs:
            return base + name, arc.configs[base + name]
    return None


def _docusaurus_index(arc: _Archive, folder: _Folder, doc: str | None) -> str | None:
    """The category's page: the doc its link names, else `index`, `README` or a doc named as
    the folder is (Docusaurus' conventions for a category's own doc)."""
    if folder.path == ".":
        return None
    if doc is not None:
        for candidate in (doc, doc + ".md", doc + ".mdx"):
            if candidate in arc.texts:
                return candidate
        tail = posixpath.basename(doc)
        for path in folder.files:
            if posixpath.splitext(posixpath.basename(path))[0] == tail:
                return path
    own = posixpath.basename(folder.path).lower()
    for path in sorted(folder.files):
        stem = posixpath.splitext(posixpath.basename(path))[0].lower()
        if stem in ("index", "readme", own):
            return path
    return None


def _url_path(path: str) -> str:
    parts = [_NUMBER_PREFIX.sub("", p) for p in path.split("/") if p not in ("", ".")]
    return "/".join(parts)


def _docusaurus_urls(source: str, meta: dict[str, Any]) -> tuple[str, ...]:
    """The paths Docusaurus serves a doc at (from the docs route, with and without `docs/`)."""
    folder = posixpath.dirname(source)
    stem = posixpath.splitext(posixpath.basename(source))[0]
    urls = [_url_path(posixpath.join(folder, stem))]
    if stem.lower() in ("index", "readme") or stem == posixpath.basename(folder):
        urls.append(_url_path(folder))
    doc_id = meta.get("id")
    if isinstance(doc_id, str) and doc_id.strip("/"):
        urls.append(_url_path(posixpath.join(folder, doc_id.strip("/"))))
    slug = meta.get("slug")
    if isinstance(slug, str):
        joined = slug if slug.startswith("/") else posixpath.join(folder, slug)
        urls.append(posixpath.normpath("/" + joined).strip("/") or ".")
    out = [u for u in urls if u]
    return tuple(dict.fromkeys([*out, *("docs/" + u if u != "." else "docs" for u in out)]))
