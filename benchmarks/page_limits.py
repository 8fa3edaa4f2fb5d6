"""What one page at the content limits costs (document/limits.py): real-looking release notes up to
the size limit, a page at the links limit, and a hostile page at the markup limit.

    PYTHONPATH=src .venv/bin/python benchmarks/page_limits.py
    PYTHONPATH=src .venv/bin/python benchmarks/page_limits.py --no-http
    PYTHONPATH=src .venv/bin/python benchmarks/page_limits.py \
        --database-url postgresql+asyncpg://postgres@127.0.0.1:55432/db_limits

Pages are built from the real release notes of Rust 1.94-1.95 (tests/fixtures/imports), repeated
for older versions as a long-lived project's RELEASES.md grows: ~4.2 % markup characters and a
link every ~160 bytes, as the real file.

Part 1 (pure), each page in a fresh process, as the offload pool's workers run it: `check` (the
limits' scan, which the link rewriting reuses), the JSON document and search sections (one
parse), the reader's HTML (another), an import's conversion of a zip holding the page
(`from_zip`: title, check, link rewriting), and that process's peak RSS.

Part 2 (over HTTP, the app in this process on SQLite in a temporary directory unless
--database-url, offload pool and all): per page, the live edit that stores it (a change batch),
a GET /v1/user sent 50 ms into that edit (what the event loop makes others wait), an import of a
zip holding it (fetched from a loopback server), then the space's page listing, its links
listing, and reads of the page as markdown and as a JSON document (first and again).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import multiprocessing
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests import factories  # noqa: E402
from tests.real_docs import pull_requests, release_notes  # noqa: E402

from docshelf.app import create_app  # noqa: E402
from docshelf.config import Settings  # noqa: E402
from docshelf.document.limits import MAX_LINKS, MAX_MARKDOWN_BYTES, MAX_MARKUP  # noqa: E402
from docshelf.kit.migrate import upgrade  # noqa: E402

BASE = "http://bench"


def pages() -> dict[str, str]:
    return {
        "release notes, 0.7 MB": release_notes(700 * 1024),
        "release notes at the size limit": release_notes(MAX_MARKDOWN_BYTES),
        "pull requests at the links limit": pull_requests(MAX_LINKS),
        # The costliest markup the parser meets (benchmarks/RESULTS.md, "Pathological markdown").
        "'[ *a* ' up to the markup limit": "[ *a* " * (MAX_MARKUP // 3),
    }


def zip_of(name: str, text: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("README.md", "# Home\n\nSee [the page](page.md).\n")
        archive.writestr("page.md", text)
    return out.getvalue()


def _timed(fn: Any, *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _measure(text: str) -> dict[str, float]:
    """In a fresh process: each step cold (this process has parsed nothing before)."""
    from docshelf.document import html
    from docshelf.document import markdown as md
    from docshelf.imports.convert import from_zip

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {
        "check": _timed(md._compute_analysis, text, MAX_MARKUP),
        "document": _timed(md._render, text),
        "html": _timed(html.render, text),
    }
    data = zip_of("page", text)
    md._ANALYSES._items.clear()
    out["convert"] = _timed(from_zip, data)
    out["rss"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    out["links"] = len(md.iter_links(text))
    out["problem"] = md.check(text) is not None
    return out


def pure() -> str:
    ctx = multiprocessing.get_context("spawn")
    rows = [
        "| page | bytes | links | check s | document + sections s | reader HTML s "
        "| import conversion s | peak RSS growth MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, text in pages().items():
        with ctx.Pool(1) as pool:
            m = pool.apply(_measure, (text,))
        assert not m["problem"], name
        rows.append(
            f"| {name} | {len(text.encode()):,} | {int(m['links']):,} | {m['check']:.1f} | "
            f"{m['document']:.1f} | {m['html']:.1f} | {m['convert']:.1f} | {m['rss']:.0f} |"
        )
        print(rows[-1], flush=True)
    return "\n".join(rows)


@contextmanager
def serving(files: dict[str, bytes]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = files[self.path]
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def _seconds(call: Any) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    r = await call
    return time.perf_counter() - start, r


async def http(settings: Settings) -> str:
    app = create_app(settings)
    engine = app.state.engine
    rows = [
        "| page | store (live edit) s | GET /v1/user during it s | import (zip) s "
        "| page listing s | links listing s | read markdown s | read document first s "
        "| again s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    files: dict[str, bytes] = {}
    try:
        who = await factories.user(engine, email=f"bench-{time.time_ns()}@example.com")
        org = await factories.organization(engine, owner=who, title="Limits bench")
        transport = httpx.ASGITransport(app=app)
        with serving(files) as origin:
            async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=900) as client:
                h = who.headers
                for name, text in pages().items():
                    r = await client.post(f"/v1/orgs/{org}/spaces", json={"title": "S"}, headers=h)
                    sid = r.json()["id"]
                    await client.patch(f"/v1/spaces/{sid}", json={"editMode": "live"}, headers=h)
                    batch = {
                        "changes": [{"operation": "insert_page", "document": {"markdown": text}}]
                    }

                    async def other() -> float:
                        await asyncio.sleep(0.05)
                        start = time.perf_counter()
                        await client.get("/v1/user", headers=h)
                        return time.perf_counter() - start

                    (store, r), during = await asyncio.gather(
                        _seconds(client.post(f"/v1/spaces/{sid}/content", json=batch, headers=h)),
                        other(),
                    )
                    assert r.status_code == 200, r.text[:300]
                    page = r.json()["changes"][0]["page"]["id"]
                    files["/page.zip"] = zip_of(name, text)
                    imported, r = await _seconds(
                        client.post(
                            f"/v1/spaces/{sid}/content/import",
                            json={"url": origin + "/page.zip", "source": "zip"},
                            headers=h,
                        )
                    )
                    assert r.status_code == 201 and not r.json()["skipped"], r.text[:300]
                    url = f"/v1/spaces/{sid}/content/page/{page}"
                    timings = [store, during, imported]
                    for path, params in (
                        (f"/v1/spaces/{sid}/content/pages", {}),
                        (f"/v1/spaces/{sid}/links", {}),
                        (url, {}),
                        (url, {"format": "document"}),
                        (url, {"format": "document"}),
                    ):
                        took, r = await _seconds(client.get(path, params=params, headers=h))
                        assert r.status_code == 200, r.text[:300]
                        timings.append(took)
                    rows.append(f"| {name} | " + " | ".join(f"{t:.2f}" for t in timings) + " |")
                    print(rows[-1], flush=True)
    finally:
        await engine.dispose()
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-http", action="store_true", help="part 1 only")
    parser.add_argument("--no-pure", action="store_true", help="part 2 only")
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    args = parser.parse_args()
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"git {git}; Python {platform.python_version()}; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; load {' '.join(load)}",
        flush=True,
    )
    if not args.no_pure:
        print(pure())
    if args.no_http:
        return
    tmp = Path(tempfile.mkdtemp(prefix="docshelf-bench-limits-"))
    try:
        settings = Settings(
            data_dir=tmp,
            database_url=args.database_url,
            base_url=BASE,
            rate_limit=0,
            run_jobs_in_server=False,
            fetch_allowed_hosts="127.0.0.1",
        )
        upgrade(settings)
        print(asyncio.run(http(settings)))
        print(f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
