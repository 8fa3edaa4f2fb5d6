"""A space's content as GitBook's Git Sync repository layout, and back: pure, no I/O.

`export` lays a space out as files (path -> bytes); `parse` reads such files back into the same
values; `changes` says what turns one space into another, as the content engine's operations.
Export then parse is the identity, so a clone pushed back unchanged changes nothing.

The layout (GitBook's Git Sync, docs.gitbook.com "Content configuration"): `SUMMARY.md` holds the
order and nesting (a bullet per page, `## Heading` per page group, an external URL for a link
page); each document page is a markdown file whose front matter holds what the body does not
(description, icon, hidden; for Docshelf also emoji, the page id that survives the round trip,
and the slug when the file's name cannot be it) and whose `# heading` is its title; the first
page is `README.md`, a page with children is `<slug>/README.md` with the children beside it.
Reusable contents are `.gitbook/includes/<name>.md`, files `.gitbook/assets/<name>`.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import unquote

import yaml

import docshelf.document.markdown as md
from docshelf.kit import yamlbound

PageType = Literal["document", "group", "link"]

SUMMARY = "SUMMARY.md"
README = "README.md"
CONFIG = ".gitbook.yaml"
ASSETS = ".gitbook/assets/"
INCLUDES = ".gitbook/includes/"
CONFIG_TEXT = b"root: ./\n\nstructure:\n  readme: README.md\n  summary: SUMMARY.md\n"
# A file of a push larger than this refuses the push (a page body is bounded lower, by the
# content engine's limits). Below the API's default body cap (8 MiB), so a push of one such
# file is refused with this reason rather than by the edge's 413.
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_FILES = 20_000

_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_RESERVED = {"readme", "summary"}
_ITEM = re.compile(
    r"^(?P<indent> *)[*-] \[(?P<title>(?:\\.|[^\\\]])*)\]\((?P<target><[^>]*>|[^)\s]*)\)"
    r"(?: <a href=\"#(?P<slug>[^\"]*)\" id=\"(?P<id>[^\"]*)\"></a>)?$"
)
_GROUP = re.compile(
    r"^## (?P<title>.*?)(?: <a href=\"#(?P<slug>[^\"]*)\" id=\"(?P<id>[^\"]*)\"></a>)?$"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
UNGROUPED = "<!-- ungrouped -->"
# A page's front matter is a handful of short keys: anything near these bounds is not one.
_YAML_BOUNDS = yamlbound.Bounds(text_chars=64_000, depth=8, nodes=200, aliases=0)


class LayoutError(ValueError):
    """The tree cannot become a space; the message names the path and says why, for a git
    user's terminal."""


@dataclass(frozen=True, slots=True)
class Page:
    """A page as the tree shows it. `key` is its id; a page the tree adds has none yet, and
    its key is "+" and the path it came from."""

    key: str
    parent: str | None
    type: PageType
    title: str
    slug: str
    emoji: str | None = None
    icon: str | None = None
    description: str | None = None
    hidden: bool = False
    href: str | None = None
    markdown: str = ""


@dataclass(frozen=True, slots=True)
class Reusable:
    key: str
    title: str
    markdown: str = ""


