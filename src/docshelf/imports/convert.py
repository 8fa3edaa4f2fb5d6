"""Pure converters from imported sources to a page tree: bytes in, an `Imported` out, with no
network and no database.

- `from_markdown`: one markdown file, one page.
- `from_html`: one HTML page, one page of markdown.
- `from_zip`: a GitBook export or Git Sync repository as a zip. `SUMMARY.md`, when there is one,
  is the table of contents; otherwise folders and their `README.md` files are. Images come along
  as files, and relative links between the archive's pages and images are rewritten to refs.
- `from_folder`: a local folder, read exactly as a zip of it is (the CLI's import).

Bad input the user can fix raises `ConversionError`, whose message is meant for them. A page of
a project that exceeds a content limit (document/limits.py) is left out and reported, and the
rest is imported; a single page over one is refused.
"""

from __future__ import annotations

import lzma
import os
import posixpath
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from io import BytesIO
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal
from urllib.parse import unquote

from markdown_it.token import Token

from docshelf.document.limits import MAX_IMPORT_DEPTH, MAX_MARKDOWN_BYTES, PAGE_DEPTH, PAGE_SIZE
from docshelf.document.markdown import (
    commonmark,
    is_external,
    link_path,
    markup_count,
    plain_text,
    rewrite_links,
    violation,
)
from docshelf.document.model import safe_url
from docshelf.imports.dialects import Notes, docusaurus_paths, front_matter, humanize
from docshelf.imports.dialects import convert as convert_dialects

__all__ = [
    "SUMMARY_MAX_DEPTH",
    "ConversionError",
    "Imported",
    "ImportedFile",
    "ImportedPage",
    "Skipped",
    "from_docx",
    "from_folder",
    "from_html",
    "from_markdown",
    "from_zip",
]


class ConversionError(ValueError):
    """The source cannot be imported; the message says why, for the user."""


@dataclass(frozen=True)
class ImportedFile:
    ref: str
    name: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class ImportedPage:
    ref: str
    parent: str | None  # another page's ref
    title: str
    markdown: str
    kind: Literal["document", "group", "link"] = "document"
    description: str | None = None
    href: str | None = None  # a link page's URL (a table of contents' external entry)


SkipKind = Literal["skipped", "unresolved", "approximated"]


@dataclass(frozen=True)
class Skipped:
    """Something of the source that was not imported, or only in part, and why: `skipped` left
    out, `unresolved` an include or table-of-contents entry that leads nowhere, `approximated`
    imported as something close to it."""

    path: str  # the entry in the source, or the target a table of contents names
    reason: str
    kind: SkipKind = "skipped"


@dataclass(frozen=True)
class ImportedReusable:
    """A GitBook repository's `.gitbook/includes/<name>.md`: a reusable content, which pages
    name with `{% include "<...>/.gitbook/includes/<name>.md" %}` (`ref` is that path)."""

    ref: str
    title: str
    markdown: str


@dataclass(frozen=True)
class Imported:
    pages: tuple[ImportedPage, ...]  # parents before children, siblings in order
    files: tuple[ImportedFile, ...]
    total: int  # the source's files, each either imported or in `skipped`
    imported: int  # the source's files that became a page or a file
    skipped: tuple[Skipped, ...]  # every file left out, every table-of-contents entry not kept
    # What the source was read as: markdown, html, docx, or for an archive or folder mkdocs,
    # docusaurus, gitbook or folder.
    detected: str = "markdown"
    reusables: tuple[ImportedReusable, ...] = ()


# -- markdown ----------------------------------------------------------------------------------

# A SUMMARY.md entry n levels deep is 2n+1 levels of tokens; past maxNesting markdown-it drops
# content silently, so leave room to see (and refuse) one level more than an import may hold.
_MD = commonmark(2 * MAX_IMPORT_DEPTH + 8)
# Blocks only: finding a page's first heading needs no inline parse of the whole page (a third
# of an import's time); the heading's own text is parsed inline on its own.
_BLOCKS = commonmark(2 * MAX_IMPORT_DEPTH + 8).disable("inline")
_FRONT_MATTER_KEY = re.compile(r"[A-Za-z0-9_-]+\s*:")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
_SPACES = re.compile(r"\s+")


_NOT_UTF8 = "not UTF-8: bytes that are not were read as \N{REPLACEMENT CHARACTER}"


def _decode(data: bytes, path: str | None = None, notes: list[Skipped] | None = None) -> str:
    """The text of a file; with `notes`, a file that is not UTF-8 is reported (it is read all
    the same, each byte that does not decode as U+FFFD)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("utf-8-sig", errors="replace")
        if notes is not None and path is not None:
            notes.append(Skipped(path, _NOT_UTF8, "approximated"))
    # markdown-it counts lines after folding these; doing it first keeps its line map usable.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _squash(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _drop_front_matter(text: str) -> str:
    """`text` without a leading YAML block (GitBook keeps a page's description, icon and layout
    there), which would otherwise read as a divider and a heading."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[i + 1 :])
        # Only a YAML mapping counts: a page may well open with a plain divider.
        if i == 1 and not _FRONT_MATTER_KEY.match(lines[i]):
            return text
    return text


class OverLimit(ConversionError):
    """A page exceeds a content limit: `limit` is its name (limits.PAGE_SIZE...)."""

    def __init__(self, name: str, limit: str, problem: str) -> None:
        # All three in `args`, so that it pickles (out of an offload worker) whole.
        super().__init__(name, limit, problem)
        self.name = name
        self.limit = limit
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.name}: {self.problem}"

    def reason(self, outcome: str = "left out") -> str:
        return over_limit(self.limit, self.problem, outcome)


def over_limit(limit: str, problem: str, outcome: str = "left out") -> str:
    """How a report says a page was not imported for a limit: naming it."""
    return f"over the {limit} limit ({problem}): {outcome}"


