"""One caller's heavy work never holds up another caller's short work. Each kind of work has its
offload lane (kit/offload.py): the tests check which lane each caller's work goes to, and that
a reader's long page renders while a PDF export holds the export lane."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.kit import offload
from tests import factories
from tests.loopback import serving
from tests.offload_work import hold_until, log_and_hold
from tests.reader_site import build

# Past the reader's OFFLOAD_CHARS, and past the inline parse budget of a page write.
LONG = "".join(f"## Part {i}\n\n" + "word " * 60 + "\n\n" for i in range(120))


@pytest.fixture
async def lanes(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[tuple[str, str]]]:
    """(function, lane) of every piece of work handed to the offload pools."""
    used: list[tuple[str, str]] = []
    original = offload.run

    async def recording(
        fn: Any, *args: Any, seconds: float, lane: offload.Lane, tenant: str | None = None
    ) -> Any:
        used.append((fn.__name__, lane))
        return await original(fn, *args, seconds=seconds, lane=lane, tenant=tenant)

    monkeypatch.setattr(offload, "run", recording)
    yield used
    offload.shutdown()


@pytest.fixture
def markdown_url(app: FastAPI, settings: Settings) -> Iterator[str]:
    with serving({"/long.md": (LONG.encode(), "text/markdown")}) as base:
        app.state.settings = settings.model_copy(update={"fetch_allowed_hosts": "127.0.0.1"})
        yield f"{base}/long.md"
        app.state.settings = settings


async def test_each_kind_of_work_goes_to_its_own_lane(
    client: httpx.AsyncClient, db: AsyncEngine, lanes: list[tuple[str, str]], markdown_url: str
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org, admin, editMode="live")

    # A page write's parse: the `parse` lane.
    r = await client.post(
        f"/v1/spaces/{space['id']}/content",
        json={
            "changes": [
                {"operation": "insert_page", "title": "Long", "document": {"markdown": LONG + "w"}}
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    assert set(lanes) == {("prepare_many", "parse")}

    # An import, its conversion and the parse of its pages: the `convert` lane alone, so a
    # page write's parse never waits behind someone's import.
    lanes.clear()
    r = await client.post(
        f"/v1/spaces/{space['id']}/content/import",
        json={"url": markdown_url, "source": "markdown"},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    assert {lane for _, lane in lanes} == {"convert"}, lanes
    assert {fn for fn, _ in lanes} == {"convert", "prepare_many"}

    # A PDF export: the `render` lane.
    lanes.clear()
    r = await client.get(f"/v1/spaces/{space['id']}/pdf", headers=admin.headers)
    assert r.status_code == 200, r.text
    assert lanes == [("render_pdf", "render")]

    # A reader's long page: the `read` lane, never behind an export.
    lanes.clear()
    site = await build(client, org, admin, guide=[("Long", LONG), ("Short", "s")])
    lanes.clear()
    r = await client.get(site.address)
    assert r.status_code == 200 and r.text.count('<h2 id="part-') == 120
    assert lanes == [("_render", "read")]


async def test_a_reader_page_renders_while_an_export_holds_its_lane(
    client: httpx.AsyncClient, db: AsyncEngine, tmp_path: Path
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    site = await build(client, org, admin, guide=[("Long", LONG), ("Short", "s")])
    started, gate = tmp_path / "started", tmp_path / "gate"
    # Another organization's export: its render holds the export lane's one worker until
    # released.
    export = asyncio.create_task(
        offload.run(hold_until, str(started), str(gate), 600.0, seconds=600, lane="render")
    )
    try:
        for _ in range(1200):
            if started.exists() or export.done():
                break
            await asyncio.sleep(0.05)
        assert started.exists(), export
        # A visitor of this organization's site reads a long page meanwhile. (wait_for only keeps a
        # regression from hanging the suite; the assertion is on the order of events.)
        r = await asyncio.wait_for(client.get(site.address), 120)
        assert r.status_code == 200 and r.text.count('<h2 id="part-') == 120
        assert not export.done()  # the page did not wait for the export
        gate.touch()
        assert await asyncio.wait_for(export, 120) == "released"
    finally:
        gate.touch()
        await asyncio.gather(export, return_exceptions=True)
        offload.shutdown()


async def test_a_lane_takes_turns_between_organizations(tmp_path: Path) -> None:
    """Organization A's export holds the export lane's one worker and A queues two more
    before B queues one: B's is the next to start, not the last."""
    log, gate = tmp_path / "log", tmp_path / "gate"

    def export(name: str, org: str) -> asyncio.Task[str]:
        work = offload.run(
            log_and_hold, str(log), name, str(gate), 600.0, seconds=600, lane="render", tenant=org
        )
        return asyncio.create_task(work)

    tasks = [export("a1", "A")]
    try:
        for _ in range(1200):
            # Its line, not only the file: the worker creates the file before it writes.
            if (log.exists() and log.read_text()) or tasks[0].done():
                break
            await asyncio.sleep(0.05)
        assert log.read_text() == "a1\n", tasks[0]
        for name, org in (("a2", "A"), ("a3", "A"), ("b1", "B")):
            tasks.append(export(name, org))
            await asyncio.sleep(0)  # each reaches the lane before the next is asked for
        gate.touch()
        assert await asyncio.wait_for(asyncio.gather(*tasks), 120) == ["a1", "a2", "a3", "b1"]
        assert log.read_text().split() == ["a1", "b1", "a2", "a3"]
    finally:
        gate.touch()
        await asyncio.gather(*tasks, return_exceptions=True)
        offload.shutdown()


async def test_a_caller_cancelled_while_waiting_never_holds_the_lane(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A waiter cancelled (a job's deadline, a stopped runner) just before a worker frees up:
    the worker goes to the next waiter, and the lane is free once everyone is done."""
    monkeypatch.setattr(offload, "_workers", 1)
    turns = offload._Turns()
    await turns.enter("a")  # holds the one worker
    b = asyncio.ensure_future(turns.enter("b"))
    c = asyncio.ensure_future(turns.enter("c"))
    await asyncio.sleep(0)
    b.cancel()
    turns.leave()  # before b's task has run again to take its ticket out
    await asyncio.wait_for(c, 5)
    with contextlib.suppress(asyncio.CancelledError):
        await b
    turns.leave()
    assert (turns.busy, turns.waiting) == (0, {})
    await asyncio.wait_for(turns.enter("d"), 5)  # admitted at once
    turns.leave()
