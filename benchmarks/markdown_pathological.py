"""Pathological markdown: how long the markdown helpers take on bodies built to make parsers slow,
and what one such page costs over HTTP (write, first read, later reads, and an unrelated request
sent while the write runs).

    .venv/bin/python benchmarks/markdown_pathological.py
    .venv/bin/python benchmarks/markdown_pathological.py --sizes 20000,1000000 --stock

Part 1 is pure: for each input, at each size in characters (about; the pattern is repeated),
the cold time (the per-text memo bypassed) of `check` as a write runs it (size test first, the
scan stopped once past the markup budget), of the full scan a read of such a text stored before
the limits would pay once, and of the one parse that yields the JSON document and the search
sections.
`--stock` adds stock markdown-it-py (CommonMark, maxNesting 100, no linear link labels) on the
inputs up to 100,000 characters, which is what every helper used to pay, several times a
request.

Part 2 runs the app in this process over `httpx.ASGITransport` on SQLite in a temporary
directory: a live edit writing 20,000 "[" (the issue's case), then reads of that page as
markdown and as a JSON document (first read: memo cold for the rendered text; then warm), and
GET /v1/user sent while the write runs (the server is one event loop: it waits for the write).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))


from markdown_it import MarkdownIt  # noqa: E402
from tests import factories  # noqa: E402

from docshelf.app import create_app  # noqa: E402
from docshelf.config import Settings  # noqa: E402
from docshelf.document import markdown as md  # noqa: E402
from docshelf.document.limits import MAX_MARKDOWN_BYTES, MAX_MARKUP  # noqa: E402
from docshelf.kit.migrate import upgrade  # noqa: E402

BASE = "http://bench"

# ~3 % markup characters, a link every ~170 characters: a link-rich page.
PROSE = (
    "Some words of text with a *few* [links](https://e.com/x) in them, as pages have, "
    "and a second sentence, longer, that says a little more about the same **thing**.\n"
)

PATTERNS: dict[str, Callable[[int], str]] = {
    "[ x N": lambda n: "[" * n,
    "![ x N": lambda n: "![" * (n // 2),
    "[a]( x N": lambda n: "[a](" * (n // 4),
    "[a]] x N": lambda n: "[a]]" * (n // 4),
    "[ *a* x N": lambda n: "[ *a* " * (n // 6),
    "* x N": lambda n: "*" * n,
    "'* ' x N": lambda n: "* " * (n // 2),
    "emphasis runs": lambda n: "*a " * (n // 6) + "b*" * (n // 4),
    "a_ x N": lambda n: "a_" * (n // 2),
    "` x N": lambda n: "`" * n,
    "backtick runs": lambda n: "".join("`" * (i % 300 + 1) + "a" for i in range(n // 150)),
    "< x N": lambda n: "<" * n,
    "> x N": lambda n: ">" * n,
    "nested lists": lambda n: "".join("  " * (i % 40) + "- a\n" for i in range(n // 40)),
    "[a]: /x refs": lambda n: "".join(f"[a{i}]: /x\n" for i in range(n // 12)),
    "prose + links": lambda n: (PROSE * (n // len(PROSE) + 1))[:n],
}


def budgeted(text: str) -> None:
    """What `check` costs on a write, the memo bypassed: the size test, then the scan stopped
    at the markup budget."""
    if len(text.encode()) > MAX_MARKDOWN_BYTES:
        return
    with contextlib.suppress(md._OverBudget):
        md._compute_analysis(text, MAX_MARKUP)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pure(sizes: list[int], stock: bool) -> str:
    reference = MarkdownIt("commonmark", {"maxNesting": 100}).enable("strikethrough")
    head = "| input | chars | check ms | full scan ms | document + sections ms |"
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if stock:
        head += " stock markdown-it parse ms |"
        rule += " ---: |"
    rows = [head, rule]
    for name, make in PATTERNS.items():
        for size in sizes:
            text = make(size)
            problem = md.check(text)
            check_ms = timed(partial(budgeted, text))
            scan_ms = timed(partial(md._compute_analysis, text))
            render_ms = timed(partial(md._render, text))
            row = f"| `{name}` | {len(text):,} | {check_ms:.0f} | {scan_ms:.0f} | {render_ms:.0f} |"
            if stock:
                stock_ms = timed(partial(reference.parse, text)) if len(text) <= 100_000 else None
                row += " - |" if stock_ms is None else f" {stock_ms:.0f} |"
            if problem is not None:
                row += f" refused: {problem.split(';')[0]}"
            rows.append(row)
            print(rows[-1], flush=True)
    return "\n".join(rows)


async def http(settings: Settings) -> str:
    app = create_app(settings)
    engine = app.state.engine
    out: list[str] = []
    try:
        who = await factories.user(engine, email=f"bench-{time.time_ns()}@example.com")
        org = await factories.organization(engine, owner=who, title="Markdown bench")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=600) as client:
            h = who.headers
            r = await client.post(f"/v1/orgs/{org}/spaces", json={"title": "S"}, headers=h)
            sid = r.json()["id"]
            await client.patch(f"/v1/spaces/{sid}", json={"editMode": "live"}, headers=h)
            cases = (
                ("20,000 '['", "[" * 20_000),
                ("'[' up to the markup limit", "[" * MAX_MARKUP),
                ("prose up to the size limit", PATTERNS["prose + links"](MAX_MARKDOWN_BYTES)),
            )
            for name, text in cases:
                body = {"changes": [{"operation": "insert_page", "document": {"markdown": text}}]}

                async def write(body: dict[str, Any] = body) -> tuple[float, httpx.Response]:
                    start = time.perf_counter()
                    resp = await client.post(f"/v1/spaces/{sid}/content", json=body, headers=h)
                    return (time.perf_counter() - start) * 1000, resp

                async def other() -> float:
                    # Sent 50 ms into the write; the wait for the loop to get to it counts.
                    sent = time.perf_counter() + 0.05
                    await asyncio.sleep(0.05)
                    await client.get("/v1/user", headers=h)
                    return (time.perf_counter() - sent) * 1000

                (write_ms, resp), other_ms = await asyncio.gather(write(), other())
                assert resp.status_code == 200, resp.text
                page = resp.json()["changes"][0]["page"]["id"]
                url = f"/v1/spaces/{sid}/content/page/{page}"
                reads = {}
                for label, params in (
                    ("markdown", {}),
                    ("document, first", {"format": "document"}),
                    ("document, again", {"format": "document"}),
                ):
                    start = time.perf_counter()
                    got = await client.get(url, params=params, headers=h)
                    reads[label] = (time.perf_counter() - start) * 1000
                    assert got.status_code == 200, got.text
                out.append(
                    f"| {name} ({len(text):,} chars) | {write_ms:.0f} | {other_ms:.0f} | "
                    + " | ".join(f"{v:.0f}" for v in reads.values())
                    + " |"
                )
                print(out[-1], flush=True)
    finally:
        await engine.dispose()
    head = (
        "| page | live edit ms | unrelated GET during it ms | read markdown ms "
        "| read document (first) ms | read document (again) ms |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: |"
    )
    return head + "\n" + "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,1000000", help="characters per input")
    parser.add_argument("--stock", action="store_true", help="also time stock markdown-it-py")
    parser.add_argument("--no-http", action="store_true", help="pure part only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    print(
        f"git {git}; Python {platform.python_version()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        flush=True,
    )
    print(pure(sizes, args.stock))
    if args.no_http:
        return
    tmp = Path(tempfile.mkdtemp(prefix="docshelf-bench-md-"))
    try:
        settings = Settings(
            data_dir=tmp, database_url="", base_url=BASE, rate_limit=0, run_jobs_in_server=False
        )
        upgrade(settings)
        print(asyncio.run(http(settings)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