def _checked(text: str, name: str) -> str:
    """`text` if it is within the limits on a page's body. Checked before anything else reads
    it: that check stops early on text made to be slow, the full parses after it do not."""
    found = violation(text)
    if found is not None:
        raise OverLimit(name, *found)
    return text


def _noted(path: str, notes: Notes) -> list[Skipped]:
    """What converting the page at `path` left out or changed, as its report lines."""
    unresolved = [
        Skipped(path, f"snippet include {target!r} not found: left out", "unresolved")
        for target in notes.unresolved
    ]
    return unresolved + [
        Skipped(path, why, "approximated") for why in dict.fromkeys(notes.approximated)
    ]


def _split_title(text: str) -> tuple[str | None, str]:
    """The first top-level `# heading` as plain text, and the page without it."""
    body = _drop_front_matter(text)
    tokens = _BLOCKS.parse(body)
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.tag != "h1" or token.level or not token.map:
            continue
        inline = _MD.parseInline(tokens[i + 1].content)
        title = plain_text(inline[0].children if inline else None)
        if not title:
            continue
        lines = body.split("\n")
        start, end = token.map
        before, after = lines[:start], lines[end:]
        # Lines on both sides would run together into one paragraph.
        gap = [""] if before and after and before[-1].strip() and after[0].strip() else []
        return title, _LEADING_BLANK_LINES.sub("", "\n".join(before + gap + after))
    return None, _LEADING_BLANK_LINES.sub("", body)


def _stem(name: str) -> str:
    return PurePosixPath(name.replace("\\", "/")).stem or name


def from_markdown(data: bytes, name: str) -> Imported:
    """One page: titled by its front matter's `title`, else its first `# heading` (taken out of
    the body), else the file name without its extension; described by the front matter's
    `description`. Its local links and images lead to nothing of the import: kept as written,
    and reported as unresolved."""
    if b"\0" in data:
        raise ConversionError(f"{name} is not a text file")
    decoded: list[Skipped] = []
    text = _checked(_decode(data, name, decoded), name)
    meta = front_matter(text)[0]
    # Alerts, comments and HTML as a project's pages have them (bs4 loads here, in the worker).
    from docshelf.imports.markup import clean

    notes = Notes()
    cleaned = clean(text, notes)
    if cleaned != text:
        text = _checked(cleaned, name)
    heading, body = _split_title(text)
    given = _meta_text(meta, "title")
    if given is not None and heading is not None and _squash(heading) != given:
        body = _drop_front_matter(text)  # a heading other than the title is content
    broken = decoded + _noted(name, notes)
    body = _rewritten(name, body, {}, {}, broken)
    title = given or heading or _stem(name) or "Untitled"
    page = ImportedPage("p1", None, title, body, description=_meta_text(meta, "description"))
    return Imported((page,), (), 1, 1, tuple(broken))


# -- HTML --------------------------------------------------------------------------------------


def from_html(data: bytes, url: str) -> Imported:
    """One page: titled by `<title>`, else the first `<h1>`; its `<main>`, else `<article>`, else
    `<body>` as markdown, without scripts, styles and navigation. Relative links and images are
    made absolute against `url` (nothing is downloaded)."""
    # BeautifulSoup and markdownify cost ~20 MB resident: only processes that convert HTML
    # (the import worker) load them, not every API process.
    from docshelf.imports.html import convert_html

    imported = convert_html(data, url)
    # A page read from a file (no URL to point them back at): its local links lead to
    # nothing of the import, kept as written and reported, as a markdown file's are.
    broken: list[Skipped] = []
    pages = tuple(
        replace(p, markdown=_rewritten(url, p.markdown, {}, {}, broken)) for p in imported.pages
    )
    return (
        replace(imported, pages=pages, skipped=(*imported.skipped, *broken)) if broken else imported
    )


def from_docx(data: bytes, name: str) -> Imported:
    """A Word document: a page per top-level heading, images as files (see docx.py)."""
    # mammoth and the HTML converter load only in the process that converts.
    from docshelf.imports.docx import convert_docx

    return convert_docx(data, name)


# -- zip ---------------------------------------------------------------------------------------

_IMAGE_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "svg": "image/svg+xml",
    "webp": "image/webp",
}
_MARKDOWN = ("md", "markdown", "mdx")
# Files that say how a project is read, not pages: kept as text, counted as neither.
_CONFIGS = {
    "mkdocs.yml",
    "mkdocs.yaml",
    ".gitbook.yaml",
    "_category_.json",
    "_category_.yml",
    "_category_.yaml",
    "docusaurus.config.js",
    "docusaurus.config.ts",
    "docusaurus.config.mjs",
    "sidebars.js",
    "sidebars.ts",
    "sidebars.mjs",
    "sidebars.cjs",
    "sidebars.json",
}
_CHUNK = 64 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
_DAMAGED = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError)


def _extension(path: str) -> str:
    return posixpath.splitext(path)[1][1:].lower()


def _is_readme(path: str) -> bool:
    return posixpath.basename(path).lower() == "readme.md"


def _size(n: int) -> str:
    mb = 1024 * 1024
    return f"{n / mb:g} MB" if n >= mb else f"{n} bytes"


def _parts(name: str) -> tuple[str, ...]:
    """An entry's path as components, refusing any that would land outside the archive."""
    path = name.replace("\\", "/")  # Windows tools write these, and Windows reads them so
    if path.startswith("/") or _DRIVE.match(path):
        raise ConversionError(f"{name}: absolute paths are not allowed in the archive")
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise ConversionError(f"{name}: paths with '..' are not allowed in the archive")
    return parts


def _is_include(parts: tuple[str, ...]) -> bool:
    return (
        len(parts) == 3
        and parts[:2] == (".gitbook", "includes")
        and _extension(parts[2]) in _MARKDOWN
    )


