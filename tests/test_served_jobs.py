"""Jobs run by a real `docshelf serve` left at its default (DOCSHELF_RUN_JOBS_IN_SERVER true):
the runner it starts can use the offload pools, every job kind in the registry runs through it,
and it ends with `serve` however `serve` ends. On both engines."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.models import jobs
from tests import factories
from tests.helpers import eventually
from tests.loopback import pages_zip, serving
from tests.server import Server

SPEC = "openapi: 3.0.3\ninfo:\n  title: Pets\n  version: '1'\npaths: {}\n"
PAGES = 260  # past LARGE_IMPORT: applied by a job


@pytest.fixture
def archive_url() -> Iterator[str]:
    """A loopback server with a zip of PAGES pages."""
    with serving({"/docs.zip": (pages_zip(PAGES), "application/zip")}) as base:
        yield f"{base}/docs.zip"


@pytest.fixture
def server(settings: Settings, db: AsyncEngine, tmp_path: Path) -> Iterator[Server]:
    s = Server(
        settings,
        tmp_path,
        default_jobs=True,
        DOCSHELF_FETCH_ALLOWED_HOSTS="127.0.0.1",
        # Every space with pages keeps stored listing pieces, so an import queues their job.
        DOCSHELF_LISTING_SNAPSHOT_PAGES="5",
    )
    try:
        yield s
    finally:
        s.stop()


async def _processed_spec(c: httpx.AsyncClient, org_id: str) -> dict[str, Any]:
    r = await c.post(f"/v1/orgs/{org_id}/openapi", json={"slug": "pets", "source": {"text": SPEC}})
    assert r.status_code == 201, r.text

    async def complete() -> dict[str, Any] | None:
        body: dict[str, Any] = (await c.get(f"/v1/orgs/{org_id}/openapi/pets")).json()
        return body if body["processingState"] == "complete" else None

    return dict(await eventually("the OpenAPI spec's processing", complete))


async def _landed_import(c: httpx.AsyncClient, space_id: str, url: str) -> dict[str, Any]:
    r = await c.post(f"/v1/spaces/{space_id}/content/import", json={"url": url, "source": "zip"})
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "pending" and "importedResources" not in r.json()
    location = r.headers["location"]

    async def finished() -> dict[str, Any] | None:
        body: dict[str, Any] = (await c.get(location)).json()
        return body if body["status"] in ("completed", "failed") else None

    return dict(await eventually("the import run", finished))


def _client(server: Server, who: factories.Who) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base, headers=who.headers, timeout=60)


async def test_the_default_server_processes_specs_and_applies_large_imports(
    server: Server, archive_url: str, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    server.start()
    async with _client(server, admin) as c:
        spec = await _processed_spec(c, org_id)
        assert spec["lastProcessedErrorCount"] == 0 and "lastVersion" in spec, spec
        r = await c.post(f"/v1/orgs/{org_id}/spaces", json={"title": "Handbook"})
        space_id = r.json()["id"]
        run = await _landed_import(c, space_id, archive_url)
        assert (run["status"], run["importedResources"], run["totalResources"]) == (
            "completed",
            PAGES,
            PAGES,
        ), run
        assert (await c.get(f"/v1/spaces/{space_id}")).json()["revision"] == run["revision"]
        pages = (await c.get(f"/v1/spaces/{space_id}/content/pages")).json()["pages"]
        assert [p["title"] for p in pages] == [f"Page {i}" for i in range(PAGES)]
        last = pages[-1]["id"]
        r = await c.get(f"/v1/spaces/{space_id}/content/page/{last}?format=markdown")
        assert r.json()["markdown"] == f"Text of page {PAGES - 1}.\n"


def _registered_kinds() -> list[str]:
    """The registry as a fresh process sees it (this one also holds the tests' own kinds)."""
    code = "import json; from docshelf import tasks; from docshelf.worker import registry; "
    code += "print(json.dumps(registry.kinds()))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, timeout=120
    ).stdout
    kinds: list[str] = json.loads(out)
    return kinds


