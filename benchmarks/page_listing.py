"""Page listing benchmark: GET /v1/spaces/{id}/content/pages of the 10,020-page space that
benchmarks/search.py generates, first listing of a revision (cold: the listing cache emptied
before each request) and repeated listing (warm), in-process through `httpx.ASGITransport`.

    .venv/bin/python benchmarks/search.py --data-dir /tmp/sb          # generates the space once
    .venv/bin/python benchmarks/page_listing.py --data-dir /tmp/sb --save /tmp/listing.json

`--save` writes the answer's bytes, so that two versions of the code can be shown to answer
identically (`cmp`); CPU time is printed next to the wall time, as the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from content import BASE, git_state, pct
from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.content import service


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
    path = f"/v1/spaces/{state['space']}/content/pages"
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=600) as client:
            first = await client.get(path, headers=headers)
            assert first.status_code == 200, first.text
            cold: list[float] = []
            cold_cpu: list[float] = []
            warm: list[float] = []
            for _ in range(args.repeat):
                service._listings.clear()
                t0, c0 = time.perf_counter(), time.process_time()
                r = await client.get(path, headers=headers)
                cold.append((time.perf_counter() - t0) * 1000)
                cold_cpu.append((time.process_time() - c0) * 1000)
                assert r.content == first.content
                t0 = time.perf_counter()
                r = await client.get(path, headers=headers)
                warm.append((time.perf_counter() - t0) * 1000)
                assert r.content == first.content
    finally:
        await app.state.engine.dispose()
    print(
        f"Commit {git_state()}, {settings.resolved_database_url.split(':')[0]}, "
        f"{len(first.content) / 1e6:.1f} MB, {args.repeat} runs"
    )
    print("| case | median / p95 ms | CPU median ms |")
    print("| --- | ---: | ---: |")
    print(
        f"| first listing of a revision (cold) | {statistics.median(cold):.1f} / "
        f"{pct(cold, 0.95):.1f} | {statistics.median(cold_cpu):.1f} |"
    )
    print(f"| repeated listing (warm) | {statistics.median(warm):.1f} / {pct(warm, 0.95):.1f} | |")
    return first.content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="a data dir made by search.py")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--save", default="", help="write the answer's bytes here")
    args = parser.parse_args()
    state = json.loads((Path(args.data_dir) / "search-bench.json").read_text())
    content = asyncio.run(run(args, state))
    if args.save:
        Path(args.save).write_bytes(content)


if __name__ == "__main__":
    main()