def _ignored(parts: tuple[str, ...]) -> Skipped | None:
    """Operating-system litter and tool metadata, not part of the content: what to report (a
    whole hidden folder at once, so a .git folder is one line, not thousands)."""
    if "__MACOSX" in parts:
        folder = "/".join(parts[: parts.index("__MACOSX") + 1]) + "/"
        return Skipped(folder, "macOS metadata folder")
    if parts[-1] == ".gitbook.yaml":
        return None  # a GitBook repository's settings: where its content starts
    for i, part in enumerate(parts):
        if not part.startswith("."):
            continue
        # GitBook keeps uploaded images in .gitbook/assets/ and pages link to them there, and
        # reusable contents in .gitbook/includes/; the rest of that folder (settings) has no
        # place in a page tree.
        if part == ".gitbook" and i < len(parts) - 1:
            if _extension(parts[-1]) in _IMAGE_TYPES or _is_include(parts[i:]):
                return None
            return Skipped("/".join(parts), "GitBook metadata, not a page or an image")
        if i < len(parts) - 1:
            return Skipped("/".join(parts[: i + 1]) + "/", "hidden folder")
        return Skipped("/".join(parts), "hidden file")
    return None


@dataclass(frozen=True)
class _Entry:
    """A file of the source: an archive's entry or a file in a folder."""

    name: str  # its path in the source, as written there
    open: Callable[[], IO[bytes]]
    on_disk: bool = False  # a file in a folder: one that cannot be read is left out
    # An archive's symbolic link: its bytes are the path it names, which may lead anywhere.
    link: bool = False


class _Unreadable(Exception):
    """A file in a folder that cannot be read (permissions, a broken link): it is reported."""


@dataclass
class _Budget:
    limit: int
    used: int = 0

    def read(self, entry: _Entry, path: str) -> bytes:
        # Sizes in the headers are the archive's word only: count what actually comes out, and
        # stop as soon as it is too much.
        chunks: list[bytes] = []
        try:
            with entry.open() as stream:
                while chunk := stream.read(_CHUNK):
                    self.used += len(chunk)
                    if self.used > self.limit:
                        limit = _size(self.limit)
                        what = "the folder holds" if entry.on_disk else "the archive unpacks to"
                        raise ConversionError(f"{what} more than {limit}")
                    chunks.append(chunk)
        except ConversionError:
            raise
        except OSError as e:
            if entry.on_disk:
                raise _Unreadable(e.strerror or str(e)) from e
            raise ConversionError(f"not a valid zip archive ({path} is damaged)") from e
        except RuntimeError as e:  # zipfile's word for "encrypted"
            raise ConversionError(f"{path}: encrypted archives are not supported") from e
        except NotImplementedError as e:
            raise ConversionError(f"{path}: unsupported compression method") from e
        except _DAMAGED as e:
            raise ConversionError(f"not a valid zip archive ({path} is damaged)") from e
        return b"".join(chunks)


@dataclass
class _Draft:
    parent: int | None  # index into the drafts
    title: str
    markdown: str
    kind: Literal["document", "group", "link"] = "document"
    source: str | None = None  # the markdown file it came from, where relative links start
    folder: str | None = None  # the folder it stands for, in the folder layout
    description: str | None = None
    aliases: tuple[str, ...] = ()  # other paths links may use for it (a Docusaurus slug)
    # The markdown file it stands for but could not hold, over a content limit: an empty page
    # kept only if pages below it need a parent.
    left_out: tuple[str, OverLimit] | None = None
    href: str | None = None  # a link page's URL


@dataclass
class _Archive:
    texts: dict[str, str]  # markdown files by path
    images: dict[str, str]  # image paths -> their content type
    data: dict[str, bytes]  # image bytes by path
    total: int
    skipped: list[Skipped] = field(default_factory=list)
    drafts: list[_Draft] = field(default_factory=list)
    configs: dict[str, str] = field(default_factory=dict)  # _CONFIGS files by path
    # Whether pages are read as mkdocs / Docusaurus markdown (front matter, admonitions...).
    dialect: bool = False
    sources: dict[str, str] = field(default_factory=dict)  # every text, before any re-rooting
    root: str = ""  # where `texts` start in `sources` ("" or "docs/")
    kind: str = "folder"  # what the project was detected as
    included: set[str] = field(default_factory=set)  # `sources` read as snippets
    # GitBook's `.gitbook/includes/*.md` by path: reusable contents, not pages.
    includes: dict[str, str] = field(default_factory=dict)
    left_out: int = 0  # markdown files left out for a content limit
    # The one folder everything was in, which the content starts inside ("" if none): a link
    # may still name it (docs/a.md linking to ../docs/b.md).
    wrapper: str = ""
    _meta: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, draft: _Draft) -> int:
        self.drafts.append(draft)
        return len(self.drafts) - 1

    def meta(self, path: str) -> dict[str, Any]:
        """The page's front matter (read only for dialect projects)."""
        if not self.dialect:
            return {}
        if path not in self._meta:
            self._meta[path] = front_matter(self.texts[path])[0]
        return self._meta[path]

    def page(
        self, path: str, parent: int | None, title: str | None = None, fallback: str | None = None
    ) -> int:
        """The page of markdown file `path`; over a content limit, an empty page in its place,
        which `_prune` keeps only if pages end up below it."""
        included = set(self.included)
        try:
            return self._page(path, parent, title, fallback)
        except OverLimit as over:
            self.included = included  # snippets it read are not imported through it
            name = title or fallback or humanize(_stem(path))
            return self.add(_Draft(parent, name, "", left_out=(path, over)))

    def _page(self, path: str, parent: int | None, title: str | None, fallback: str | None) -> int:
        description = label = None
        text = self.texts[path]
        notes = Notes()
        if not self.dialect:
            text = _checked(text, path)
            # GitBook keeps a page's description in its front matter (its Git Sync writes it).
            description = _meta_text(front_matter(text)[0], "description")
        else:
            # The rewriting is linear and bounded (dialects.MAX_NESTING, MAX_INCLUDED_BYTES),
            # and so is finding the title (a block parse): the limits are checked once, on the
            # body that results, whose parse the link rewriting then reuses.
            if len(text) > MAX_MARKDOWN_BYTES:
                text = _checked(text, path)
            meta = self.meta(path)
            text = front_matter(text)[1]
            text = convert_dialects(text, self._includer(path), notes)
            if self.kind == "docusaurus":
                text = docusaurus_paths(text)
            if len(text) > 2 * MAX_MARKDOWN_BYTES:
                text = _checked(text, path)
            title = title or _meta_text(meta, "title")
            description = _meta_text(meta, "description")
            label = _meta_text(meta, "sidebar_label")
        # Alerts, comments and HTML for every kind of project (bs4 loads here, in the worker).
        from docshelf.imports.markup import clean

        cleaned = clean(text, notes)
        if cleaned != text and len(cleaned) > MAX_MARKDOWN_BYTES:
            cleaned = _checked(cleaned, path)
        text = cleaned
        heading, body = _split_title(text)
        if self.dialect or cleaned is not text:
            body = _checked(body, path)
        # Reported once the page is sure to be imported.
        self.skipped.extend(_noted(path, notes))
        name = title or heading or label or fallback or humanize(_stem(path))
        return self.add(_Draft(parent, name, body, source=path, description=description))

    def _includer(self, path: str) -> Callable[[str], str | None]:
        here = posixpath.dirname(self.root + path)

        def include(target: str) -> str | None:
            # pymdownx.snippets looks from the project's root; authors also write paths from
            # the docs folder or from the page.
            for base in ("", self.root.rstrip("/"), here):
                found = link_path(target, base)
                if found is not None and found in self.sources:
                    self.included.add(found)
                    return front_matter(self.sources[found])[1]
            return None

        return include


