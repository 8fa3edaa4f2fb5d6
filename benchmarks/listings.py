"""Listings benchmark: the paged endpoints at limit=50 on a generated 10,000-page space and a
100-page one, which should cost about the same (target: within 2x of each other).

    .venv/bin/python benchmarks/listings.py
    .venv/bin/python benchmarks/listings.py --repeat 50
    .venv/bin/python benchmarks/listings.py --database-url postgresql+asyncpg://user@127.0.0.1/db

In-process like benchmarks/content.py (httpx ASGI transport, one request at a time, the server's
own work only). Each space is written through live edits of 50 pages (content.py's generator:
every page links to its previous sibling and to one external URL), then duplicated: the copy's
first revision creates every page, so its `changes` are the largest a revision can have.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from tests import factories  # noqa: E402

import content as bench  # noqa: E402
from docshelf.app import create_app  # noqa: E402
from docshelf.config import Settings  # noqa: E402
from docshelf.kit.migrate import upgrade  # noqa: E402

SIZES = {"10k": bench.SHAPES["10k"], "100": bench.SHAPES["100"]}
TARGET_RATIO = 2.0


def log(message: str) -> None:
    print(f"[listings {time.strftime('%H:%M:%S')}] {message}", flush=True)


@dataclass
class Space:
    name: str
    pages: int
    urls: dict[str, str] = field(default_factory=dict)
    ms: dict[str, list[float]] = field(default_factory=dict)
    duplicate_s: float = 0.0


async def build(b: bench.Bench, name: str, shape: tuple[int, int, int]) -> Space:
    created = await b.call("POST", f"/v1/orgs/{b.org_id}/spaces", {"title": f"L {name}"}, 201)
    sid = created["id"]
    await b.call("PATCH", f"/v1/spaces/{sid}", {"editMode": "live"})
    log(f"{name}: generating {shape} ...")
    t0 = time.perf_counter()
    leaves = await bench.generate(b, sid, shape, seed=17)
    log(f"{name}: generated in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    copy = await b.call("POST", f"/v1/spaces/{sid}/duplicate", status=201)
    duplicate_s = time.perf_counter() - t0
    space = Space(name, 0, duplicate_s=duplicate_s)
    listing = await b.call("GET", f"/v1/spaces/{sid}/links?limit=50")
    space.pages = len(leaves)
    second = listing["next"]["page"]
    page = leaves[len(leaves) // 2]
    cr = await b.call("POST", f"/v1/spaces/{sid}/change-requests", status=201)
    await b.call(
        "POST",
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/content",
        {"changes": [{"operation": "update_page", "page": page, "title": "Edited"}]},
    )
    space.urls = {
        "links": f"/v1/spaces/{sid}/links?limit=50",
        "links, page 2": f"/v1/spaces/{sid}/links?limit=50&page={second}",
        "links ?status=broken": f"/v1/spaces/{sid}/links?limit=50&status=broken",
        "links ?status=ok": f"/v1/spaces/{sid}/links?limit=50&status=ok",
        "a page's links": f"/v1/spaces/{sid}/content/page/{page}/links?limit=50",
        "revision changes (all pages new)": (
            f"/v1/spaces/{copy['id']}/revisions/{copy['revision']}/changes?limit=50"
        ),
        "change request changes": (f"/v1/spaces/{sid}/change-requests/{cr['id']}/changes?limit=50"),
        "permissions/aggregate": f"/v1/spaces/{sid}/permissions/aggregate?limit=50",
        "space (GET)": f"/v1/spaces/{sid}",
        "org spaces": f"/v1/orgs/{b.org_id}/spaces?limit=50",
    }
    return space


async def measure(b: bench.Bench, space: Space, repeat: int, warmup: int) -> None:
    for label, url in space.urls.items():
        for _ in range(warmup):
            await b.call("GET", url)
        times = []
        for _ in range(repeat):
            ms, _body = await b.timed("GET", url)
            times.append(ms)
        space.ms[label] = times


def report(big: Space, small: Space) -> str:
    lines = [
        f"| endpoint (limit=50) | {small.pages}-leaf space, median ms | "
        f"{big.pages}-leaf space, median ms | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label in big.urls:
        a = statistics.median(small.ms[label])
        z = statistics.median(big.ms[label])
        flag = "" if z / a <= TARGET_RATIO else " (over target)"
        lines.append(f"| {label} | {a:.1f} | {z:.1f} | {z / a:.2f}{flag} |")
    lines.append(
        f"| duplicate the space (POST, once) | {small.duplicate_s * 1000:.0f} | "
        f"{big.duplicate_s * 1000:.0f} | {big.duplicate_s / small.duplicate_s:.1f} |"
    )
    return "\n".join(lines)


async def run(args: argparse.Namespace, settings: Settings) -> None:
    app = create_app(settings)
    engine: AsyncEngine = app.state.engine
    try:
        who = await factories.user(engine, email=f"bench-{time.time_ns()}@example.com")
        org_id = await factories.organization(engine, owner=who, title="Listings bench")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url=bench.BASE, timeout=600
        ) as client:
            b = bench.Bench(client, engine, who.headers, org_id)
            spaces: dict[str, Space] = {}
            for name in ("10k", "100"):
                spaces[name] = await build(b, name, SIZES[name])
            for name in ("10k", "100"):
                await measure(b, spaces[name], args.repeat, args.warmup)
            print()
            print(report(spaces["10k"], spaces["100"]))
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="", help="default: SQLite in a temp dir")
    parser.add_argument("--repeat", type=int, default=20, help="measured runs per endpoint (20)")
    parser.add_argument("--warmup", type=int, default=3, help="discarded runs per endpoint (3)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="docshelf-bench-listings-"))
    settings = Settings(
        data_dir=tmp,
        database_url=args.database_url,
        base_url=bench.BASE,
        rate_limit=0,
        run_jobs_in_server=False,
    )
    db = "PostgreSQL" if settings.resolved_database_url.startswith("postgresql") else "SQLite"
    log(
        f"{db}; git {bench.git_state()}; Python {platform.python_version()}; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
        f"background CPU {bench.cpu_busy_percent():.0f} % of 2 cores before the run"
    )
    log("command: " + " ".join([".venv/bin/python", "benchmarks/listings.py", *sys.argv[1:]]))
    try:
        upgrade(settings)
        asyncio.run(run(args, settings))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
