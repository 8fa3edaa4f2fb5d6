"""PDF export: time and peak memory of rendering a 100-page space (`GET /v1/spaces/{id}/pdf`).

Runs the app in-process over HTTP (httpx's ASGI transport, a temporary SQLite database unless
--database-url), builds a space of 100 pages (10 top-level pages of 9 sub-pages each; ~1.5 KB of
markdown a page: headings, paragraphs, a list, a Python code block, a table, links, and an
image on every tenth page), then measures:

- the first export of a one-page space: starting the offload pool's `render` worker, importing
  WeasyPrint and loading fonts;
- --runs cold exports of the 100-page space (the space is renamed between runs, so each one
  renders): wall time of the request, CPU time of the render worker (the figure that does not
  depend on what else the host runs), PDF size and sheets;
- the peak resident size (VmHWM) of the render worker process;
- a repeated request for unchanged content (served from the stored PDF): median of 5;
- how long an unrelated `GET /v1/orgs/{id}` waits while a cold export renders (worst and p99,
  one every 5 ms), which shows the render is off the event loop.

    .venv/bin/python benchmarks/pdf.py
    .venv/bin/python benchmarks/pdf.py --database-url postgresql+asyncpg://user@127.0.0.1/db
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pypdf
from PIL import Image

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.factories
sys.path.insert(0, str(HERE))  # content.py's page generator

from tests import factories  # noqa: E402

import content as gen  # noqa: E402
from docshelf.app import create_app  # noqa: E402
from docshelf.config import Settings  # noqa: E402
from docshelf.kit import offload  # noqa: E402
from docshelf.kit.migrate import upgrade  # noqa: E402

BASE = "http://bench"


def log(message: str) -> None:
    print(f"[pdf {time.strftime('%H:%M:%S')}] {message}", flush=True)


def children() -> dict[int, str]:
    """Child processes of this one: pid -> command line."""
    me = os.getpid()
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == me:
                out[int(entry.name)] = (entry / "cmdline").read_text().replace("\0", " ")
        except (OSError, ValueError, IndexError):
            continue
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time of these processes so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def image(rng: random.Random) -> str:
    out = io.BytesIO()
    color = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
    Image.new("RGB", (640, 360), color).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def page_markdown(rng: random.Random, title: str, n: int) -> str:
    body = gen.page_markdown(rng, title, None)
    table = "| Option | Default | Meaning |\n|---|---|---|\n" + "\n".join(
        f"| `{rng.choice(gen.WORDS)}` | {rng.randint(1, 100)} | {gen.sentence(rng, 3, 6)} |"
        for _ in range(4)
    )
    picture = f"\n\n![Figure {n}](./img{n})\n" if n % 10 == 0 else ""
    return f"{body}\n{table}{picture}"


async def build(client: httpx.AsyncClient, org: str, admin: Any, rng: random.Random) -> str:
    r = await client.post(
        f"/v1/orgs/{org}/spaces", json={"title": "Handbook"}, headers=admin.headers
    )
    sid = r.json()["id"]
    await client.patch(f"/v1/spaces/{sid}", json={"editMode": "live"}, headers=admin.headers)
    n = 0
    for top in range(10):
        changes: list[dict[str, Any]] = []
        title = f"Chapter {top + 1}"
        if n % 10 == 0:
            changes.append(
                {
                    "operation": "insert_files",
                    "files": [
                        {
                            "name": f"img{n}.png",
                            "base64": image(rng),
                            "contentType": "image/png",
                            "ref": f"img{n}",
                        }
                    ],
                }
            )
        changes.append(
            {
                "operation": "insert_page",
                "title": title,
                "ref": f"top{top}",
                "document": {"markdown": page_markdown(rng, title, n)},
            }
        )
        r = await client.post(
            f"/v1/spaces/{sid}/content", json={"changes": changes}, headers=admin.headers
        )
        assert r.status_code == 200, r.text
        parent = r.json()["changes"][0]["page"]["id"]
        n += 1
        subs = []
        for sub in range(9):
            title = f"Section {top + 1}.{sub + 1}"
            subs.append(
                {
                    "operation": "insert_page",
                    "title": title,
                    "into": parent,
                    "document": {"markdown": page_markdown(rng, title, n)},
                }
            )
            n += 1
        r = await client.post(
            f"/v1/spaces/{sid}/content", json={"changes": subs}, headers=admin.headers
        )
        assert r.status_code == 200, r.text
    return sid


async def export(client: httpx.AsyncClient, sid: str, who: Any) -> tuple[float, bytes]:
    start = time.perf_counter()
    r = await client.get(f"/v1/spaces/{sid}/pdf", headers=who.headers)
    elapsed = time.perf_counter() - start
    assert r.status_code == 200, r.text
    data = await client.get(r.json()["url"][len(BASE) :])
    assert data.status_code == 200
    return elapsed, data.content


async def probe(client: httpx.AsyncClient, path: str, who: Any, stop: asyncio.Event) -> list[float]:
    waits: list[float] = []
    while not stop.is_set():
        start = time.perf_counter()
        r = await client.get(path, headers=who.headers)
        assert r.status_code == 200
        waits.append(time.perf_counter() - start)
        await asyncio.sleep(0.005)
    return waits


async def run(args: argparse.Namespace, settings: Settings) -> None:
    if True:
        app = create_app(settings)
        db = app.state.engine
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=600) as client:
            org, (admin,) = await factories.org_with_members(db)
            other_org, (other,) = await factories.org_with_members(db)
            rng = random.Random(7)
            log("building a 100-page space")
            sid = await build(client, org, admin, rng)
            small = (
                await client.post(
                    f"/v1/orgs/{org}/spaces", json={"title": "Warm-up"}, headers=admin.headers
                )
            ).json()["id"]
            before = children()
            first, _ = await export(client, small, admin)
            workers = [p for p, cmd in children().items() if p not in before and "spawn" in cmd]
            log(f"first export (1-page space, worker start included): {first:.2f} s")
            renders: list[float] = []
            cpus: list[float] = []
            pdf = b""
            for i in range(args.runs):
                if i:
                    await client.patch(
                        f"/v1/spaces/{sid}", json={"title": f"Handbook {i}"}, headers=admin.headers
                    )
                stop = asyncio.Event()
                watcher = asyncio.create_task(probe(client, f"/v1/orgs/{other_org}", other, stop))
                cpu = cpu_seconds(workers)
                elapsed, pdf = await export(client, sid, admin)
                cpu = cpu_seconds(workers) - cpu
                stop.set()
                waits = sorted(await watcher)
                renders.append(elapsed)
                cpus.append(cpu)
                p99 = waits[min(len(waits) - 1, int(len(waits) * 0.99))]
                log(
                    f"cold export {i + 1}: {elapsed:.2f} s ({cpu:.2f} s CPU in the worker); "
                    "unrelated GET during it: "
                    f"{len(waits)} requests, worst {waits[-1] * 1000:.1f} ms, "
                    f"p99 {p99 * 1000:.1f} ms"
                )
            sheets = len(pypdf.PdfReader(io.BytesIO(pdf)).pages)
            hits = sorted([(await export(client, sid, admin))[0] for _ in range(5)])
            peaks = {pid: peak_mb(pid) for pid in workers}
            log(
                f"100 pages -> {sheets} sheets, {len(pdf) / 1024:.0f} KB; cold export median "
                f"{statistics.median(renders):.2f} s (min {min(renders):.2f}, max "
                f"{max(renders):.2f}), worker CPU median {statistics.median(cpus):.2f} s; "
                f"repeated request median {hits[2] * 1000:.1f} ms"
            )
            for pid, mb in peaks.items():
                log(f"render worker {pid}: peak resident size (VmHWM) {mb:.0f} MB")
        offload.shutdown()
        await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            database_url=args.database_url or f"sqlite+aiosqlite:///{tmp}/bench.db",
            base_url=BASE,
            rate_limit=0,
            run_jobs_in_server=False,
        )
        upgrade(settings)
        asyncio.run(run(args, settings))


if __name__ == "__main__":
    main()
