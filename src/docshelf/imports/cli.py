"""What `docshelf import` reads: local folders, archives and files, or a URL."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.config import Settings
from docshelf.fetch import Fetcher
from docshelf.imports.convert import ConversionError, Imported, from_folder
from docshelf.imports.service import MAX_IMPORT_BYTES, convert
from docshelf.kit.errors import BadRequest, NotFound, SpaceLocked
from docshelf.space import repository as space_repository

_BY_SUFFIX = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".docx": "docx",
    ".zip": "zip",
}
_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


async def load_url(settings: Settings, source: str) -> Imported:
    fetched = await Fetcher.from_settings(settings, max_bytes=MAX_IMPORT_BYTES).fetch(source)
    if not 200 <= fetched.status < 300:
        raise BadRequest(f"{source} answered HTTP {fetched.status}")
    name = fetched.url.rstrip("/").rsplit("/", 1)[-1] or "index"
    kind = _BY_SUFFIX.get(Path(name).suffix.lower())
    if kind is None:
        ctype = (fetched.content_type or "").split(";")[0].strip().lower()
        kind = {"text/html": "html", "application/zip": "zip", _DOCX: "docx"}.get(ctype, "markdown")
    return convert(kind, fetched.body, name)


def load_local(source: str) -> Imported:
    path = Path(source)
    if path.is_dir():
        # Read as an archive of it would be, from the same code: what a folder and its zip
        # import, leave out and report is the same.
        try:
            return from_folder(path)
        except ConversionError as exc:
            raise BadRequest(f"Cannot import {source}: {exc}") from None
    if not path.is_file():
        raise BadRequest(f"{source}: no such file or folder")
    kind = _BY_SUFFIX.get(path.suffix.lower())
    if kind is None:
        raise BadRequest(f"{source}: import a folder, a .zip, a .md, an .html or a .docx file")
    return convert(kind, path.read_bytes(), path.name)


async def require_importable(conn: AsyncConnection, space_id: str) -> None:
    row = await space_repository.get(conn, space_id)
    if row is None or row["deleted_at"] is not None:
        raise NotFound("Space not found")
    if row["edit_mode"] == "locked":
        raise SpaceLocked()