def _meta_text(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    return _squash(str(value)) or None if isinstance(value, str | int | float) else None


def _open(data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(BytesIO(data))
    except (*_DAMAGED, zipfile.LargeZipFile) as e:
        raise ConversionError("not a valid zip archive") from e


def _zip_entries(archive: zipfile.ZipFile) -> Iterator[_Entry]:
    for info in archive.infolist():
        if not info.is_dir():
            link = stat.S_ISLNK(info.external_attr >> 16)
            yield _Entry(info.filename, partial(archive.open, info), link=link)


def _open_file(path: Path) -> IO[bytes]:
    return path.open("rb")


def _folder_entries(folder: Path, skipped: list[Skipped]) -> Iterator[_Entry]:
    """Every file under `folder`, as a zip of it would hold them (links to files are followed,
    links to folders are not, and are reported: a link may lead anywhere, or round in a
    circle)."""

    def unreadable(error: OSError) -> None:
        where = Path(error.filename or folder)
        relative = where.relative_to(folder).as_posix() if where != folder else "."
        skipped.append(Skipped(relative + "/", f"cannot be read: {error.strerror or error}"))

    for top, dirs, files in os.walk(folder, onerror=unreadable):
        here = Path(top)
        dirs.sort()  # the walk's order only decides which of two errors speaks first
        for name in dirs:
            relative = (here / name).relative_to(folder).as_posix()
            if (here / name).is_symlink() and _ignored(_parts(relative)) is None:
                skipped.append(Skipped(relative + "/", "a link to a folder: not followed"))
        for name in sorted(files):
            path = here / name
            try:
                regular = stat.S_ISREG(path.stat().st_mode)
            except OSError as e:
                regular, why = False, f"cannot be read: {e.strerror or e}"
            else:
                why = "not a regular file"
            relative = path.relative_to(folder).as_posix()
            if regular or _ignored(_parts(relative)) is not None:
                # What is ignored is never read, only counted, whatever it is.
                yield _Entry(relative, partial(_open_file, path), on_disk=True)
            else:
                skipped.append(Skipped(relative, why))


def _entries(
    source: Iterable[_Entry], max_files: int, ignored: dict[str, Skipped]
) -> tuple[list[tuple[str, _Entry]], int, str]:
    """The content's entries, in order of their paths (so that a folder and an archive of it
    read alike), the ignored ones reported into `ignored` (one line per hidden folder), and how
    many files were ignored."""
    kept: list[tuple[tuple[str, ...], _Entry]] = []
    litter: list[tuple[tuple[str, ...], Skipped]] = []
    for entry in source:
        parts = _parts(entry.name)
        if not parts:
            continue
        if (why := _ignored(parts)) is not None:
            litter.append((parts, why))
            continue
        if entry.link:
            litter.append((parts, Skipped("/".join(parts), "a link: not followed")))
            continue
        kept.append((parts, entry))
        if len(kept) > max_files:
            what = "folder" if entry.on_disk else "archive"
            raise ConversionError(f"the {what} holds more than {max_files} files")
    # Stable: of two entries with one name (an archive may hold both), the first stays first.
    kept.sort(key=lambda k: k[0])
    litter.sort(key=lambda k: k[0])
    # An archive of a folder (GitHub's downloads, "compress" in a file manager) wraps everything
    # in it; the content starts inside.
    tops = {parts[0] for parts, _ in kept}
    wrapper = ""
    if len(tops) == 1 and all(len(parts) > 1 for parts, _ in kept):
        wrapper = next(iter(tops))
        top = wrapper + "/"
        kept = [(parts[1:], entry) for parts, entry in kept]
        litter = [(p, Skipped(w.path.removeprefix(top), w.reason)) for p, w in litter]
    for _, why in litter:
        ignored.setdefault(why.path, why)
    return [("/".join(parts), entry) for parts, entry in kept], len(litter), wrapper


def _load(source: Iterable[_Entry], max_files: int, max_total_bytes: int) -> _Archive:
    ignored: dict[str, Skipped] = {}
    entries, litter, wrapper = _entries(source, max_files, ignored)
    budget = _Budget(max_total_bytes)
    texts: dict[str, str] = {}
    images: dict[str, str] = {}
    blobs: dict[str, bytes] = {}
    skipped = list(ignored.values())
    configs: dict[str, str] = {}
    includes: dict[str, str] = {}
    for path, entry in entries:
        ext = _extension(path)
        is_include = _is_include(tuple(path.split("/"))[-3:]) and ext in _MARKDOWN
        if not is_include and (path in texts or path in images or path in configs):
            skipped.append(Skipped(path, "appears twice in the archive, kept the first"))
            continue
        config = posixpath.basename(path) in _CONFIGS
        if not (is_include or config or ext in _MARKDOWN or ext in _IMAGE_TYPES):
            kind = f".{ext} files" if ext else "files without an extension"
            why = f"unsupported file type: {kind} are not imported, only markdown and images"
            skipped.append(Skipped(path, why))
            continue
        try:
            content = budget.read(entry, path)
        except _Unreadable as e:
            skipped.append(Skipped(path, f"cannot be read: {e}"))
            continue
        if is_include:
            if b"\0" in content:
                skipped.append(Skipped(path, "not a text file"))
            elif path not in includes:  # the first of two entries of one name stays
                includes[path] = _decode(content, path, skipped)
        elif config:
            configs[path] = _decode(content)
        elif ext in _IMAGE_TYPES:
            images[path] = _IMAGE_TYPES[ext]
            blobs[path] = content
        elif b"\0" in content:
            skipped.append(Skipped(path, "not a text file"))
        else:
            texts[path] = _decode(content, path, skipped)
    total = len(entries) + litter - len(configs)
    return _Archive(
        texts,
        images,
        blobs,
        total,
        skipped,
        configs=configs,
        sources=dict(texts),
        includes=includes,
        wrapper=wrapper,
    )


def _find_readme(texts: dict[str, str], folder: str) -> str | None:
    prefix = "" if folder == "." else folder + "/"
    exact = prefix + "README.md"
    if exact in texts:
        return exact
    return next(
        (p for p in texts if _is_readme(p) and (posixpath.dirname(p) or ".") == folder), None
    )


# SUMMARY.md

_PENDING = -2  # a list item whose entry has not been read yet
_NONE = -1  # a list item that made no page
# markdown-it stops reading, silently, what is nested deeper than maxNesting (20 by default: ten
# list levels, so a deeper SUMMARY.md lost its tail). Tables of contents are read with room for
# SUMMARY_MAX_DEPTH list levels (two tokens each, plus the item's paragraph); what reaches
# further is cut out and reported (`_summary_tokens`) rather than lost in silence. One level
# more than an import may hold, so that entries one level too deep are read, then left out by
# the depth check (`_prune`), which names each file and its depth.
SUMMARY_MAX_DEPTH = MAX_IMPORT_DEPTH + 1
_SUMMARY_MD = commonmark(2 * SUMMARY_MAX_DEPTH + 2)


def _summary_target(arc: _Archive, href: str) -> tuple[str | None, str]:
    """The markdown file a SUMMARY entry points at (None if there is none) and how it reads."""
    raw = href.split("#", 1)[0].split("?", 1)[0]
    path = link_path(unquote(raw), "")
    if path is None:
        return None, raw
    if raw.endswith("/") or path == "." or (path not in arc.texts and _extension(path) == ""):
        return _find_readme(arc.texts, path) or posixpath.join(path, "README.md"), raw
    return path, raw


# Parts of a table of contents nested too deep to read that are cut out, each a parse of the
# whole of it, before the import is refused instead.
_SUMMARY_CUTS = 20
_HREF = re.compile(r"\]\(\s*<?([^)\s>]+)")


def _indent(line: str) -> int:
    return len(line[: len(line) - len(line.lstrip(" \t"))].expandtabs(4))


def _summary_tokens(arc: _Archive, summary: str) -> tuple[list[Token], set[str]]:
    """The table of contents parsed, without the parts nested deeper than it is read (each
    reported), and the files those parts named."""
    lines = arc.texts.pop(summary).split("\n")
    deep: set[str] = set()
    limit = _SUMMARY_MD.options.maxNesting - 1
    for _ in range(_SUMMARY_CUTS + 1):
        tokens = _SUMMARY_MD.parse("\n".join(lines))
        # A block opened at the last level is one whose content markdown-it did not read, and
        # it reads nothing after it either: cut that entry out, with what is indented under it.
        cut = next((t for t in tokens if t.level >= limit and t.type != "inline"), None)
        if cut is None:
            return tokens, deep
        start = end = cut.map[0] if cut.map else 0
        indent = _indent(lines[start])
        end += 1
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) >= indent):
            end += 1
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1  # blank lines after it are not its own
        for line in lines[start:end]:
            for href in _HREF.findall(line):
                path, _ = _summary_target(arc, href)
                if path is not None:
                    deep.add(path)
        why = over_limit(
            PAGE_DEPTH,
            f"entries from line {start + 1} to {end} nest deeper than {SUMMARY_MAX_DEPTH} "
            f"levels; an import holds at most {MAX_IMPORT_DEPTH}",
        )
        arc.skipped.append(Skipped(summary, why))
        lines[start:end] = []
    raise ConversionError(f"{summary} nests its entries more than {SUMMARY_MAX_DEPTH} levels deep")


