"""Published reader benchmark: a page of a published 1,000-page site.

    .venv/bin/python benchmarks/reader.py               # SQLite in a temp dir
    .venv/bin/python benchmarks/reader.py --database-url postgresql+asyncpg://user@host/db

Builds the site through the API (in process), then measures:
- in process, one request at a time through httpx.ASGITransport (the server's own work): the
  first view of a page (markdown rendered), a repeated view (rendered HTML kept per revision),
  and a conditional GET answered 304; p50 and p95 of each;
- over the network stack: `docshelf serve` (one worker) on the same data, loaded with wrk
  (2 threads, 32 connections, 8 s) on one page, full answers then 304 answers (If-None-Match).
Needs wrk (apt-get install wrk).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.factories
from tests import factories

from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.kit.migrate import upgrade

BASE = "http://127.0.0.1"
PAGES = 1000
WORDS = ["alpha", "beta", "gamma", "delta", "deploy", "cluster", "webhook", "quota", "rollback"]


def _markdown(i: int) -> str:
    body = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60))
    return (
        f"Page {i} introduction. {body}\n\n## Setup {i}\n\n{body}\n\n"
        f"```python\ndef page_{i}():\n    return {i}\n```\n\n## Details\n\n"
        f"| a | b |\n|---|---|\n| {i} | {body[:40]} |\n\n- one\n- two\n- [x] done\n"
    )


async def build(settings: Settings) -> tuple[str, list[str]]:
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=120) as client:
        org, (admin,) = await factories.org_with_members(app.state.engine)
        space = await factories.api_space(
            client, org, admin, title="Big", visibility="public", editMode="live"
        )
        for start in range(0, PAGES, 50):
            changes = [
                {
                    "operation": "insert_page",
                    "title": f"Chapter {i}",
                    "document": {"markdown": _markdown(i)},
                }
                for i in range(start, start + 50)
            ]
            r = await client.post(
                f"/v1/spaces/{space['id']}/content",
                json={"changes": changes},
                headers=admin.headers,
            )
            assert r.status_code == 200, r.text
        r = await client.post(
            f"/v1/orgs/{org}/sites",
            json={"title": "Big docs", "visibility": "public", "spaces": [space["id"]]},
            headers=admin.headers,
        )
        assert r.status_code == 201, r.text
        site = r.json()
        url = f"/v1/orgs/{org}/sites/{site['id']}"
        assert (await client.post(f"{url}/publish", headers=admin.headers)).status_code == 200
    await app.state.engine.dispose()
    address = f"/{org}/{site['id']}/"
    return address, [f"{address}chapter-{i}" for i in range(PAGES)]


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def in_process(settings: Settings, paths: list[str]) -> dict[str, list[float]]:
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    out: dict[str, list[float]] = {"first view": [], "repeat view": [], "304": []}
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        sample = paths[::5]  # 200 distinct pages
        for path in sample:
            t0 = time.perf_counter()
            r = await client.get(path)
            out["first view"].append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, r.text
        for _ in range(2):
            for path in sample:
                t0 = time.perf_counter()
                r = await client.get(path)
                out["repeat view"].append((time.perf_counter() - t0) * 1000)
                etag = r.headers["etag"]
                t0 = time.perf_counter()
                r = await client.get(path, headers={"If-None-Match": etag})
                out["304"].append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 304
    await app.state.engine.dispose()
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wrk(url: str, headers: list[str], seconds: int) -> tuple[float, str]:
    command = ["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency"]
    for h in headers:
        command += ["-H", h]
    out = subprocess.run([*command, url], capture_output=True, text=True, timeout=seconds + 60)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out.stdout)
    p50 = re.search(r"^\s+50%\s+(\S+)", out.stdout, re.M)
    return (float(rate[1]) if rate else 0.0), (p50[1] if p50 else "?")


def over_network(settings: Settings, path: str, seconds: int) -> dict[str, tuple[float, str]]:
    port = _free_port()
    env = {
        **os.environ,
        "DOCSHELF_DATA_DIR": str(settings.data_dir),
        "DOCSHELF_DATABASE_URL": settings.resolved_database_url,
        "DOCSHELF_RUN_JOBS_IN_SERVER": "false",
        "DOCSHELF_RATE_LIMIT": "0",
        "DOCSHELF_BASE_URL": BASE,
        "DOCSHELF_LOG_LEVEL": "warning",
    }
    command = [sys.executable, "-c", "from docshelf.cli.main import main; main()"]
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}{path}"
    try:
        for _ in range(300):
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        etag = httpx.get(url).headers["etag"]
        wrk(url, [], 2)  # warm-up
        return {
            "full": wrk(url, [], seconds),
            "304": wrk(url, [f"If-None-Match: {etag}"], seconds),
        }
    finally:
        process.terminate()
        process.wait(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="", help="default: SQLite in a temp dir")
    parser.add_argument("--seconds", type=int, default=8, help="wrk run length (8)")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk not found: apt-get install -y wrk")
    tmp = Path(tempfile.mkdtemp(prefix="docshelf-bench-reader-"))
    settings = Settings(
        data_dir=tmp,
        database_url=args.database_url,
        base_url=BASE,
        rate_limit=0,
        run_jobs_in_server=False,
    )
    try:
        upgrade(settings)
        _, paths = asyncio.run(build(settings))
        measured = asyncio.run(in_process(settings, paths))
        print(f"{PAGES}-page site, {settings.resolved_database_url.split(':')[0]}")
        print("in process, one request at a time (ms):")
        for name, values in measured.items():
            print(f"  {name:12} p50 {pct(values, 50):6.2f}  p95 {pct(values, 95):6.2f}")
        first = statistics.median(measured["first view"])
        print(f"  304 vs first view: {first / statistics.median(measured['304']):.1f}x faster")
        repeat = statistics.median(measured["repeat view"])
        print(f"  304 vs repeat view: {repeat / statistics.median(measured['304']):.1f}x faster")
        loaded = over_network(settings, paths[500], args.seconds)
        print("docshelf serve + wrk -t2 -c32 (one page):")
        for name, (rate, p50) in loaded.items():
            print(f"  {name:5} {rate:8.0f} req/s  p50 {p50}")
        print(f"background load average: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
