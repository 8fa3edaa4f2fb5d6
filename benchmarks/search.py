"""Search benchmark: query latency over a generated 10,000-page space, and over an organization of
100 spaces of 100 pages each.

    .venv/bin/python benchmarks/search.py
    .venv/bin/python benchmarks/search.py --database-url postgresql+asyncpg://user@127.0.0.1:5432/db
    .venv/bin/python benchmarks/search.py --data-dir /tmp/sb   # keeps the data: reruns measure only

Like benchmarks/content.py (whose generator and helpers it reuses), the app runs in this process
and is driven through `httpx.ASGITransport`, one request at a time: every figure is the server's
own work for the request (routing, authentication, visibility, the engine's query, presenting).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.factories
from tests import factories

from content import BASE, Bench, generate, git_state, pct
from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.kit.migrate import upgrade

# (query, what it stands for): the generator's vocabulary makes these rare to common.
QUERIES = [
    ("webhook", "one common word"),
    ("rollback quota", "two words"),
    ("section 7", "a word and a number"),
    ("chapter", "a word in titles"),
    ("zyzzyva", "no match"),
]


async def measure(b: Bench, url: str, repeat: int) -> dict[str, tuple[float, float, int, float]]:
    out = {}
    for query, _ in QUERIES:
        for _ in range(3):
            await b.call("GET", f"{url}?query={query}&limit=20")
        times = []
        # CPU time of this process (server and client alike): less sensitive than the wall
        # time to other work on a shared machine.
        cpu = []
        count = 0
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            r = await b.client.get(url, params={"query": query, "limit": 20}, headers=b.headers)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            assert r.status_code == 200, r.text
            count = r.json()["count"]
        out[query] = (statistics.median(times), pct(times, 0.99), count, statistics.median(cpu))
    return out


async def build(b: Bench, who: factories.Who) -> dict[str, str]:
    t0 = time.perf_counter()
    big = await b.call("POST", f"/v1/orgs/{b.org_id}/spaces", {"title": "Big"}, 201)
    await b.call("PATCH", f"/v1/spaces/{big['id']}", {"editMode": "live"})
    await generate(b, big["id"], (20, 10, 50), seed=7)
    print(f"10,000-page space generated in {time.perf_counter() - t0:.0f} s", flush=True)
    other = await factories.organization(b.engine, owner=who, title="Search bench org")
    t0 = time.perf_counter()
    rng = random.Random(3)
    for i in range(100):
        s = await b.call("POST", f"/v1/orgs/{other}/spaces", {"title": f"S{i}"}, 201)
        await b.call("PATCH", f"/v1/spaces/{s['id']}", {"editMode": "live"})
        await generate(b, s["id"], (2, 1, 49), seed=rng.randrange(1 << 30))
    print(f"100 spaces generated in {time.perf_counter() - t0:.0f} s", flush=True)
    return {"space": big["id"], "org": other, "token": who.token, "owner_org": b.org_id}


async def run(
    args: argparse.Namespace, settings: Settings, state: dict[str, str] | None
) -> tuple[str, dict[str, str]]:
    app = create_app(settings)
    engine: AsyncEngine = app.state.engine
    lines = []
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=600) as client:
            if state is not None:
                headers = {"Authorization": f"Bearer {state['token']}"}
                b = Bench(client, engine, headers, state["owner_org"])
            else:
                who = await factories.user(engine, email=f"bench-{time.time_ns()}@example.com")
                org_id = await factories.organization(engine, owner=who, title="Search bench")
                b = Bench(client, engine, who.headers, org_id)
                state = await build(b, who)
            space = await measure(b, f"/v1/spaces/{state['space']}/search", args.repeat)
            org = await measure(b, f"/v1/orgs/{state['org']}/search", args.repeat)
    finally:
        await engine.dispose()
    lines.append(
        f"Commit {git_state()}, {settings.resolved_database_url.split(':')[0]}, "
        f"{args.repeat} runs per query after 3 warm-up runs, limit=20"
    )
    lines.append("")
    lines.append(
        "| query | space (10k pages): median / p99 ms (CPU median), hits | org (100 x 100): "
        "median / p99 (CPU median), spaces |"
    )
    lines.append("| --- | ---: | ---: |")
    for query, what in QUERIES:
        s, o = space[query], org[query]
        lines.append(
            f"| `{query}` ({what}) | {s[0]:.1f} / {s[1]:.1f} ({s[3]:.1f}), {s[2]} | "
            f"{o[0]:.1f} / {o[1]:.1f} ({o[3]:.1f}), {o[2]} |"
        )
    return "\n".join(lines), state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="", help="default: SQLite in a temp dir")
    parser.add_argument("--repeat", type=int, default=100, help="measured runs per query (100)")
    parser.add_argument(
        "--data-dir",
        default="",
        help="keep the generated data here and reuse it on the next run (default: a temp dir, "
        "removed; with --database-url the database must be empty on the first run)",
    )
    args = parser.parse_args()
    tmp = Path(args.data_dir or tempfile.mkdtemp(prefix="docshelf-bench-search-"))
    tmp.mkdir(parents=True, exist_ok=True)
    settings = Settings(
        data_dir=tmp,
        database_url=args.database_url,
        base_url=BASE,
        rate_limit=0,
        run_jobs_in_server=False,
    )
    try:
        upgrade(settings)
        state_file = tmp / "search-bench.json"
        saved = json.loads(state_file.read_text()) if state_file.exists() else None
        text, state = asyncio.run(run(args, settings, saved))
        state_file.write_text(json.dumps(state))
        print(text)
    finally:
        if not args.data_dir:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