def _from_summary(arc: _Archive, summary: str) -> None:
    tokens, deep = _summary_tokens(arc, summary)
    used: set[str] = set()
    items: list[int] = []  # the open list items: a draft index, _PENDING or _NONE
    group: int | None = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            # An h1 is the table of contents' own title ("Table of contents").
            if token.tag != "h1":
                title = plain_text(tokens[i + 1].children) or "Untitled"
                group = arc.add(_Draft(None, title, "", kind="group"))
            continue
        if token.type == "list_item_open":
            items.append(_PENDING)
        elif token.type == "list_item_close" and items:
            items.pop()
        elif token.type == "inline" and items and items[-1] == _PENDING:
            parent = next((item for item in reversed(items[:-1]) if item >= 0), group)
            items[-1] = _summary_entry(arc, summary, token.children or [], parent, used)
    for path in sorted(set(arc.texts) - used):
        if path in deep:
            why = over_limit(PAGE_DEPTH, f"listed in {summary} too deep to import", "left out")
            arc.left_out += 1
        else:
            why = f"markdown not listed in {summary}"
        arc.skipped.append(Skipped(path, why))


def _summary_entry(
    arc: _Archive, summary: str, children: list[Token], parent: int | None, used: set[str]
) -> int:
    start = next((k for k, c in enumerate(children) if c.type == "link_open"), None)
    if start is None:
        title = plain_text(children)
        return arc.add(_Draft(parent, title, "")) if title else _NONE
    end = next((k for k in range(start, len(children)) if children[k].type == "link_close"), None)
    title = plain_text(children[start + 1 : end])
    href = str(children[start].attrGet("href") or "")
    if is_external(href):
        return link_page(arc, parent, title, href, f"listed in {summary}")
    path, shown = _summary_target(arc, href)
    if path is not None and path in arc.texts and path not in used:
        used.add(path)
        return arc.page(path, parent, title)
    kind: SkipKind = "unresolved"
    if path is not None and path in used:
        why, kind = "listed more than once", "approximated"
    elif path is None:
        why = "outside the archive"
    else:
        why = "not in the archive"
    where = f'listed in {summary} as "{title}"'
    reason = f"{where} but {why}: imported as an empty page"
    arc.skipped.append(Skipped(path or shown, reason, kind))
    return arc.add(_Draft(parent, title or _stem(shown) or "Untitled", ""))


