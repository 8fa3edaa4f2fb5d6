"""Content engine benchmark: one-page edits, merges, page reads and page listings on a generated
10,000-page space and a 100-page one, with the new storage each write leaves behind.

    .venv/bin/python benchmarks/content.py
    .venv/bin/python benchmarks/content.py --repeat 50
    .venv/bin/python benchmarks/content.py --database-url postgresql+asyncpg://user@127.0.0.1:5432/db
    .venv/bin/python benchmarks/content.py --profile        # + cProfile of the slowest cases

The app runs in this process and is driven through `httpx.ASGITransport`: every figure is the
server's own work for one request (routing, validation, authentication, database, content
engine, JSON), without sockets or an HTTP server. Requests are sequential (one at a time).

The database is SQLite in a temporary directory unless `--database-url` names one (migrated on
the way in; the run adds its own user, organization and spaces and leaves them there). Storage
is counted in `content_objects` (rows and sum of `length(data)`) of the space before and after
a request, outside the timed call.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # tests.factories (user, organization, token straight in the DB)

from tests import factories  # noqa: E402

import docshelf  # noqa: E402
from docshelf.app import create_app  # noqa: E402
from docshelf.config import Settings  # noqa: E402
from docshelf.content import service as content_service  # noqa: E402
from docshelf.content.tree import objects as content_objects_module  # noqa: E402
from docshelf.content.tree.model import page_slug as slugify  # noqa: E402
from docshelf.kit.migrate import upgrade  # noqa: E402
from docshelf.models import content_objects, revisions  # noqa: E402

BASE = "http://bench"
BATCH = 50  # the API's maximum number of changes per write
TARGET_EDIT_MERGE_MS = 50.0
TARGET_SCALE_RATIO = 2.0

# (name, sections, chapters per section (0: pages straight under sections), pages per chapter)
SHAPES = {
    "10k": (20, 10, 49),  # 20 + 200 + 9,800 = 10,020 pages
    "100": (5, 0, 19),  # 5 + 95 = 100 pages
}

_WORD_LIST = (
    "api client server request response token space page revision merge branch commit deploy "
    "config option value default cache index query schema table column record field document "
    "markdown section chapter guide reference install upgrade migrate backup restore monitor "
    "metric alert log trace error retry timeout limit quota user team member role permission "
    "share publish draft review approve archive search filter sort export import sync webhook "
    "event handler worker queue job schedule build test release version feature flag setting"
)
WORDS = _WORD_LIST.split()


def log(message: str) -> None:
    print(f"[content {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --------------------------------------------------------------------------------------------
# Generated content


def sentence(rng: random.Random, lo: int = 8, hi: int = 16) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, lo: int = 3, hi: int = 5) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(lo, hi)))


def page_markdown(rng: random.Random, title: str, sibling_slug: str | None, edit: int = 0) -> str:
    """About 1-2 KB: headings, paragraphs, a list, a code block, an external link and (when the
    page has a previous sibling) a relative link to it, which the server turns into a stable
    page reference on write and back into a relative path on read."""
    items = "\n".join(f"- {sentence(rng, 4, 9)}" for _ in range(rng.randint(3, 5)))
    name = rng.choice(WORDS)
    code = (
        "```python\n"
        f"from docshelf import {name}\n\n"
        f"def run_{name}(limit: int = {rng.randint(1, 100)}) -> None:\n"
        f"    client = {name}.connect(timeout={rng.randint(1, 30)})\n"
        "    for item in client.list(limit=limit):\n"
        "        print(item.id, item.title)\n"
        "```"
    )
    see = f"See [the previous page](./{sibling_slug}.md) and " if sibling_slug else "See "
    see += "[the upstream reference](https://example.com/reference)."
    edited = f"\n\n_Edited {edit} time(s)._ {sentence(rng)}" if edit else ""
    return (
        f"# {title}\n\n{paragraph(rng)}\n\n## Overview\n\n{paragraph(rng)}\n\n{items}\n\n"
        f"## Example\n\n{code}\n\n## Details\n\n{paragraph(rng, 2, 4)} {see}{edited}\n"
    )


@dataclass
class Node:
    ref: str
    title: str
    parent: str | None  # parent's ref
    sibling_slug: str | None


def plan(shape: tuple[int, int, int], rng: random.Random) -> list[Node]:
    """Pages in depth-first order, so every parent comes before its children."""
    sections, chapters, pages = shape
    out: list[Node] = []

    def leaves(parent: str, prefix: str) -> None:
        previous: str | None = None
        for p in range(pages):
            title = f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {prefix}.{p + 1}"
            out.append(Node(f"{parent}.p{p}", title, parent, previous))
            previous = slugify(title)

    for s in range(sections):
        sref = f"s{s}"
        out.append(Node(sref, f"Section {s + 1}: {rng.choice(WORDS)}", None, None))
        if chapters == 0:
            leaves(sref, f"{s + 1}")
            continue
        for c in range(chapters):
            cref = f"{sref}.c{c}"
            out.append(Node(cref, f"Chapter {s + 1}.{c + 1}: {rng.choice(WORDS)}", sref, None))
            leaves(cref, f"{s + 1}.{c + 1}")
    return out


# --------------------------------------------------------------------------------------------
# Measuring


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass
class Series:
    ms: list[float] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)

    def median(self) -> float:
        return statistics.median(self.ms) if self.ms else float("nan")

    def p95(self) -> float:
        return pct(self.ms, 0.95)

    def rows_median(self) -> float | None:
        return statistics.median(self.rows) if self.rows else None

    def bytes_median(self) -> float | None:
        return statistics.median(self.bytes) if self.bytes else None


class Bench:
    def __init__(
        self, client: httpx.AsyncClient, engine: AsyncEngine, headers: dict[str, str], org_id: str
    ) -> None:
        self.client = client
        self.engine = engine
        self.headers = headers
        self.org_id = org_id

    async def call(self, method: str, url: str, body: Any = None, status: int = 200) -> Any:
        r = await self.client.request(method, url, json=body, headers=self.headers)
        if r.status_code != status:
            raise RuntimeError(f"{method} {url} -> {r.status_code}: {r.text[:500]}")
        return r.json() if r.content else None

    async def timed(
        self, method: str, url: str, body: Any = None, status: int = 200
    ) -> tuple[float, Any]:
        t0 = time.perf_counter()
        r = await self.client.request(method, url, json=body, headers=self.headers)
        elapsed = (time.perf_counter() - t0) * 1000
        if r.status_code != status:
            raise RuntimeError(f"{method} {url} -> {r.status_code}: {r.text[:500]}")
        return elapsed, r.json() if r.content else None

    async def storage(self, space_id: str) -> tuple[int, int, int]:
        """(content_objects rows, their bytes, revisions rows) of one space."""
        async with self.engine.connect() as conn:
            rows, size = (
                await conn.execute(
                    sa.select(
                        sa.func.count(),
                        sa.func.coalesce(sa.func.sum(sa.func.length(content_objects.c.data)), 0),
                    ).where(content_objects.c.space_id == space_id)
                )
            ).one()
            revs = (
                await conn.execute(
                    sa.select(sa.func.count()).where(revisions.c.space_id == space_id)
                )
            ).scalar_one()
        return int(rows), int(size), int(revs)


def clear_object_cache() -> None:
    """Empties the process-wide content object cache (objects.py) and the page listings built
    from it and their pieces (content/service.py), for cold-read figures."""
    content_objects_module._cache.clear()
    content_service._listings.clear()
    content_service._pieces.clear()


@dataclass
class SpaceResult:
    name: str
    pages: int
    content_rows: int
    content_bytes: int
    generate_s: float
    series: dict[str, Series]
    revisions_per: dict[str, float]


CASES = [
    ("edit", "one-page edit in a change request"),
    ("merge_unchanged", "merge, main unchanged"),
    ("edit_merge", "edit + merge (main unchanged)"),
    ("cr_edit_merge", "create CR + edit + merge"),
    ("merge_moved", "merge, main moved"),
    ("edit_merge_moved", "edit + merge (main moved)"),
    ("live_edit", "one-page live edit on main"),
    ("read_page", "read one page (warm cache)"),
    ("list_pages", "list all pages (warm cache)"),
    ("read_page_cold", "read one page (cold cache)"),
    ("list_pages_cold", "list all pages (cold cache)"),
]


async def generate(b: Bench, space_id: str, shape: tuple[int, int, int], seed: int) -> list[str]:
    """Writes the space through live edits of 50 pages each; returns the leaf page ids."""
    rng = random.Random(seed)
    nodes = plan(shape, rng)
    ids: dict[str, str] = {}
    parents = {n.parent for n in nodes if n.parent}
    for start in range(0, len(nodes), BATCH):
        batch = nodes[start : start + BATCH]
        in_batch = {n.ref for n in batch}
        changes = []
        for n in batch:
            change: dict[str, Any] = {
                "operation": "insert_page",
                "title": n.title,
                "document": {"markdown": page_markdown(rng, n.title, n.sibling_slug)},
                "ref": n.ref,
            }
            if n.parent is not None:
                change["into"] = n.parent if n.parent in in_batch else ids[n.parent]
            changes.append(change)
        out = await b.call("POST", f"/v1/spaces/{space_id}/content", {"changes": changes})
        for item in out["changes"]:
            if item["object"] == "created_page":
                ids[item["ref"]] = item["page"]["id"]
    return [ids[n.ref] for n in nodes if n.ref not in parents]


def edit_body(page_id: str, rng: random.Random, n: int) -> dict[str, Any]:
    text = page_markdown(rng, f"Edited page {n}", None, edit=n)
    return {
        "changes": [{"operation": "update_page", "page": page_id, "document": {"markdown": text}}]
    }


async def bench_space(
    b: Bench, name: str, shape: tuple[int, int, int], repeat: int, warmup: int, cold: int
) -> SpaceResult:
    space = await b.call("POST", f"/v1/orgs/{b.org_id}/spaces", {"title": f"Bench {name}"}, 201)
    sid = space["id"]
    await b.call("PATCH", f"/v1/spaces/{sid}", {"editMode": "live"})
    log(f"{name}: generating {shape} ...")
    t0 = time.perf_counter()
    leaves = await generate(b, sid, shape, seed=len(name) * 7919 + shape[0])
    generate_s = time.perf_counter() - t0
    listed = await b.call("GET", f"/v1/spaces/{sid}/content/pages")

    def count(pages: list[dict[str, Any]]) -> int:
        return sum(1 + count(p.get("pages", [])) for p in pages)

    total = count(listed["pages"])
    rows, size, _ = await b.storage(sid)
    log(f"{name}: {total} pages in {generate_s:.1f} s; {rows} objects, {size / 1e6:.1f} MB")

    rng = random.Random(4242 + total)
    s: dict[str, Series] = {key: Series() for key, _ in CASES}
    revs: dict[str, list[int]] = {"edit": [], "merge_unchanged": [], "merge_moved": []}
    cr_url = f"/v1/spaces/{sid}/change-requests"
    edits = 0

    async def with_storage(
        key: str, run: Callable[[], Awaitable[tuple[float, Any]]], keep: bool
    ) -> float:
        before = await b.storage(sid)
        ms, _ = await run()
        after = await b.storage(sid)
        if keep:
            s[key].rows.append(after[0] - before[0])
            s[key].bytes.append(after[1] - before[1])
            revs[key].append(after[2] - before[2])
        return ms

    # Edit in a change request, then merge it while main has not moved.
    for i in range(warmup + repeat):
        keep = i >= warmup
        page = rng.choice(leaves)
        edits += 1
        body = edit_body(page, rng, edits)
        t_cr, cr = await b.timed("POST", cr_url, None, 201)
        url = f"{cr_url}/{cr['id']}"
        t_edit = await with_storage(
            "edit",
            lambda url=url, body=body: b.timed("POST", f"{url}/content?compat=false", body),
            keep,
        )
        t_merge = await with_storage(
            "merge_unchanged", lambda url=url: b.timed("POST", f"{url}/merge"), keep
        )
        if keep:
            s["edit"].ms.append(t_edit)
            s["merge_unchanged"].ms.append(t_merge)
            s["edit_merge"].ms.append(t_edit + t_merge)
            s["cr_edit_merge"].ms.append(t_cr + t_edit + t_merge)

    # Edit page X in a change request, edit page Y live on main, then merge the change request.
    for i in range(warmup + repeat):
        keep = i >= warmup
        x, y = rng.sample(leaves, 2)
        _, cr = await b.timed("POST", cr_url, None, 201)
        url = f"{cr_url}/{cr['id']}"
        edits += 1
        t_edit, _ = await b.timed("POST", f"{url}/content?compat=false", edit_body(x, rng, edits))
        edits += 1
        t_live, _ = await b.timed("POST", f"/v1/spaces/{sid}/content", edit_body(y, rng, edits))
        t_merge = await with_storage(
            "merge_moved", lambda url=url: b.timed("POST", f"{url}/merge"), keep
        )
        if i == 0:  # both sides' edits survive the merge
            for page, n in ((x, edits - 1), (y, edits)):
                got = await b.call("GET", f"/v1/spaces/{sid}/content/page/{page}")
                if f"_Edited {n} time(s)._" not in got.get("markdown", ""):
                    raise RuntimeError(f"merge lost the edit of page {page}")
        if keep:
            s["live_edit"].ms.append(t_live)
            s["merge_moved"].ms.append(t_merge)
            s["edit_merge_moved"].ms.append(t_edit + t_merge)

    # Reads of main, with the object cache as the writes above left it (warm), then cold.
    for i in range(warmup + repeat):
        ms, _ = await b.timed("GET", f"/v1/spaces/{sid}/content/page/{rng.choice(leaves)}")
        if i >= warmup:
            s["read_page"].ms.append(ms)
    for i in range(warmup + repeat):
        ms, _ = await b.timed("GET", f"/v1/spaces/{sid}/content/pages")
        if i >= warmup:
            s["list_pages"].ms.append(ms)
    for _ in range(cold):
        clear_object_cache()
        ms, _ = await b.timed("GET", f"/v1/spaces/{sid}/content/page/{rng.choice(leaves)}")
        s["read_page_cold"].ms.append(ms)
    for _ in range(cold):
        clear_object_cache()
        ms, _ = await b.timed("GET", f"/v1/spaces/{sid}/content/pages")
        s["list_pages_cold"].ms.append(ms)

    return SpaceResult(
        name,
        total,
        rows,
        size,
        generate_s,
        s,
        {k: statistics.median(v) for k, v in revs.items() if v},
    )


async def profile_cases(b: Bench, space_id: str, leaves: list[str], runs: int) -> str:
    """cProfile of `runs` merges with main moved, then of `runs` listings of all pages.

    Only the timed request runs under the profiler. cProfile counts every resumption of a
    coroutine as a call, so the cumulative column is only meaningful for plain functions;
    the internal-time (tottime) column is exact for all."""
    rng = random.Random(99)
    cr_url = f"/v1/spaces/{space_id}/change-requests"
    merge_prof, list_prof = cProfile.Profile(), cProfile.Profile()
    for n in range(runs):
        x, y = rng.sample(leaves, 2)
        cr = await b.call("POST", cr_url, None, 201)
        url = f"{cr_url}/{cr['id']}"
        await b.call("POST", f"{url}/content?compat=false", edit_body(x, rng, 10_000 + n))
        await b.call("POST", f"/v1/spaces/{space_id}/content", edit_body(y, rng, 20_000 + n))
        merge_prof.enable()
        await b.client.post(f"{url}/merge", headers=b.headers)
        merge_prof.disable()
    for _ in range(runs):
        list_prof.enable()
        await b.client.get(f"/v1/spaces/{space_id}/content/pages", headers=b.headers)
        list_prof.disable()
    out = io.StringIO()
    for title, prof in (("merge, main moved", merge_prof), ("list all pages", list_prof)):
        out.write(f"\n=== {title}: {runs} requests ===\n")
        stats = pstats.Stats(prof, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats("docshelf", 30)
    return out.getvalue()


async def breakdown(b: Bench, space_id: str, leaves: list[str], runs: int) -> str:
    """Where a merge with main moved spends its time: wall-clock timers around the phases of
    `merge.revisions.merge_snapshots` (patched in this process only), and the same merges and
    listings with the cyclic garbage collector off during the request."""
    from docshelf.content.merge import revisions as threeway
    from docshelf.content.tree import snapshot

    spent: dict[str, float] = {}

    def timer(name: str, fn: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
        if is_async:

            async def timed_async(*a: Any, **k: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await fn(*a, **k)
                finally:
                    spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0

            return timed_async

        def timed_sync(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0

        return timed_sync

    phases = {
        "_load": ("load all page records of base, main, CR head (3 x all_pages)", True),
        "_tree": ("build the three model Trees from the records", False),
        "merge": ("pure three-way merge (content/merge/pages.py, incl. Tree checks)", False),
        "_record": ("turn every merged page back into a record, compare with main", False),
    }
    saved = {name: getattr(threeway, name) for name in phases}
    saved_commit = snapshot.Snapshot.commit
    for name, (_, is_async) in phases.items():
        setattr(threeway, name, timer(name, saved[name], is_async))
    snapshot.Snapshot.commit = timer("commit", saved_commit, True)  # type: ignore[method-assign]
    rng = random.Random(7)
    cr_url = f"/v1/spaces/{space_id}/change-requests"
    in_merge: dict[str, float] = {}
    totals: dict[str, list[float]] = {}
    try:
        for gc_on in (True, False):
            label = "merge, main moved, GC " + ("on" if gc_on else "off")
            for n in range(runs):
                x, y = rng.sample(leaves, 2)
                cr = await b.call("POST", cr_url, None, 201)
                url = f"{cr_url}/{cr['id']}"
                await b.call("POST", f"{url}/content?compat=false", edit_body(x, rng, 30_000 + n))
                live = edit_body(y, rng, 40_000 + n)
                await b.call("POST", f"/v1/spaces/{space_id}/content", live)
                before = dict(spent)
                if not gc_on:
                    gc.disable()
                try:
                    ms, _ = await b.timed("POST", f"{url}/merge")
                finally:
                    gc.enable()
                totals.setdefault(label, []).append(ms)
                if gc_on:  # only the merge's own share of each timer
                    for name, total in spent.items():
                        in_merge[name] = in_merge.get(name, 0.0) + total - before.get(name, 0.0)
    finally:
        for name in phases:
            setattr(threeway, name, saved[name])
        snapshot.Snapshot.commit = saved_commit  # type: ignore[method-assign]
    phases["commit"] = ("write the merged records and map nodes", True)
    lines = ["| phase (GC on) | ms per merge |", "| --- | ---: |"]
    for name, (what, _) in phases.items():
        lines.append(f"| `{name}`: {what} | {in_merge.get(name, 0.0) / runs * 1000:.0f} |")
    for gc_on in (True, False):
        label = "list all pages, GC " + ("on" if gc_on else "off")
        for _ in range(runs):
            if not gc_on:
                gc.disable()
            try:
                ms, _ = await b.timed("GET", f"/v1/spaces/{space_id}/content/pages")
            finally:
                gc.enable()
            totals.setdefault(label, []).append(ms)
    lines += ["", "| request | median ms |", "| --- | ---: |"]
    lines += [f"| {label} | {statistics.median(v):.0f} |" for label, v in totals.items()]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Report


def fmt_ms(v: float) -> str:
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def fmt_num(v: float | None, unit: str = "") -> str:
    if v is None:
        return ""
    return f"{v:,.0f}{unit}".replace(",", " ")


def report(results: list[SpaceResult]) -> str:
    names = [r.name for r in results]
    head = "| case | " + " | ".join(
        f"{n} median ms | {n} p95 ms | {n} new objects | {n} new bytes" for n in names
    )
    lines = [head + " |", "| --- |" + " ---: | ---: | ---: | ---: |" * len(names)]
    for key, label in CASES:
        cells = []
        for r in results:
            se = r.series[key]
            cells += [
                fmt_ms(se.median()),
                fmt_ms(se.p95()),
                fmt_num(se.rows_median()),
                fmt_num(se.bytes_median()),
            ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    by = {r.name: r for r in results}
    out = ["\n".join(lines), ""]
    gen = ", ".join(
        f"{r.name}: {r.pages} pages generated in {r.generate_s:.1f} s "
        f"({r.generate_s / r.pages * 1000:.2f} ms/page; {r.content_rows} objects, "
        f"{r.content_bytes / 1e6:.1f} MB)"
        for r in results
    )
    out.append(f"Generation (live edits of {BATCH} pages): {gen}.")
    for r in results:
        out.append(
            f"New revision rows ({r.name}): "
            + ", ".join(f"{k} {v:.0f}" for k, v in r.revisions_per.items())
            + "."
        )
    if "10k" in by and "100" in by:
        big, small = by["10k"].series, by["100"].series
        out.append("")
        out.append("| ratio 10k / 100 | time (median) | new bytes (median) | new objects |")
        out.append("| --- | ---: | ---: | ---: |")
        for key, label in CASES[:6]:
            tb = big[key].median() / small[key].median()
            bb, sb = big[key].bytes_median(), small[key].bytes_median()
            rb, rs = big[key].rows_median(), small[key].rows_median()
            by_bytes = f"{bb / sb:.2f}" if bb is not None and sb else ""
            by_rows = f"{rb / rs:.2f}" if rb is not None and rs else ""
            out.append(f"| {label} | {tb:.2f} | {by_bytes} | {by_rows} |")
        out.append("")
        for r in results:
            m = r.series["edit_merge"].median()
            mm = r.series["edit_merge_moved"].median()
            out.append(
                f"Target edit + merge < {TARGET_EDIT_MERGE_MS:.0f} ms median ({r.name}): "
                f"main unchanged {m:.1f} ms -> {'met' if m < TARGET_EDIT_MERGE_MS else 'MISSED'}; "
                f"main moved {mm:.1f} ms -> "
                f"{'met' if mm < TARGET_EDIT_MERGE_MS else 'MISSED'}."
            )
        ratio_t = big["edit"].median() / small["edit"].median()
        eb, es = big["edit"].bytes_median(), small["edit"].bytes_median()
        ratio_b = eb / es if eb is not None and es else float("nan")
        verdict = "met" if max(ratio_t, ratio_b) <= TARGET_SCALE_RATIO else "MISSED"
        out.append(
            f"Target one-page change 10k within {TARGET_SCALE_RATIO:.0f}x of 100: "
            f"time {ratio_t:.2f}x, bytes {ratio_b:.2f}x -> {verdict}."
        )
    return "\n".join(out)


def cpu_busy_percent(seconds: float = 2.0) -> float:
    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields)

    busy0, total0 = sample()
    time.sleep(seconds)
    busy1, total1 = sample()
    return 100.0 * (busy1 - busy0) / max(1, total1 - total0)


def git_state() -> str:
    def git(*words: str) -> str:
        return subprocess.run(["git", *words], cwd=REPO, capture_output=True, text=True).stdout

    dirty = git("status", "--porcelain", "--", "src").strip()
    return git("rev-parse", "--short", "HEAD").strip() + (" + uncommitted src/" if dirty else "")


# --------------------------------------------------------------------------------------------
# Main


async def run(args: argparse.Namespace, settings: Settings) -> None:
    app = create_app(settings)
    engine: AsyncEngine = app.state.engine
    try:
        who = await factories.user(engine, email=f"bench-{time.time_ns()}@example.com")
        org_id = await factories.organization(engine, owner=who, title="Content bench")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=600) as client:
            b = Bench(client, engine, who.headers, org_id)
            results = []
            for name in args.sizes:
                results.append(
                    await bench_space(
                        b, name, SHAPES[name], args.repeat, args.warmup, args.cold_repeat
                    )
                )
            print()
            print(report(results))
            if args.profile or args.breakdown:
                big = args.sizes[0]
                space = await b.call("POST", f"/v1/orgs/{org_id}/spaces", {"title": "Profile"}, 201)
                await b.call("PATCH", f"/v1/spaces/{space['id']}", {"editMode": "live"})
                leaves = await generate(b, space["id"], SHAPES[big], seed=1)
                if args.breakdown:
                    print(
                        f"\nBreakdown, {big} space, {args.breakdown} merges "
                        "(phases: mean; requests: median):"
                    )
                    print(await breakdown(b, space["id"], leaves, args.breakdown))
                if args.profile:
                    print(f"\ncProfile, {big} space:")
                    print(await profile_cases(b, space["id"], leaves, args.profile))
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="", help="default: SQLite in a temp dir")
    parser.add_argument("--repeat", type=int, default=30, help="measured runs per case (30)")
    parser.add_argument("--warmup", type=int, default=3, help="discarded runs per case (3)")
    parser.add_argument("--cold-repeat", type=int, default=5, help="cold-cache reads (5)")
    parser.add_argument(
        "--sizes", default="10k,100", help="spaces to build, among: " + ", ".join(SHAPES)
    )
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="cProfile N runs of the slow cases"
    )
    parser.add_argument(
        "--breakdown",
        type=int,
        default=0,
        metavar="N",
        help="time the phases of N merges with main moved, and GC on/off for merges and listings",
    )
    parser.add_argument(
        "--wait-quiet", type=int, default=0, metavar="S", help="wait up to S s for an idle machine"
    )
    parser.add_argument(
        "--quiet-below", type=float, default=10.0, metavar="PCT", help="idle means below PCT %%"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    args.sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    for name in args.sizes:
        if name not in SHAPES:
            parser.error(f"unknown size {name!r}")

    tmp = Path(tempfile.mkdtemp(prefix="docshelf-bench-content-"))
    settings = Settings(
        data_dir=tmp,
        database_url=args.database_url,
        base_url=BASE,
        rate_limit=0,
        run_jobs_in_server=False,
    )
    deadline = time.monotonic() + args.wait_quiet
    busy = cpu_busy_percent()
    while busy > args.quiet_below and time.monotonic() < deadline:
        log(f"machine busy ({busy:.0f} % CPU), waiting")
        time.sleep(5)
        busy = cpu_busy_percent()
    db = "PostgreSQL" if settings.resolved_database_url.startswith("postgresql") else "SQLite"
    log(
        f"{db}; git {git_state()}; docshelf from {Path(docshelf.__file__).parent}; "
        f"Python {platform.python_version()}; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
        f"background CPU {busy:.0f} % of 2 cores before the run"
    )
    log("command: " + " ".join([".venv/bin/python", "benchmarks/content.py", *sys.argv[1:]]))
    try:
        upgrade(settings)
        asyncio.run(run(args, settings))
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
