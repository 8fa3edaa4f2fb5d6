"""Page listing benchmark: GET /v1/spaces/{id}/content/pages of the 10,020-page space that
benchmarks/search.py generates, in-process through `httpx.ASGITransport`:

- new revision: a change request renaming a leaf page, re-slugging a page with children (their
  paths change) and adding a page is merged, then main is listed: its first listing, built from
  the previous revision's kept pieces (content/listing/pieces.py);
- listing cache emptied: the same revision listed again after its bytes were dropped;
- no pieces kept: nothing of an earlier listing is kept (objects cached);
- fully cold: no listing, pieces or objects cached (a process that has just started);
- repeated listing (warm): the cached bytes.

After each merge the job queue is drained (outside the timings), as a worker would: the
`content.snapshot_listing` job stores the space's listing pieces (content/lifecycle.py), which
leaves them a few records behind main until the lag passes its bound. So "no pieces kept" and
"fully cold" start from those stored pieces; `--no-stored` runs no job, for the figures of a
space that has none (one below DOCSHELF_LISTING_SNAPSHOT_PAGES, or older code).

    .venv/bin/python benchmarks/search.py --data-dir /tmp/sb          # generates the space once
    .venv/bin/python benchmarks/page_listing.py --data-dir /tmp/sb --save /tmp/listing.json

Every new revision's listing is checked against the revision read, which builds the tree fresh
(`GET .../content`), outside the timings. Each run merges a change request into the space: use
a copy of the data dir. `--save` writes the first answer's bytes (before any merge), so that two
versions of the code can be shown to answer identically (`cmp`); CPU time is printed next to
the wall time, as the machine is shared. Runs against older code too (the caches it lacks are
skipped: its new-revision listing is a whole build).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from content import BASE, git_state, pct
from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.content import service
from docshelf.content.tree import objects
from docshelf.kit.db import unit_of_work
from docshelf.kit.migrate import upgrade
from docshelf.models import listing_snapshots
from docshelf.worker.runner import JobRunner


def clear(*names: str) -> None:
    for name in names:
        cache = getattr(service, name, None) or getattr(objects, name, None)
        if cache is not None:
            cache.clear()


class Timer:
    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    async def get(
        self, client: httpx.AsyncClient, case: str, path: str, headers: dict[str, str]
    ) -> bytes:
        t0, c0 = time.perf_counter(), time.process_time()
        r = await client.get(path, headers=headers)
        self.wall.setdefault(case, []).append((time.perf_counter() - t0) * 1000)
        self.cpu.setdefault(case, []).append((time.process_time() - c0) * 1000)
        assert r.status_code == 200, r.text
        return r.content


async def merge_changes(
    client: httpx.AsyncClient,
    space: str,
    headers: dict[str, str],
    pick: Callable[[], tuple[dict[str, Any], dict[str, Any]]],
    n: int,
) -> None:
    leaf, parent = pick()
    r = await client.post(f"/v1/spaces/{space}/change-requests", headers=headers)
    assert r.status_code == 201, r.text
    cr = r.json()["id"]
    changes = [
        {"operation": "update_page", "page": leaf["id"], "title": f"{leaf['title']} ({n})"},
        {"operation": "update_page", "page": parent["id"], "slug": f"{parent['slug']}-{n}"},
        {
            "operation": "insert_page",
            "title": f"Added {n}",
            "into": parent["id"],
            "document": {"markdown": f"# Added {n}\n"},
        },
    ]
    r = await client.post(
        f"/v1/spaces/{space}/change-requests/{cr}/content",
        json={"changes": changes},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    r = await client.post(f"/v1/spaces/{space}/change-requests/{cr}/merge", headers=headers)
    assert r.status_code == 200, r.text


async def run(args: argparse.Namespace, state: dict[str, str]) -> bytes:
    data = Path(args.data_dir)
    settings = Settings(
        data_dir=data,
        database_url=args.database_url,
        base_url=BASE,
        rate_limit=0,
        run_jobs_in_server=False,
    )
    app = create_app(settings)
    headers = {"Authorization": f"Bearer {state['token']}"}
    space = state["space"]
    path = f"/v1/spaces/{space}/content/pages"
    timer = Timer()
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=600) as client:
            first = await client.get(path, headers=headers)
            assert first.status_code == 200, first.text
            top = orjson.loads(first.content)["pages"]
            parents = [p for t in top for p in t["pages"] if p["pages"]]
            rng = random.Random(5)

            def pick() -> tuple[dict[str, Any], dict[str, Any]]:
                parent = rng.choice(parents)
                return rng.choice(parent["pages"]), rng.choice(parents)

            if args.no_stored:  # none left by an earlier run on this data dir either
                async with unit_of_work(app.state.engine) as conn:
                    await conn.execute(sa.delete(listing_snapshots))
            for n in range(args.repeat):
                await merge_changes(client, space, headers, pick, n)
                if not args.no_stored:
                    await JobRunner(app.state.engine, app.state.job_env).drain()
                new = await timer.get(client, "new revision", path, headers)
                fresh = await client.get(f"/v1/spaces/{space}/content", headers=headers)
                assert new == orjson.dumps({"pages": fresh.json()["pages"]})
                clear("_listings")
                again = await timer.get(client, "listing cache emptied", path, headers)
                assert again == new
                clear("_listings", "_pieces")
                again = await timer.get(client, "no pieces kept", path, headers)
                assert again == new
                clear("_listings", "_pieces", "_cache")
                again = await timer.get(client, "fully cold", path, headers)
                assert again == new
                again = await timer.get(client, "repeated listing (warm)", path, headers)
                assert again == new
    finally:
        await app.state.engine.dispose()
    print(
        f"Commit {git_state()}, {settings.resolved_database_url.split(':')[0]}, "
        f"{len(first.content) / 1e6:.1f} MB, {args.repeat} runs, "
        f"{'no stored pieces' if args.no_stored else 'stored pieces (jobs drained)'}"
    )
    print("| case | median / p95 ms | CPU median ms |")
    print("| --- | ---: | ---: |")
    for case, wall in timer.wall.items():
        print(
            f"| {case} | {statistics.median(wall):.1f} / {pct(wall, 0.95):.1f} | "
            f"{statistics.median(timer.cpu[case]):.1f} |"
        )
    return first.content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="a data dir made by search.py")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--save", default="", help="write the first answer's bytes here")
    parser.add_argument("--no-stored", action="store_true", help="run no job: no stored pieces")
    args = parser.parse_args()
    state = json.loads((Path(args.data_dir) / "search-bench.json").read_text())
    # A data dir made by an older version: its database brought to this one's schema.
    upgrade(Settings(data_dir=Path(args.data_dir), database_url=args.database_url))
    content = asyncio.run(run(args, state))
    if args.save:
        Path(args.save).write_bytes(content)


if __name__ == "__main__":
    main()
