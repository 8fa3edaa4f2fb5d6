"""Migrations keep the rows they find. On SQLite, Alembic's batch mode rebuilds a table by
copying it and dropping the old one, which with foreign keys on would cascade into every table
that points at it (migration 0023 rebuilt `sites` and emptied their sections and share links)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from docshelf.config import Settings
from docshelf.kit import migrate

CHILDREN = ("site_sections", "site_section_groups", "site_share_links")


def _insert(db: sqlite3.Connection, table: str, values: dict[str, object]) -> None:
    """`values`, plus a filler for every other required column without a default."""
    for _, name, _, notnull, default, _ in db.execute(f"PRAGMA table_info({table})"):
        if name not in values and notnull and default is None:
            values[name] = "2026-01-01 00:00:00" if name.endswith("_at") else f"x_{name}"
    columns = ", ".join(values)
    marks = ", ".join("?" * len(values))
    db.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(values.values()))


def _counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in CHILDREN}


async def test_rebuilding_a_table_keeps_the_rows_pointing_at_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url="")
    await asyncio.to_thread(migrate.upgrade, settings, "0022")
    path = tmp_path / "docshelf.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys=ON")
    _insert(db, "organizations", {"id": "org1"})
    _insert(db, "sites", {"id": "site1", "organization_id": "org1", "published": 1})
    _insert(db, "site_section_groups", {"id": "g1", "site_id": "site1", "position": 0})
    _insert(db, "site_sections", {"id": "s1", "site_id": "site1", "is_default": 1, "position": 0})
    _insert(db, "site_share_links", {"id": "l1", "site_id": "site1", "active": 1})
    db.commit()
    db.close()
    before = _counts(path)
    assert before == dict.fromkeys(CHILDREN, 1)
    await asyncio.to_thread(migrate.upgrade, settings, "head")
    assert _counts(path) == before
    with sqlite3.connect(path) as db:
        # Foreign keys are back on for the app's connections (set per connection).
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []


async def test_the_search_index_keeps_its_rows_and_their_order_through_its_rebuild(
    tmp_path: Path,
) -> None:
    """Migration 0025 rebuilds SQLite's FTS5 table with one more column: the rows stay, under
    the same rowids (a broad query's candidates are the highest), and are still found."""
    settings = Settings(data_dir=tmp_path, database_url="")
    await asyncio.to_thread(migrate.upgrade, settings, "0023")
    path = tmp_path / "docshelf.db"
    rows = [
        (7, "s1", "p1", 0, None, "Webhook setup", None, "How to set one up."),
        (9, "s1", "p2", 1, "limits", "Quotas", "Limits", "A webhook per minute."),
    ]
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO search_sections(rowid, space_id, page_id, position, anchor, page_title,"
            " section_title, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    await asyncio.to_thread(migrate.upgrade, settings, "head")
    with sqlite3.connect(path) as db:
        got = db.execute(
            "SELECT rowid, space_id, page_id, position, anchor, page_title, section_title, body,"
            " document, title_vector FROM search_sections ORDER BY rowid"
        ).fetchall()
        assert got == [(*r, None, None) for r in rows]
        found = db.execute(
            "SELECT rowid FROM search_sections WHERE search_sections MATCH"
            " '{page_title section_title body} : webhook' ORDER BY rowid"
        ).fetchall()
        assert found == [(7,), (9,)]