@dataclass(frozen=True, slots=True)
class Asset:
    """A file of the space. `key` is its id (None for a file the tree adds), `name` its path
    under .gitbook/assets/."""

    key: str | None = field(compare=False)
    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Space:
    """Pages parents first, each parent's children in order; reusables by key, assets by
    name."""

    pages: tuple[Page, ...] = ()
    reusables: tuple[Reusable, ...] = ()
    assets: tuple[Asset, ...] = ()
    # The file each page read from the tree came from (a read tree's, by key): what a relative
    # link in its body starts from.
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    _kids: dict[str | None, list[Page]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        kids: dict[str | None, list[Page]] = {}
        for page in self.pages:
            kids.setdefault(page.parent, []).append(page)
        object.__setattr__(self, "_kids", kids)
        # One order for what has none of its own, so equal spaces compare equal.
        object.__setattr__(self, "reusables", tuple(sorted(self.reusables, key=_reusable_key)))
        object.__setattr__(self, "assets", tuple(sorted(self.assets, key=_asset_key)))

    def children(self, key: str | None) -> list[Page]:
        return self._kids.get(key, [])


def _reusable_key(item: Reusable) -> str:
    return item.key


def _asset_key(item: Asset) -> str:
    return item.name


def is_new(key: str) -> bool:
    return key.startswith("+")


def _component(slug: str) -> str:
    """The file or folder name a slug is written under."""
    if _COMPONENT.match(slug) and slug.lower() not in _RESERVED:
        return slug
    text = unicodedata.normalize("NFKD", slug).encode("ascii", "ignore").decode().lower()
    name = re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "page"
    return f"{name}-page" if name in _RESERVED else name


def _free(name: str, taken: set[str]) -> str:
    """`name`, or `name-2`, `name-3`... when a path of that name (any case) is taken."""
    candidate, n = name, 2
    while candidate.lower() in taken:
        candidate = f"{name}-{n}"
        n += 1
    taken.add(candidate.lower())
    return candidate


def _escape(title: str) -> str:
    return re.sub(r"([\\\[\]])", r"\\\1", title)


def _unescape(title: str) -> str:
    return re.sub(r"\\(.)", r"\1", title)


def _anchor(page: Page) -> str:
    return f' <a href="#{page.slug}" id="{page.key}"></a>'


def _target(href: str) -> str:
    return f"<{href}>" if re.search(r"[\s()<>]", href) else href


def _front(meta: Mapping[str, Any]) -> str:
    if not meta:
        return ""
    dumped = yaml.safe_dump(
        dict(meta), sort_keys=False, allow_unicode=True, width=1_000_000, default_flow_style=False
    )
    return f"---\n{dumped}---\n\n"


def _page_text(page: Page, slug_given: bool) -> bytes:
    meta: dict[str, Any] = {}
    if page.description is not None:
        meta["description"] = page.description
    if page.icon is not None:
        meta["icon"] = page.icon
    if page.emoji is not None:
        meta["emoji"] = page.emoji
    if page.hidden:
        meta["hidden"] = True
    if slug_given:
        meta["slug"] = page.slug
    meta["id"] = page.key
    body = f"\n\n{page.markdown}" if page.markdown else "\n"
    return f"{_front(meta)}# {page.title}{body}".encode()


def _reusable_text(item: Reusable) -> bytes:
    body = f"\n\n{item.markdown}" if item.markdown else "\n"
    return f"{_front({'id': item.key})}# {item.title}{body}".encode()


def page_paths(space: Space) -> dict[str, str]:
    """The file of each document page, by key."""
    paths: dict[str, str] = {}
    taken: dict[str, set[str]] = {}

    def walk(parent: str | None, folder: str) -> None:
        names = taken.setdefault(folder, set())
        for i, page in enumerate(space.children(parent)):
            kids = space.children(page.key)
            if page.type == "link":
                continue
            name = _free(_component(page.slug), names)
            if page.type == "group":
                walk(page.key, f"{folder}{name}/")
                continue
            if kids:
                paths[page.key] = f"{folder}{name}/{README}"
                walk(page.key, f"{folder}{name}/")
            elif parent is None and i == 0:
                paths[page.key] = README
            else:
                paths[page.key] = f"{folder}{name}.md"

    walk(None, "")
    return paths


def _slug_from_path(path: str) -> str | None:
    """The slug a page's file name gives, or None (the root README.md gives none)."""
    if path == README:
        return None
    parts = path.split("/")
    return parts[-2] if parts[-1] == README else parts[-1].removesuffix(".md")


def page_file(page: Page, path: str) -> bytes:
    """A document page's file at `path`."""
    return _page_text(page, _slug_from_path(path) != page.slug)


def summary(space: Space, paths: Mapping[str, str]) -> bytes:
    """SUMMARY.md: the pages' order and nesting (their bodies are not read)."""
    lines = ["# Table of contents", ""]

    def emit(page: Page, depth: int) -> None:
        indent = "  " * depth
        if page.type == "link":
            target, anchor = _target(page.href or ""), _anchor(page)
            lines.append(f"{indent}* [{_escape(page.title)}]({target}){anchor}")
            return
        lines.append(f"{indent}* [{_escape(page.title)}]({_target(paths[page.key])})")
        for kid in space.children(page.key):
            emit(kid, depth + 1)

    in_group = False
    for page in space.children(None):
        if page.type == "group":
            lines += ["", f"## {page.title}{_anchor(page)}", ""]
            in_group = True
            for kid in space.children(page.key):
                emit(kid, 0)
            continue
        if in_group:
            # A top-level page after a group: SUMMARY.md would read it as the group's.
            lines += ["", UNGROUPED, ""]
            in_group = False
        emit(page, 0)
    return ("\n".join(lines) + "\n").encode()


def reusable_paths(space: Space) -> dict[str, str]:
    names: set[str] = set()
    return {
        item.key: f"{INCLUDES}{_free(_component(item.title), names)}.md" for item in space.reusables
    }


def reusable_file(item: Reusable) -> bytes:
    return _reusable_text(item)


def export(space: Space) -> dict[str, bytes]:
    """The repository's files, by path."""
    paths = page_paths(space)
    files: dict[str, bytes] = {CONFIG: CONFIG_TEXT, SUMMARY: summary(space, paths)}
    for page in space.pages:
        if page.key in paths:
            files[paths[page.key]] = page_file(page, paths[page.key])
    rpaths = reusable_paths(space)
    for item in space.reusables:
        files[rpaths[item.key]] = reusable_file(item)
    for asset in space.assets:
        files[f"{ASSETS}{asset.name}"] = asset.data
    return files


def adopt(base: Space, new: Space) -> Space:
    """`new` with each page it adds (no id in its front matter) that sits at the path of a
    page of `base` taken as that page: a file whose id line was dropped is still the page."""
    at = {path: key for key, path in page_paths(base).items()}
    claimed = {p.key for p in new.pages}
    keys: dict[str, str] = {}
    for page in new.pages:
        if page.type == "document" and is_new(page.key):
            key = at.get(page.key[1:])
            if key is not None and key not in claimed:
                keys[page.key] = key
                claimed.add(key)
    rkeys = {path: key for key, path in reusable_paths(base).items()}
    items = []
    for item in new.reusables:
        key = rkeys.get(item.key[1:]) if is_new(item.key) else None
        items.append(replace(item, key=key) if key and key not in claimed else item)
    return Space(with_keys(new, keys).pages, tuple(items), new.assets)


def asset_name(name: str, taken: set[str]) -> str:
    """A file's name as a file name under .gitbook/assets/, distinct from those `taken`."""
    clean = re.sub(r"[/\\\x00-\x1f]", "-", name).lstrip(".") or "file"
    stem, dot, ext = clean.rpartition(".")
    if not dot or not stem:
        stem, ext = clean, ""
    candidate, n = clean, 2
    while candidate.lower() in taken:
        candidate = f"{stem}-{n}.{ext}" if ext else f"{stem}-{n}"
        n += 1
    taken.add(candidate.lower())
    return candidate


# Reading a tree


def _text(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LayoutError(f"{path}: not UTF-8 text") from None


def _split_front(path: str, text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 3)
    if end < 0:
        raise LayoutError(f"{path}: the front matter has no closing '---' line")
    raw = text[4 : end + 1]
    try:
        meta = yamlbound.load(raw, _YAML_BOUNDS)
    except yamlbound.YamlRefused as exc:
        raise LayoutError(f"{path}: the front matter is not valid YAML ({exc.message})") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise LayoutError(f"{path}: the front matter must be a mapping of keys to values")
    rest = text[end + 5 :]
    return meta, rest.removeprefix("\n")


def _optional_text(path: str, meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise LayoutError(f"{path}: front matter '{key}' must be text")
    return value


def _titled(path: str, text: str, fallback: str) -> tuple[str, str]:
    """The `# heading` the file opens with, and the body after it."""
    if not text.startswith("# "):
        return fallback, text
    line, newline, rest = text.partition("\n")
    title = line[2:]
    if not newline:
        return title, ""
    return title, rest.removeprefix("\n")


@dataclass
class _Read:
    pages: list[Page] = field(default_factory=list)
    used: set[str] = field(default_factory=set)  # page files SUMMARY.md named
    ids: dict[str, str] = field(default_factory=dict)  # id -> where it was seen
    sources: dict[str, str] = field(default_factory=dict)  # key -> page file read


def _identity(read: _Read, where: str, value: Any, fallback: str) -> str:
    if value is None or value == "":
        return fallback
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", value):
        raise LayoutError(f"{where}: the id {value!r} is not a page id")
    if value in read.ids:
        raise LayoutError(f"{where}: the id {value} is also the id of {read.ids[value]}")
    read.ids[value] = where
    return value


def _read_page(
    read: _Read,
    files: Mapping[str, bytes],
    path: str,
    parent: str | None,
    title: str,
    known: Mapping[str, Page],
) -> Page:
    if path not in files:
        raise LayoutError(f"{SUMMARY}: it names {path}, which is not in the tree")
    if path in read.used:
        raise LayoutError(f"{SUMMARY}: it names {path} twice")
    read.used.add(path)
    if path in known:
        page = known[path]
        _identity(read, path, page.key, page.key)
        return page if page.parent == parent else replace(page, parent=parent)
    meta, rest = _split_front(path, _text(path, files[path]))
    unknown = sorted(set(meta) - {"description", "icon", "emoji", "hidden", "slug", "id"})
    if unknown:
        raise LayoutError(f"{path}: unknown front matter key {unknown[0]!r}")
    heading, markdown = _titled(path, rest, title)
    hidden = meta.get("hidden", False)
    if not isinstance(hidden, bool):
        raise LayoutError(f"{path}: front matter 'hidden' must be true or false")
    slug = _optional_text(path, meta, "slug") or _slug_from_path(path)
    if not heading.strip():
        raise LayoutError(f"{path}: the page has no title")
    key = _identity(read, path, meta.get("id"), f"+{path}")
    read.sources[key] = path
    return Page(
        key=key,
        parent=parent,
        type="document",
        title=heading,
        slug=slug or _component(heading.lower()),
        emoji=_optional_text(path, meta, "emoji"),
        icon=_optional_text(path, meta, "icon"),
        description=_optional_text(path, meta, "description"),
        hidden=hidden,
        markdown=markdown,
    )


def _forbidden(path: str) -> str | None:
    """Why a path cannot be in a synced tree, or None."""
    if path in (SUMMARY, CONFIG):
        return None
    if path.startswith(ASSETS):
        return None
    if path.startswith(INCLUDES):
        rest = path[len(INCLUDES) :]
        return None if "/" not in rest and rest.endswith(".md") else "includes are .md files"
    if path.startswith(".") or "/." in path:
        return "hidden files and folders are not synced"
    if not path.endswith(".md"):
        return "only markdown pages, .gitbook/assets/ and .gitbook/includes/ are synced"
    return None


def parse(files: Mapping[str, bytes], known: Mapping[str, Page] | None = None) -> Space:
    """The space a tree holds; LayoutError for anything that cannot be one. `known`: pages
    already read from the very bytes now at their paths (a push's unchanged files), taken as
    they are rather than read again."""
    known = known or {}
    if len(files) > MAX_FILES:
        raise LayoutError(f"the tree holds {len(files)} files, more than {MAX_FILES}")
    for path, data in files.items():
        why = _forbidden(path)
        if why is not None:
            raise LayoutError(f"{path}: forbidden path ({why})")
        if len(data) > MAX_FILE_BYTES:
            raise LayoutError(f"{path}: {len(data)} bytes, more than {MAX_FILE_BYTES}")
    if SUMMARY not in files:
        raise LayoutError(f"{SUMMARY} is missing: it says which pages the space has")
    read = _Read()
    # parents[d]: the key of the page d+1 levels deep under which the next item nests
    stack: list[str] = []
    group: str | None = None
    for number, line in enumerate(_text(SUMMARY, files[SUMMARY]).split("\n"), start=1):
        where = f"{SUMMARY} line {number}"
        if not line.strip() or (line.startswith("# ") and number == 1):
            continue
        if line == UNGROUPED:
            group, stack = None, []
            continue
        heading = _GROUP.match(line)
        if heading is not None:
            title = heading["title"].strip()
            if not title:
                raise LayoutError(f"{where}: a page group needs a title")
            key = _identity(read, where, heading["id"], f"+{where}")
            slug = heading["slug"] or _component(title.lower())
            read.pages.append(Page(key=key, parent=None, type="group", title=title, slug=slug))
            group, stack = key, []
            continue
        item = _ITEM.match(line)
        if item is None:
            raise LayoutError(f"{where}: expected '* [Title](page.md)' or '## Group'")
        width = len(item["indent"])
        if width % 2 or width // 2 > len(stack):
            raise LayoutError(f"{where}: indented deeper than the entry above it")
        del stack[width // 2 :]
        parent = stack[-1] if stack else group
        title = _unescape(item["title"])
        target = item["target"]
        target = target[1:-1] if target.startswith("<") else target
        if _SCHEME.match(target):
            if not title.strip():
                raise LayoutError(f"{where}: a link needs a title")
            key = _identity(read, where, item["id"], f"+{where}")
            slug = item["slug"] or _component(title.lower())
            page = Page(key=key, parent=parent, type="link", title=title, slug=slug, href=target)
        else:
            path = posixpath.normpath(target.split("#", 1)[0])
            page = _read_page(read, files, path, parent, title, known)
        read.pages.append(page)
        stack.append(page.key)
    orphans = sorted(
        p
        for p in files
        if p.endswith(".md") and p not in read.used and p != SUMMARY and "/" not in p[:1]
        if not p.startswith(".gitbook/")
    )
    if orphans:
        raise LayoutError(f"{orphans[0]}: the page is not listed in {SUMMARY}")
    reusables = []
    for path in sorted(p for p in files if p.startswith(INCLUDES)):
        meta, rest = _split_front(path, _text(path, files[path]))
        title, markdown = _titled(path, rest, path[len(INCLUDES) : -3])
        given = meta.get("id")
        if given is not None and not (
            isinstance(given, str) and re.fullmatch(r"[\w-]{1,64}", given)
        ):
            raise LayoutError(f"{path}: the id {given!r} is not a reusable content id")
        reusables.append(Reusable(key=given or f"+{path}", title=title, markdown=markdown))
    assets = tuple(
        Asset(None, p[len(ASSETS) :], files[p]) for p in sorted(files) if p.startswith(ASSETS)
    )
    return Space(tuple(read.pages), tuple(reusables), assets, read.sources)


def asset_target(page_path: str, target: str) -> str | None:
    """The name under .gitbook/assets/ that a link or image of the page file `page_path` names
    (relative to the file's folder, or from the root with a leading '/', as GitBook writes
    them), else None."""
    if not target or md.is_external(target):
        return None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    found = md.link_path(path, posixpath.dirname(page_path))
    if found is None or not found.startswith(ASSETS) or "/" in found[len(ASSETS) :]:
        return None
    return found[len(ASSETS) :] or None


def asset_ref(name: str) -> str:
    """The batch reference a file the push adds goes by, so its pages can name it before it
    has an id."""
    return "asset-" + hashlib.sha256(name.encode()).hexdigest()[:24]


# What turns one space into another

_FIELDS = ("title", "slug", "emoji", "icon", "description", "hidden", "markdown")


def changes(base: Space, new: Space) -> list[dict[str, Any]]:
    """The operations that turn `base` into `new`, in an order the content engine can apply one
    after another: pages that go with nothing kept under them first, then every page of `new`
    parents first (inserted, or updated and moved where it differs), then what is left to go.
    Keys of `new` that `base` lacks are new pages (refs of the batch). Files the tree adds come
    first, so that the pages naming them (by `asset_ref`) find them."""
    files = _asset_changes(base, new)
    out: list[dict[str, Any]] = [op for op in files if op["op"] == "insert_file"]
    old = {p.key: p for p in base.pages}
    wanted = {p.key: p for p in new.pages}
    kids: dict[str | None, list[str]] = {}
    parent_of: dict[str, str | None] = {}
    for page in base.pages:
        kids.setdefault(page.parent, []).append(page.key)
        parent_of[page.key] = page.parent

    # Each page's place among its siblings: in `new` read once, in the structure being
    # rearranged (`kids`) re-read only for a parent whose children changed, so an edit of a
    # few pages costs a pass over the space, not one over each page's siblings.
    at_of = {
        page.key: n
        for parent in {p.parent for p in new.pages}
        for n, page in enumerate(new.children(parent))
    }
    places: dict[str | None, dict[str, int]] = {}

    def place(parent: str | None, key: str) -> int:
        if parent not in places:
            places[parent] = {k: n for n, k in enumerate(kids.get(parent, []))}
        return places[parent][key]

    def insert(parent: str | None, at: int, key: str) -> None:
        kids.setdefault(parent, []).insert(at, key)
        places.pop(parent, None)

    def detach(key: str) -> None:
        kids[parent_of[key]].remove(key)
        places.pop(parent_of[key], None)

    def keeps(key: str) -> bool:
        return key in wanted or any(keeps(k) for k in kids.get(key, []))

    for page in base.pages:
        gone_above = page.parent is not None and page.parent not in wanted
        if page.key not in wanted and not keeps(page.key) and not gone_above:
            out.append({"op": "delete_page", "page": page.key})
            detach(page.key)
    # The pages deleted above, and everything under them.
    deleted = {op["page"] for op in out if op["op"] == "delete_page"}
    for page in base.pages:
        if page.parent in deleted:
            deleted.add(page.key)

    for key, page in wanted.items():
        at = at_of[key]
        before = old.get(key)
        if before is not None and before.type != page.type:
            raise LayoutError(
                f"page {page.title!r} cannot turn from a {before.type} into a {page.type}"
            )
        if before is not None and page.type == "link" and before.href != page.href:
            raise LayoutError(f"link {page.title!r}: its URL cannot change over git")
        if before is None:
            out.append(
                {
                    "op": "insert_page",
                    "ref": key,
                    "into": page.parent,
                    "at": at,
                    "type": page.type,
                    "href": page.href,
                    **{name: getattr(page, name) for name in _FIELDS},
                }
            )
            insert(page.parent, at, key)
            parent_of[key] = page.parent
            continue
        update: dict[str, Any] = {
            name: getattr(page, name)
            for name in _FIELDS
            if getattr(page, name) != getattr(before, name)
        }
        if parent_of[key] != page.parent or place(page.parent, key) != at:
            update.update(into=page.parent, at=at)
            detach(key)
            insert(page.parent, at, key)
            parent_of[key] = page.parent
        if update:
            out.append({"op": "update_page", "page": key, **update})
    for page in base.pages:
        if page.key not in wanted and page.key not in deleted:
            out.append({"op": "delete_page", "page": page.key})
            deleted.add(page.key)
            for below in base.pages:
                if below.parent in deleted and below.key not in wanted:
                    deleted.add(below.key)

    out += _reusable_changes(base, new)
    out += [op for op in files if op["op"] != "insert_file"]
    return out


def _reusable_changes(base: Space, new: Space) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    old = {r.key: r for r in base.reusables}
    for item in new.reusables:
        before = old.pop(item.key, None)
        if before is None:
            out.append(
                {
                    "op": "insert_reusable",
                    "ref": item.key,
                    "title": item.title,
                    "markdown": item.markdown,
                }
            )
        elif before != item:
            out.append(
                {
                    "op": "update_reusable",
                    "reusable": item.key,
                    "title": item.title,
                    "markdown": item.markdown,
                }
            )
    out += [{"op": "delete_reusable", "reusable": key} for key in old]
    return out


def _asset_changes(base: Space, new: Space) -> list[dict[str, Any]]:
    old = {a.name: a for a in base.assets}
    out: list[dict[str, Any]] = []
    for asset in new.assets:
        before = old.pop(asset.name, None)
        if before is None:
            ref = asset_ref(asset.name)
            out.append({"op": "insert_file", "name": asset.name, "data": asset.data, "ref": ref})
        elif before.data != asset.data:
            out.append(
                {"op": "update_file", "file": before.key, "name": asset.name, "data": asset.data}
            )
    for name in sorted(old):
        out.append({"op": "delete_file", "file": old[name].key, "name": name})
    return out


def with_keys(space: Space, keys: Mapping[str, str]) -> Space:
    """The space with new pages' keys replaced (by the ids they were given)."""
    if not keys:
        return space
    pages = tuple(
        replace(p, key=keys.get(p.key, p.key), parent=keys.get(p.parent or "", p.parent))
        if p.key in keys or (p.parent or "") in keys
        else p
        for p in space.pages
    )
    return Space(pages, space.reusables, space.assets)


def ordered(pages: Iterable[Page]) -> tuple[Page, ...]:
    """Pages parents first, siblings in the order given."""
    kids: dict[str | None, list[Page]] = {}
    for page in pages:
        kids.setdefault(page.parent, []).append(page)
    out: list[Page] = []

    def walk(parent: str | None) -> None:
        for page in kids.get(parent, []):
            out.append(page)
            walk(page.key)

    walk(None)
    return tuple(out)
