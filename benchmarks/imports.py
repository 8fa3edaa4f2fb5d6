"""Import benchmark: a generated 1,000-page mkdocs project (nav, sections with index pages,
admonitions, tabs, heading anchors, snippet includes, links between pages, images) converted and
applied to a space.

    .venv/bin/python benchmarks/imports.py
    .venv/bin/python benchmarks/imports.py --pages 1000 --database-url postgresql+asyncpg://...

Two measurements, as the server does the work:
- convert: `from_zip` in a fresh process, as the offload pool's `convert` lane runs it. Wall
  time, and the process's peak RSS (ru_maxrss) against its RSS before converting.
- apply: `imports.service.apply` (the write: pages, files, links, search index) into a new
  space of a migrated database (SQLite in a temporary directory unless --database-url), in this
  process; wall time and the growth of this process's peak RSS over the run.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


def project(pages: int) -> bytes:
    """An mkdocs project of `pages` pages: 20 sections of pages/20 pages each."""
    sections = 20
    per = max(1, pages // sections)
    nav: list[str] = ["nav:", "  - Home: index.md"]
    files: dict[str, bytes] = {
        "docs/index.md": b"# Home { #home }\n\nWelcome to [the first page](s00/p000.md).\n",
        "docs/img/logo.png": PNG,
        "snippets/footer.md": b"Shared footer with a [link](https://example.com).\n",
    }
    count = 1
    for s in range(sections):
        nav.append(f"  - Section {s}:")
        nav.append(f"      - s{s:02}/index.md")
        files[f"docs/s{s:02}/index.md"] = f"# Section {s}\n\nOverview.\n".encode()
        count += 1
        for p in range(per - 1):
            if count >= pages:
                break
            name = f"s{s:02}/p{p:03}.md"
            nav.append(f"      - Page {s}.{p}: {name}")
            nxt = f"p{p + 1:03}.md" if p + 2 < per else "index.md"
            body = (
                f"# Page {s}.{p} {{ #page-{s}-{p} }}\n\n"
                + "Some text with **bold** and `code`. " * 20
                + f"\n\nNext: [next]({nxt}), back [home](../index.md#home), "
                f"[a folder](../s{(s + 1) % sections:02}/).\n\n"
                '!!! note "Remember"\n    A note with *emphasis*.\n\n'
                '??? tip "More"\n    Folded away.\n\n'
                '=== "Python"\n    ```python\n    print(1)\n    ```\n\n'
                '=== "Shell"\n    ```sh\n    echo 1\n    ```\n\n'
                "## Details\n\n"
                + "- item one\n- item two\n\n" * 5
                + '![logo](../img/logo.png)\n\n--8<-- "snippets/footer.md"\n'
            )
            files[f"docs/{name}"] = body.encode()
            count += 1
    files["mkdocs.yml"] = (
        "site_name: Bench\nmarkdown_extensions:\n  - admonition\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        + "\n".join(nav)
        + "\n"
    ).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


_CHILD = """
import json, resource, sys, time
from docshelf.imports.convert import from_zip
data = open(sys.argv[1], "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
imported = from_zip(data)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "before_kb": before, "peak_kb": peak,
                  "pages": len(imported.pages), "files": len(imported.files),
                  "skipped": len(imported.skipped), "detected": imported.detected}))
"""


def convert_in_child(path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], check=True, capture_output=True, text=True
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


async def apply_once(data: bytes, database_url: str, tmp: Path) -> tuple[float, int]:
    import httpx
    from tests import factories

    from docshelf.app import create_app
    from docshelf.config import Settings
    from docshelf.imports import service
    from docshelf.imports.convert import from_zip
    from docshelf.kit.db import unit_of_work
    from docshelf.kit.migrate import upgrade

    settings = Settings(
        data_dir=tmp,
        database_url=database_url,
        base_url="http://bench",
        rate_limit=0,
        run_jobs_in_server=False,
    )
    await asyncio.to_thread(upgrade, settings)
    app = create_app(settings)
    engine = app.state.engine
    try:
        who = await factories.user(engine, email=f"bench-{time.time_ns()}@example.com")
        org_id = await factories.organization(engine, owner=who, title="Import bench")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            r = await client.post(
                f"/v1/orgs/{org_id}/spaces", json={"title": "Imported"}, headers=who.headers
            )
            space_id = r.json()["id"]
        imported = from_zip(data)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        async with unit_of_work(engine) as conn:
            await service.apply(conn, space_id, imported, author_id=None)
        seconds = time.perf_counter() - start
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    finally:
        await engine.dispose()
    return seconds, grown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="conversions to time (3)")
    parser.add_argument("--database-url", default="", help="default: SQLite in a temp dir")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="docshelf-bench-imports-"))
    try:
        data = project(args.pages)
        path = tmp / "project.zip"
        path.write_bytes(data)
        print(
            f"Python {platform.python_version()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
            f"command: .venv/bin/python benchmarks/imports.py {' '.join(sys.argv[1:])}".rstrip()
        )
        print(f"project: {args.pages} pages, zip of {len(data) / 1024:.0f} KB")
        runs = [convert_in_child(path) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["seconds"])
        print(
            f"convert (fresh process, best of {args.repeat}): {best['seconds']:.2f} s, "
            f"{best['pages']:.0f} pages, {best['files']:.0f} files, {best['skipped']:.0f} "
            f"reported, detected {best['detected']}; peak RSS {best['peak_kb'] / 1024:.1f} MB "
            f"(+{(best['peak_kb'] - best['before_kb']) / 1024:.1f} MB over the idle process)"
        )
        seconds, grown = asyncio.run(apply_once(data, args.database_url, tmp))
        db = "PostgreSQL" if args.database_url.startswith("postgresql") else "SQLite"
        print(f"apply ({db}): {seconds:.2f} s; peak RSS grew {grown / 1024:.1f} MB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