def link_page(arc: _Archive, parent: int | None, title: str, href: str, where: str) -> int:
    """A table of contents' external entry as a link page (GitBook's own for such entries);
    one that would run something when followed is left out."""
    if not safe_url(href):
        arc.skipped.append(Skipped(href[:200], f"{where}: a link that runs a script: left out"))
        return _NONE
    return arc.add(_Draft(parent, title or href, "", kind="link", href=href))


# Folders and READMEs


@dataclass
class _Folder:
    path: str
    files: list[str] = field(default_factory=list)
    folders: dict[str, _Folder] = field(default_factory=dict)

    def index(self, names: tuple[str, ...]) -> str | None:
        """The file that is the folder's own page: the first of `names` found ("README.md" as
        GitBook writes it wins over a "readme.md" beside it)."""
        by_name = {posixpath.basename(p): p for p in sorted(self.files, reverse=True)}
        lowered = {name.lower(): path for name, path in by_name.items()}
        for name in names:
            found = by_name.get(name) or lowered.get(name.lower())
            if found is not None:
                return found
        return None


def _folder_tree(texts: dict[str, str]) -> _Folder:
    root = _Folder(".")
    for path in texts:
        folder = root
        *dirs, _ = path.split("/")
        for name in dirs:
            below = posixpath.join(folder.path, name) if folder.path != "." else name
            folder = folder.folders.setdefault(name, _Folder(below))
        folder.files.append(path)
    return root


@dataclass
class _Category:
    """How a folder shows in the tree: its title, its place among its siblings, its page."""

    title: str | None = None
    order: float | None = None
    index: str | None = None  # a file of the folder to use as its page
    description: str | None = None


_README = ("README.md",)