def _cli(server: Server, *args: str) -> str:
    command = [sys.executable, "-c", "from docshelf.cli.main import main; main()", *args]
    done = subprocess.run(command, env=server.env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.decode()


async def test_every_job_kind_in_the_registry_runs_in_the_served_process(
    server: Server, archive_url: str, db: AsyncEngine
) -> None:
    """Each kind is driven the way a user or operator drives it: through the API, or for
    scheduled and delayed kinds with `docshelf jobs run-now`; a kind added to the registry
    without a way in here fails this test."""
    kinds = _registered_kinds()
    org_id, (admin,) = await factories.org_with_members(db)
    server.start()
    exercised: set[str] = set()
    async with _client(server, admin) as c:
        # A hook hearing every event: each event's dispatch queues a delivery (refused by the
        # fetch guard here, which is still a delivery job run).
        r = await c.post(f"/v1/orgs/{org_id}/webhooks", json={"url": "http://127.0.0.1:9/in"})
        assert r.status_code == 201, r.text
        exercised |= {"events.dispatch", "webhooks.deliver"}
        await _processed_spec(c, org_id)
        exercised.add("openapi.process")
        r = await c.post(f"/v1/orgs/{org_id}/spaces", json={"title": "Handbook"})
        handbook = r.json()["id"]
        run = await _landed_import(c, handbook, archive_url)
        assert run["status"] == "completed", run
        # A space linked to a git remote syncs at once (nothing listens there: the sync
        # records the failure on the link).
        link = {"url": "http://127.0.0.1:9/handbook.git"}
        r = await c.put(f"/v1/spaces/{handbook}/git-sync", json=link)
        assert r.status_code == 200, r.text
        exercised.add("gitsync.sync")
        # The import's end hands its archive to the collector; its move of main stores the
        # large space's listing pieces.
        exercised |= {"content.import", "content.collect_blobs", "content.snapshot_listing"}
        gone = (await c.post(f"/v1/orgs/{org_id}/spaces", json={"title": "Old"})).json()["id"]
        assert (await c.delete(f"/v1/spaces/{gone}")).status_code == 205
        # Purged 7 days after the deletion, or at once when an operator says so.
        assert _cli(server, "jobs", "run-now", "space.purge") == "1 space.purge job due now\n"
        exercised.add("space.purge")
        for scheduled in (
            "events.prune",
            "maintenance.purge",
            "openapi.refresh",
            "content.sweep_listing_snapshots",
            "gitsync.sweep",
        ):
            assert _cli(server, "jobs", "run-now", scheduled) == f"1 {scheduled} job due now\n"
            exercised.add(scheduled)
        assert sorted(exercised) == kinds, "a job kind this test does not drive"

        async def all_done() -> bool:
            async with db.connect() as conn:
                stmt = sa.select(jobs.c.kind).where(jobs.c.status == "done").distinct()
                return set((await conn.execute(stmt)).scalars()) >= exercised

        await eventually("a job of every kind", all_done)
        r = await c.get(f"/v1/spaces/{gone}")
        assert r.status_code == 404, r.text  # purged: not even its admin finds it deleted


# -- the runner ends with `serve` ---------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _descendants(pid: int) -> list[int]:
    tree, found, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.skipif(sys.platform != "linux", reason="reads the process tree from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
async def test_the_served_job_runner_ends_with_serve(
    server: Server, db: AsyncEngine, sig: signal.Signals
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    server.start()
    assert server.process is not None
    async with _client(server, admin) as c:
        await _processed_spec(c, org_id)  # the runner's parse lane is up
    runners = [p for p in _descendants(server.process.pid) if _comm(p) == "docshelf-jobs"]
    assert len(runners) == 1, [(p, _comm(p)) for p in _descendants(server.process.pid)]
    helpers = [runners[0], *_descendants(runners[0])]
    assert "docshelf-parse" in {_comm(p) for p in helpers}
    # Every process `serve` started: the API's (granian's workers) as well as the runner's.
    helpers = _descendants(server.process.pid)
    try:
        os.kill(server.process.pid, sig)  # `serve` alone, not its process group
        server.process.wait(60)

        async def ended() -> bool:
            return not any(map(_alive, helpers))

        await eventually("the API processes, the job runner and its workers ending", ended)
    finally:
        # The API processes are granian's; whatever is left of the group goes here.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGKILL)
