"""The data directory holds the database, the file bytes and the admin token: only the user
running Docshelf may read it. What Docshelf creates there is private from the start (0700
directories, 0600 files); what already exists is left as it is, and `serve` warns about it."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from sqlalchemy.engine import make_url

from docshelf.config import Settings

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def sqlite_file(settings: Settings) -> Path | None:
    if not settings.is_sqlite:
        return None
    database = make_url(settings.resolved_database_url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def blob_dir(settings: Settings) -> Path | None:
    if settings.blob_storage.strip().lower() != "local":
        return None
    return settings.blob_dir or settings.data_dir / "blobs"


def _private_dir(path: Path) -> None:
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    os.chmod(path, PRIVATE_DIR)  # whatever the umask left


def prepare(settings: Settings) -> None:
    """Creates the data directory, the SQLite database file and the blob directory where they
    are missing, private. SQLite gives its -wal and -shm files the mode of the database file,
    so creating that one 0600 (empty: SQLite takes an empty file for a new database) keeps the
    journals private too."""
    _private_dir(settings.data_dir)
    database = sqlite_file(settings)
    if database is not None:
        _private_dir(database.parent)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    blobs = blob_dir(settings)
    if blobs is not None:
        _private_dir(blobs)


def readable_by_others(settings: Settings) -> list[tuple[Path, int]]:
    """The paths holding private data that group or other users can read (or, for a
    directory, enter), with their modes."""
    paths = [settings.data_dir, settings.data_dir / "admin-token"]
    database = sqlite_file(settings)
    if database is not None:
        paths += [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
    blobs = blob_dir(settings)
    if blobs is not None:
        paths.append(blobs)
    found = []
    for path in dict.fromkeys(paths):
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            continue
        exposed = 0o055 if stat.S_ISDIR(mode) else 0o044
        if mode & exposed:
            found.append((path, stat.S_IMODE(mode)))
    return found


def warnings(settings: Settings) -> list[str]:
    return [
        f"{path} is readable by other users (mode {mode:04o}); "
        f"run: chmod {'700' if path.is_dir() else '600'} {path}"
        for path, mode in readable_by_others(settings)
    ]
