"""Durability: the real server (`docshelf serve`, granian) is killed with SIGKILL in the middle
of a stream of writes (space creations, change-request edits, merges); after a restart every
write it acknowledged is there and the database is consistent. On both engines."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests import factories
from tests.server import Server

WRITERS = 4
# Acknowledged writes to wait for before the kill; the writers keep going until it lands.
BEFORE_KILL = 60


@pytest.fixture
def server(settings: Settings, db: AsyncEngine, tmp_path: Path) -> Iterator[Server]:
    s = Server(settings, tmp_path)
    try:
        yield s
    finally:
        s.stop()


class Acks:
    """Writes the server acknowledged, as seen by the clients."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spaces: list[str] = []
        self.edits: list[tuple[str, str, str]] = []  # space, change request, page title
        self.merges: list[tuple[str, str, str]] = []
        self.count = 0

    def add(self, kind: list[Any], value: Any) -> None:
        with self.lock:
            kind.append(value)
            self.count += 1


def _stream(base: str, headers: dict[str, str], org_id: str, me: int, acks: Acks) -> None:
    """Writes until the server dies; only answers that arrived whole count as acknowledged."""
    n = 0
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
            while True:
                n += 1
                r = c.post(f"/v1/orgs/{org_id}/spaces", json={"title": f"W{me}-{n}"})
                assert r.status_code == 201, r.text
                sid = r.json()["id"]
                acks.add(acks.spaces, sid)
                r = c.post(f"/v1/spaces/{sid}/change-requests", json={"subject": "Edit"})
                assert r.status_code == 201, r.text
                cr = r.json()["id"]
                title = f"Page {me}-{n}"
                change = {"operation": "insert_page", "title": title, "document": {"markdown": "x"}}
                r = c.post(
                    f"/v1/spaces/{sid}/change-requests/{cr}/content", json={"changes": [change]}
                )
                assert r.status_code == 200, r.text
                acks.add(acks.edits, (sid, cr, title))
                r = c.post(f"/v1/spaces/{sid}/change-requests/{cr}/merge")
                assert r.status_code == 200 and r.json()["result"] == "merge", r.text
                acks.add(acks.merges, (sid, cr, title))
    except httpx.TransportError:
        return  # the kill


def _titles(pages: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for page in pages:
        out.add(page["title"])
        out |= _titles(page.get("pages", []))
    return out


async def _consistency(db: AsyncEngine, settings: Settings) -> None:
    if settings.is_sqlite:
        with sqlite3.connect(settings.data_dir / "docshelf.db") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # Both engines: no head, change request or root names something that is not there.
    checks = {
        "space heads": "SELECT count(*) FROM spaces s LEFT JOIN revisions r "
        "ON r.id = s.revision_id WHERE s.revision_id IS NOT NULL AND r.id IS NULL",
        "change request heads": "SELECT count(*) FROM change_requests c LEFT JOIN revisions r "
        "ON r.id = c.revision_id WHERE r.id IS NULL",
        "page roots": "SELECT count(*) FROM revisions r LEFT JOIN content_objects o "
        "ON o.space_id = r.space_id AND o.hash = r.pages_root "
        "WHERE r.pages_root IS NOT NULL AND o.hash IS NULL",
        "numbers": "SELECT count(*) FROM change_requests c JOIN spaces s ON s.id = c.space_id "
        "WHERE c.number > s.change_request_seq",
    }
    async with db.connect() as conn:
        broken = {name: await conn.scalar(sa.text(sql)) for name, sql in checks.items()}
    assert broken == dict.fromkeys(checks, 0)


def _write_until_killed(server: Server, headers: dict[str, str], org_id: str) -> Acks:
    acks = Acks()
    threads = [
        threading.Thread(target=_stream, args=(server.base, headers, org_id, i, acks), daemon=True)
        for i in range(WRITERS)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while acks.count < BEFORE_KILL and time.monotonic() < deadline:
        assert all(t.is_alive() for t in threads), "a writer failed before the kill"
        time.sleep(0.02)
    server.kill()  # writers are mid-request: some writes are in flight, unacknowledged
    for t in threads:
        t.join(30)
    assert acks.count >= BEFORE_KILL, "too few writes were acknowledged before the deadline"
    return acks


def _check_acknowledged(server: Server, headers: dict[str, str], org_id: str, acks: Acks) -> None:
    with httpx.Client(base_url=server.base, headers=headers, timeout=30) as c:
        for sid in acks.spaces:
            assert c.get(f"/v1/spaces/{sid}").status_code == 200, sid
        for sid, cr, title in acks.edits:
            r = c.get(f"/v1/spaces/{sid}/change-requests/{cr}/content/pages")
            assert r.status_code == 200 and title in _titles(r.json()["pages"]), (sid, cr)
        for sid, cr, title in acks.merges:
            assert c.get(f"/v1/spaces/{sid}/change-requests/{cr}").json()["status"] == "merged"
            r = c.get(f"/v1/spaces/{sid}/content/pages")
            assert title in _titles(r.json()["pages"]), (sid, cr)
        # And the restarted server takes writes.
        r = c.post(f"/v1/orgs/{org_id}/spaces", json={"title": "After"})
        assert r.status_code == 201


async def test_acknowledged_writes_survive_sigkill(
    server: Server, db: AsyncEngine, settings: Settings
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    server.start()
    acks = _write_until_killed(server, admin.headers, org_id)
    await _consistency(db, settings)
    server.start()
    _check_acknowledged(server, admin.headers, org_id, acks)
    await _consistency(db, settings)
