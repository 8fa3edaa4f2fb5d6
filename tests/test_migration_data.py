"""Migrations keep the rows they find. On SQLite, Alembic's batch mode rebuilds a table by
copying it and dropping the old one, which with foreign keys on would cascade into every table
that points at it (migration 0023 rebuilt `sites` and emptied their sections and share links)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

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


async def test_upgrading_keeps_private_spaces_closed_and_revokes_sso_tokens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Migration 0027 revokes the tokens of accounts that logged in through SSO (any of them may
    have come from the old e-mail match); 0030 keeps the member access private spaces had (none
    through the organization role) and names the published sites that now show one."""
    settings = Settings(data_dir=tmp_path, database_url="")
    await asyncio.to_thread(migrate.upgrade, settings, "0026")
    path = tmp_path / "docshelf.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys=ON")
    _insert(db, "organizations", {"id": "org1", "email_domains": "[]"})
    for user, sso in (("u1", 1), ("u2", 0)):
        _insert(db, "users", {"id": user, "email": f"{user}@example.com"})
        _insert(db, "members", {"organization_id": "org1", "user_id": user, "sso": sso})
        _insert(db, "api_tokens", {"id": f"t{user}", "user_id": user, "token_hash": f"h{user}"})
    for space, visibility in (("s1", "private"), ("s2", "public")):
        _insert(
            db,
            "spaces",
            {
                "id": space,
                "organization_id": "org1",
                "visibility": visibility,
                "default_level": "inherit",
            },
        )
    _insert(db, "sites", {"id": "site1", "organization_id": "org1", "published": 1})
    _insert(db, "site_spaces", {"id": "ss1", "site_id": "site1", "space_id": "s1"})
    db.commit()
    db.close()
    with caplog.at_level(logging.WARNING, logger="docshelf.migrations"):
        await asyncio.to_thread(migrate.upgrade, settings, "head")
    with sqlite3.connect(path) as db:
        levels = dict(db.execute("SELECT id, default_level FROM spaces"))
        assert levels == {"s1": None, "s2": "inherit"}
        revoked = dict(db.execute("SELECT user_id, revoked_at IS NOT NULL FROM api_tokens"))
        assert revoked == {"u1": 1, "u2": 0}
    assert [r.getMessage() for r in caplog.records if r.name == "docshelf.migrations"] == [
        "site site1 of organization org1 publishes the private space s1: its audience now "
        "reads it (GitBook's model); unpublish the site or take the space out of it if that "
        "is not meant"
    ]
