"""The job runner's fair claim and the bound on a project's YAML.

    .venv/bin/python benchmarks/jobs.py
    .venv/bin/python benchmarks/jobs.py --database-url postgresql+asyncpg://...  # claims
    PYTHONPATH=<checkout>/src .venv/bin/python benchmarks/jobs.py --part bomb       # any checkout

Part `claims`: a database built by the migrations (SQLite in a temporary directory, or the
empty PostgreSQL database given) holds N due jobs queued by K organizations; the runner claims
jobs one after another (each claim is one transaction: the fair choice, the `jobs` update and
the `job_tenants` upsert) and the script reports the time a claim takes and the organizations
of the first claims (they should take turns). The claim sorts the due jobs by their
organization's last service, so its cost grows with the number of due jobs.

Part `bomb`: an mkdocs project whose nav is a YAML alias bomb (9 entries per level, each level
nine aliases of the one below) converted as an import converts it (`imports.convert.from_zip`,
in this process); it imports nothing from the job runner, so it runs on checkouts from before
the bound as well.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any


def bomb(levels: int) -> bytes:
    lines = ["site_name: Bomb", "l0: &l0 [" + ", ".join(["index.md"] * 9) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, levels)]
    lines.append(f"nav: [*l{levels - 1}]")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mkdocs.yml", "\n".join(lines) + "\n")
        archive.writestr("docs/index.md", "# Home\n")
    return out.getvalue()


def run_bomb(levels: list[int]) -> None:
    from docshelf.imports.convert import from_zip

    for n in levels:
        data = bomb(n)
        started = time.perf_counter()
        imported = from_zip(data)
        took = time.perf_counter() - started
        first = imported.skipped[0].reason if imported.skipped else "-"
        print(
            f"bomb {n} levels ({9**n:,} entries expanded): {took * 1000:,.0f} ms, "
            f"{len(imported.pages)} page(s), {len(imported.skipped):,} skipped entries; "
            f"first: {first}"
        )


def run_claims(database_url: str | None, jobs: int, orgs: int, claims: int) -> None:
    from docshelf.config import Settings
    from docshelf.kit.migrate import upgrade

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), database_url=database_url or "")
        upgrade(settings)
        asyncio.run(_claims(settings, jobs, orgs, claims))


async def _claims(settings: Any, jobs: int, orgs: int, claims: int) -> None:
    import sqlalchemy as sa

    from docshelf.blobs import open_blob_store
    from docshelf.kit.db import create_engine, unit_of_work
    from docshelf.models import jobs as jobs_table
    from docshelf.worker.queue import enqueue
    from docshelf.worker.registry import JobEnv
    from docshelf.worker.runner import JobRunner

    engine = create_engine(settings)
    try:
        async with unit_of_work(engine) as conn:
            await conn.execute(sa.delete(jobs_table))
            for i in range(jobs):
                # The first organization queued most: half of every job.
                org = "org-0" if i % 2 == 0 else f"org-{1 + i % (orgs - 1)}"
                await enqueue(conn, "bench.noop", {}, organization=org)
        runner = JobRunner(engine, JobEnv(open_blob_store(settings), settings))
        order: list[str] = []
        started = time.perf_counter()
        for _ in range(claims):
            job = await runner.claim()
            assert job is not None
            order.append(job["organization_id"])
        took = (time.perf_counter() - started) / claims
        print(
            f"claims: {jobs:,} due jobs of {orgs} organizations "
            f"({settings.resolved_database_url.split(':', 1)[0]}): "
            f"{took * 1000:.2f} ms a claim over {claims}; first organizations served: "
            f"{', '.join(order[:8])}"
        )
        async with unit_of_work(engine) as conn:
            await conn.execute(sa.delete(jobs_table))
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--part", choices=("claims", "bomb", "all"), default="all")
    parser.add_argument("--database-url", default=None, help="an empty database; default SQLite")
    parser.add_argument("--jobs", default="1000,10000", help="due jobs, comma-separated")
    parser.add_argument("--orgs", type=int, default=20)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--levels", default="4,5,6,7")
    args = parser.parse_args()
    if args.part in ("claims", "all"):
        for n in (int(x) for x in args.jobs.split(",")):
            run_claims(args.database_url, n, args.orgs, args.claims)
    if args.part in ("bomb", "all"):
        run_bomb([int(x) for x in args.levels.split(",")])


if __name__ == "__main__":
    main()