def _order(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _emit_folder(
    arc: _Archive,
    folder: _Folder,
    parent: int | None,
    index_names: tuple[str, ...] = _README,
    category: Callable[[_Folder], _Category] | None = None,
    own_page: bool = True,
) -> None:
    """Pages for `folder`'s files and folders, each folder a page holding its content: the
    folder's index file when it has one, else an empty page. Siblings go by their front
    matter's order (`sidebar_position`, `order`, `nav_order`, `weight`), then by name."""
    info = category(folder) if category is not None else _Category()
    index = info.index or folder.index(index_names)
    if not own_page:  # its pages go under `parent` (a Docusaurus autogenerated sidebar item)
        index = None
        here = parent
    elif folder.path == ".":
        if index is not None:
            arc.page(index, None)
        here = None
    elif index is not None:
        # A README without a heading is still its folder's page, named as the folder is.
        fallback = humanize(posixpath.basename(folder.path))
        here = arc.page(index, parent, title=info.title, fallback=fallback)
        arc.drafts[here].folder = folder.path
    else:
        title = info.title or humanize(posixpath.basename(folder.path))
        draft = _Draft(parent, title, "", folder=folder.path, description=info.description)
        here = arc.add(draft)
    keyed: list[tuple[float, str, str | _Folder]] = []
    for path in folder.files:
        if path != index:
            meta = arc.meta(path)
            order = next(
                (
                    o
                    for key in ("sidebar_position", "order", "nav_order", "weight")
                    if (o := _order(meta.get(key))) is not None
                ),
                None,
            )
            keyed.append((_INF if order is None else order, posixpath.basename(path), path))
    for name, sub in folder.folders.items():
        order = category(sub).order if category is not None else None
        keyed.append((_INF if order is None else order, name, sub))
    for _, _, entry in sorted(keyed, key=lambda e: (e[0], e[1].casefold(), e[1])):
        if isinstance(entry, _Folder):
            _emit_folder(arc, entry, here, index_names, category)
        else:
            arc.page(entry, here)


_INF = float("inf")


# Links


def _candidates(path: str) -> tuple[str, ...]:
    """The files a link to `path` may mean: the file, or written without its extension, or a
    folder meaning its index page."""
    bare = path.rstrip("/") or "."
    return (
        bare,
        bare + ".md",
        bare + ".mdx",
        posixpath.join(bare, "index.md"),
        posixpath.join(bare, "README.md"),
        posixpath.join(bare, "readme.md"),
    )


def _resolver(
    source: str,
    pages: dict[str, str],
    files: dict[str, str],
    urls: tuple[str, ...] = (),
    wrapper: str = "",
) -> Callable[[str, bool], str | None]:
    base = posixpath.dirname(source)
    # Sites that give each page a folder URL (mkdocs' use_directory_urls, Docusaurus) resolve
    # a relative link from the page's own URL: a/b.md is served as a/b/. A Docusaurus page
    # served elsewhere (its `slug`) resolves from there too.
    url_base = posixpath.join(base, posixpath.splitext(posixpath.basename(source))[0])
    starts = list(dict.fromkeys((base, url_base, *(posixpath.dirname(u) for u in urls))))

    def resolve(target: str, image: bool) -> str | None:
        if not target or target.startswith("#") or is_external(target):
            return None
        raw, sep, fragment = target.partition("#")
        raw = raw.split("?", 1)[0]
        # Try the name as written first: a file may really have "%20" in it.
        for written in dict.fromkeys((raw, unquote(raw))):
            for start in starts:
                path = link_path(written, start)
                if path is None and wrapper:
                    # Up out of the content and back into it by the name of its folder.
                    joined = posixpath.normpath(posixpath.join(start, written))
                    back = "../" + wrapper + "/"
                    if joined.startswith(back):
                        path = link_path(joined[len(back) :], "")
                if path is None:
                    continue
                ref = files.get(path)
                if ref is None and not image:
                    ref = next((pages[c] for c in _candidates(path) if c in pages), None)
                if ref is not None:
                    return f"./{ref}#{fragment}" if sep and fragment else f"./{ref}"
        return None

    return resolve


# A page's links that lead nowhere are reported one by one up to this many, then counted.
_BROKEN_PER_PAGE = 20


def _rewritten(
    source: str,
    markdown: str,
    by_path: dict[str, str],
    file_refs: dict[str, str],
    broken: list[Skipped],
    urls: tuple[str, ...] = (),
    wrapper: str = "",
) -> str:
    """The page's links to pages and images of the import as their refs; each local link that
    leads to none of them is reported (GitBook would show it broken)."""
    resolve = _resolver(source, by_path, file_refs, urls, wrapper)
    nowhere: dict[str, bool] = {}

    def tracked(target: str, image: bool) -> str | None:
        found = resolve(target, image)
        if found is None and target and not target.startswith("#") and not is_external(target):
            nowhere.setdefault(target, image)
        return found

    out = rewrite_links(markdown, tracked)
    for target, image in list(nowhere.items())[:_BROKEN_PER_PAGE]:
        if image:
            why = f"shows the image {target!r}, which is no image of the import: left as written"
        else:
            why = f"links to {target!r}, which is no page or image of the import: left as written"
        broken.append(Skipped(source, why, "unresolved"))
    if len(nowhere) > _BROKEN_PER_PAGE:
        more = len(nowhere) - _BROKEN_PER_PAGE
        why = f"links to {more} more targets that are not in the import: left as written"
        broken.append(Skipped(source, why, "unresolved"))
    limit = None if out == markdown else _limit_passed(markdown, out)
    if limit is None:
        return out
    why = f"links to other pages left as written: rewritten, the page is over the {limit} limit"
    broken.append(Skipped(source, why, "approximated"))
    return markdown


def _limit_passed(before: str, after: str) -> str | None:
    """The limit that rewriting links made a page within the limits exceed (refs can be longer
    than what they replace), if any: its size is checked, and the rest only when it gained
    markup characters, which it rarely does."""
    if len(after.encode("utf-8", "surrogatepass")) > MAX_MARKDOWN_BYTES:
        return PAGE_SIZE
    if markup_count(after) <= markup_count(before):
        return None
    found = violation(after)
    return None if found is None else found[0]


def _finish(arc: _Archive) -> Imported:
    for draft in arc.drafts:
        # A link page holds no pages (GitBook's neither): entries under one go to its parent.
        while draft.parent is not None and arc.drafts[draft.parent].kind == "link":
            draft.parent = arc.drafts[draft.parent].parent
    page_refs = [f"p{i + 1}" for i in range(len(arc.drafts))]
    file_refs = {path: f"f{i + 1}" for i, path in enumerate(sorted(arc.images))}
    by_path: dict[str, str] = {}
    for draft, ref in zip(arc.drafts, page_refs, strict=True):
        if draft.source is not None:
            by_path.setdefault(draft.source, ref)
            if _is_readme(draft.source):
                by_path.setdefault(posixpath.dirname(draft.source) or ".", ref)
        if draft.folder is not None:
            by_path.setdefault(draft.folder, ref)
        for alias in draft.aliases:
            by_path.setdefault(alias, ref)
        if draft.left_out is not None:  # the empty page that stands for it
            by_path.setdefault(draft.left_out[0], ref)
    pages = []
    broken: list[Skipped] = []
    for draft, ref in zip(arc.drafts, page_refs, strict=True):
        markdown = draft.markdown
        if draft.source is not None:
            urls = tuple(a for a in draft.aliases if not a.startswith("docs/"))
            # Paths from the archive's root: a folder it was rerooted to (docs/) is named too.
            wrapper = arc.wrapper if not arc.root else ""
            markdown = _rewritten(draft.source, markdown, by_path, file_refs, broken, urls, wrapper)
        parent = None if draft.parent is None else page_refs[draft.parent]
        pages.append(
            ImportedPage(
                ref, parent, draft.title, markdown, draft.kind, draft.description, draft.href
            )
        )
    files = tuple(
        ImportedFile(ref, posixpath.basename(path), arc.images[path], arc.data[path])
        for path, ref in file_refs.items()
    )
    used = {arc.root + draft.source for draft in arc.drafts if draft.source is not None}
    # A file read only as a snippet include is imported, inside the pages that include it.
    snippets = arc.included - used
    skipped = tuple(s for s in arc.skipped if s.kind != "skipped" or s.path not in snippets)
    reusables, left_out = _reusables(arc)
    imported = len(used) + len(snippets) + len(files) + len(reusables)
    return Imported(
        tuple(pages),
        files,
        arc.total,
        imported,
        (*skipped, *left_out, *broken),
        detected=arc.kind,
        reusables=reusables,
    )


def _reusables(arc: _Archive) -> tuple[tuple[ImportedReusable, ...], list[Skipped]]:
    """The repository's `.gitbook/includes/*.md`, titled by their front matter's `title` (as
    GitBook writes them), else by their file name."""
    out: list[ImportedReusable] = []
    left_out: list[Skipped] = []
    for path in sorted(arc.includes):
        text = arc.includes[path]
        meta, _ = front_matter(text)
        body = _drop_front_matter(text)
        title = meta.get("title")
        title = title.strip() if isinstance(title, str) else ""
        name = posixpath.basename(path)
        if "{% include" in body:
            left_out.append(Skipped(path, "a reusable content that includes another"))
            continue
        from docshelf.imports.markup import clean  # bs4: the worker's alone

        notes = Notes()
        body = clean(body, notes)
        left_out.extend(
            Skipped(path, why, "approximated") for why in dict.fromkeys(notes.approximated)
        )
        found = violation(body)
        if found is not None:
            left_out.append(Skipped(path, over_limit(*found)))
            continue
        ref = f".gitbook/includes/{name}"
        out.append(ImportedReusable(ref, (title or _stem(name))[:512], body.lstrip("\n")))
    return tuple(out), left_out


def from_zip(
    data: bytes, *, max_files: int = 2000, max_total_bytes: int = 200 * 1024 * 1024
) -> Imported:
    """A project (mkdocs, Docusaurus, GitBook repository, or plain folder of markdown) as a
    page tree, see the module's notes.

    Refused: anything but a readable zip, entries reaching outside it, more than `max_files`
    files, or more than `max_total_bytes` once unpacked."""
    with _open(data) as archive:
        arc = _load(_zip_entries(archive), max_files, max_total_bytes)
    return _project(arc)


def from_folder(
    folder: Path, *, max_files: int = 2000, max_total_bytes: int = 200 * 1024 * 1024
) -> Imported:
    """A project in a local folder, read as `from_zip` reads an archive of it: the same files
    kept, left out and reported. Files that cannot be read, other than regular files, and links
    to folders are reported too. The same bounds hold, so a mistaken path (a home directory)
    fails as soon as it shows."""
    walked: list[Skipped] = []
    arc = _load(_folder_entries(folder, walked), max_files, max_total_bytes)
    arc.skipped.extend(walked)
    arc.total += len(walked)
    return _project(arc)


def _project(arc: _Archive) -> Imported:
    # Project layouts load YAML: only in the worker that converts, see projects.py.
    from docshelf.imports.projects import build

    summary = build(arc)
    _prune(arc)
    if not arc.drafts:
        if arc.left_out:
            over = [s for s in arc.skipped if s.reason.startswith("over the ")][:3]
            why = "; ".join(f"{s.path}: {s.reason}" for s in over)
            raise ConversionError(f"nothing to import: every page was left out ({why})")
        where = f"{summary} lists no pages" if summary else "the archive holds no markdown files"
        raise ConversionError(f"nothing to import: {where}")
    return _finish(arc)


def _deeper_than_allowed(depth: int) -> str:
    return over_limit(
        PAGE_DEPTH, f"it would be {depth} levels deep; an import holds at most {MAX_IMPORT_DEPTH}"
    )


def _drop_deep_files(arc: _Archive) -> None:
    """Before a folder walk (which recurses once per folder): a file n folders down becomes a
    page n+1 levels deep, a README the page of its folder. Those deeper than an import holds
    are left out and reported."""
    for path in list(arc.texts):
        parts = path.split("/")
        depth = len(parts) - (1 if _is_readme(path) and len(parts) > 1 else 0)
        if depth > MAX_IMPORT_DEPTH:
            del arc.texts[path]
            arc.skipped.append(Skipped(path, _deeper_than_allowed(depth)))
            arc.left_out += 1


def _prune(arc: _Archive) -> None:
    """Leaves out what the page tree cannot hold, reporting each markdown file it stood for:
    pages deeper than MAX_IMPORT_DEPTH with everything below them (a table of contents or a
    nav nesting too deep), and the empty pages that stand for files over a content limit,
    unless pages below them need a parent."""
    drafts = arc.drafts
    depths: list[int] = []
    for draft in drafts:  # parents come before their children
        depths.append(1 if draft.parent is None else depths[draft.parent] + 1)
    keep = [False] * len(drafts)
    needed = [False] * len(drafts)
    for i in reversed(range(len(drafts))):
        draft = drafts[i]
        keep[i] = depths[i] <= MAX_IMPORT_DEPTH and (draft.left_out is None or needed[i])
        if keep[i] and draft.parent is not None:
            needed[draft.parent] = True
    for i, draft in enumerate(drafts):
        if draft.left_out is not None:
            path, over = draft.left_out
            outcome = "imported as an empty page holding the pages below it" if keep[i] else None
            arc.skipped.append(Skipped(path, over.reason(outcome or "left out")))
            arc.left_out += 1
        elif not keep[i] and draft.source is not None:
            arc.skipped.append(Skipped(draft.source, _deeper_than_allowed(depths[i])))
            arc.left_out += 1
    index: dict[int, int] = {}
    kept: list[_Draft] = []
    for i, draft in enumerate(drafts):
        if keep[i]:
            index[i] = len(kept)
            parent = None if draft.parent is None else index[draft.parent]
            kept.append(replace(draft, parent=parent))
    arc.drafts = kept
