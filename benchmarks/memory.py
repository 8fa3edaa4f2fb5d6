"""Memory: resident size of the API process under a long mixed read load.

Starts the real `docshelf serve` (SQLite in a temporary directory, or --database-url) on
loopback with the job runner as a separate `docshelf worker`, populates an organization (a
~1,000-page space, four 30-page spaces, members, change requests with edits), then sends a
warm-up (every page once in both formats, then --warmup requests of the mix) and --requests
requests of a mixed read load from --concurrency client tasks: organizations, space lists,
spaces, members, change request lists, page listings (main and a change request), single pages
in markdown and in document format, and searches (space and organization).

The resident size (VmRSS from /proc) of the API process (the ASGI server's worker that runs the
app) is sampled after the warm-up and every --sample-every requests; the server's supervisor,
the offload pool's children and the job worker are reported separately.

    .venv/bin/python benchmarks/memory.py
    .venv/bin/python benchmarks/memory.py --database-url postgresql+asyncpg://user@127.0.0.1/db
    .venv/bin/python benchmarks/memory.py --requests 20000 --sample-every 2000   # a quick run

Targets: the API process at most 150 MB, and flat: the end within 10 % of the warm-up figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.factories (users, tokens, members in the database)
sys.path.insert(0, str(HERE))  # content.py's page generator

from tests import factories  # noqa: E402

import content as gen  # noqa: E402
from docshelf.config import Settings  # noqa: E402
from docshelf.kit.db import create_engine  # noqa: E402

HOST = "127.0.0.1"
BIN = Path(sys.executable).parent
TARGET_MB = 150.0
FLAT = 0.10
BIG_SHAPE = (10, 4, 24)  # 10 + 40 + 960 = 1,010 pages
SMALL_SHAPE = (3, 0, 9)  # 3 + 27 = 30 pages


def log(message: str) -> None:
    print(f"[memory {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --------------------------------------------------------------------------------------------
# Processes


def rss_kb(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(c) for c in (task / "children").read_text().split()]
    return out


def describe(pid: int) -> str:
    with contextlib.suppress(OSError):
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return " ".join(a.decode(errors="replace") for a in args if a)[:80]
    return "?"


class Tree:
    """`docshelf serve` (the ASGI server's supervisor), its worker processes running the app
    (the API processes), and their children (the offload pools)."""

    def __init__(self, serve_pid: int, worker_pid: int) -> None:
        self.serve_pid = serve_pid
        self.worker_pid = worker_pid

    def api_pids(self) -> list[int]:
        # Spawned workers come with multiprocessing's resource tracker, which runs no app.
        return [p for p in children(self.serve_pid) if "resource_tracker" not in describe(p)]

    def sample(self) -> dict[str, float]:
        api = self.api_pids()
        pools = [c for p in api for c in children(p)]
        return {
            "api": sum(rss_kb(p) for p in api) / 1024,
            "api_max": max((rss_kb(p) for p in api), default=0) / 1024,
            "supervisor": rss_kb(self.serve_pid) / 1024,
            "offload": sum(rss_kb(p) for p in pools) / 1024,
            "offload_n": len(pools),
            "job_worker": rss_kb(self.worker_pid) / 1024,
        }


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def servers(args: argparse.Namespace, tmp: str) -> Iterator[tuple[str, Tree, Settings]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.update(
        DOCSHELF_DATA_DIR=tmp,
        DOCSHELF_SERVER=args.server,
        DOCSHELF_RATE_LIMIT="0",
        DOCSHELF_LOG_LEVEL="warning",
        DOCSHELF_RUN_JOBS_IN_SERVER="false",
    )
    if args.database_url:
        env["DOCSHELF_DATABASE_URL"] = args.database_url
    for name, value in args.env:
        env[f"DOCSHELF_{name.upper()}"] = value
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    serve = subprocess.Popen(
        [str(BIN / "docshelf"), "serve", "--host", HOST, "--port", str(port)],
        env=env,
        start_new_session=True,
        **quiet,
    )
    worker: subprocess.Popen[bytes] | None = None
    base = f"http://{HOST}:{port}"
    try:
        for _ in range(600):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        else:
            raise RuntimeError("the server did not start")
        worker = subprocess.Popen(
            [str(BIN / "docshelf"), "worker"], env=env, start_new_session=True, **quiet
        )
        settings = Settings(data_dir=Path(tmp), database_url=args.database_url or "")
        yield base, Tree(serve.pid, worker.pid), settings
    finally:
        for process in (serve, worker):
            if process is None:
                continue
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


# --------------------------------------------------------------------------------------------
# Population and load


async def populate(client: httpx.AsyncClient, settings: Settings) -> dict[str, Any]:
    engine = create_engine(settings)
    try:
        admin = await factories.user(engine, email=f"admin-{time.time_ns()}@example.com")
        org = await factories.organization(engine, owner=admin, title="Memory bench")
        readers = []
        for i, role in enumerate(["read"] * 12 + ["edit"] * 6 + ["admin"] * 2):
            who = await factories.user(engine, email=f"m{i}-{time.time_ns()}@example.com")
            await factories.member(engine, org=org, who=who, role=role)
            readers.append(who)
    finally:
        await engine.dispose()
    b = gen.Bench(client, None, admin.headers, org)  # type: ignore[arg-type]
    spaces: dict[str, list[str]] = {}
    for n, shape in enumerate([BIG_SHAPE] + [SMALL_SHAPE] * 4):
        title = "Handbook" if n == 0 else f"Guide {n}"
        body = {"title": title, "visibility": "unlisted"}  # every member reads it
        space = await b.call("POST", f"/v1/orgs/{org}/spaces", body, 201)
        await b.call("PATCH", f"/v1/spaces/{space['id']}", {"editMode": "live"})
        t0 = time.perf_counter()
        spaces[space["id"]] = await gen.generate(b, space["id"], shape, seed=n)
        took = time.perf_counter() - t0
        log(f"space {title}: {len(spaces[space['id']])} leaf pages in {took:.1f} s")
    big = next(iter(spaces))
    rng = random.Random(7)
    crs = []
    for i in range(3):
        cr = await b.call("POST", f"/v1/spaces/{big}/change-requests", None, 201)
        edits = [gen.edit_body(pid, rng, i + 1)["changes"][0] for pid in rng.sample(spaces[big], 5)]
        await b.call(
            "POST", f"/v1/spaces/{big}/change-requests/{cr['id']}/content", {"changes": edits}
        )
        crs.append(cr["id"])
    return {
        "org": org,
        "spaces": spaces,
        "big": big,
        "crs": crs,
        "admin": admin,
        "readers": readers,
    }


def request_mix(world: dict[str, Any], rng: random.Random) -> Iterator[tuple[str, dict[str, str]]]:
    """An endless mixed read load: (path, headers)."""
    org, big, crs = world["org"], world["big"], world["crs"]
    spaces = list(world["spaces"])
    people = [world["admin"], *world["readers"]]
    words = gen.WORDS
    while True:
        who = rng.choice(people).headers
        sid = rng.choice(spaces)
        page = rng.choice(world["spaces"][sid])
        choice = rng.random()
        if choice < 0.08:
            yield f"/v1/orgs/{org}", who
        elif choice < 0.16:
            yield f"/v1/orgs/{org}/spaces", who
        elif choice < 0.24:
            yield f"/v1/spaces/{sid}", who
        elif choice < 0.30:
            yield f"/v1/orgs/{org}/members", who
        elif choice < 0.34:
            yield f"/v1/spaces/{big}/change-requests", who
        elif choice < 0.40:
            yield f"/v1/spaces/{sid}/content/pages", who
        elif choice < 0.42:
            yield f"/v1/spaces/{big}/change-requests/{rng.choice(crs)}/content/pages", who
        elif choice < 0.64:
            yield f"/v1/spaces/{sid}/content/page/{page}", who
        elif choice < 0.84:
            yield f"/v1/spaces/{sid}/content/page/{page}?format=document", who
        elif choice < 0.94:
            yield f"/v1/spaces/{sid}/search?query={rng.choice(words)}", who
        else:
            yield f"/v1/orgs/{org}/search?query={rng.choice(words)}+{rng.choice(words)}", who


async def drive(
    client: httpx.AsyncClient, requests: Iterator[tuple[str, dict[str, str]]], n: int, tasks: int
) -> int:
    """Sends n requests from `tasks` concurrent tasks; returns how many did not answer 200."""
    failures = 0
    taken = itertools.islice(requests, n)

    async def one() -> None:
        nonlocal failures
        for path, headers in taken:
            r = await client.get(path, headers=headers)
            if r.status_code != 200:
                failures += 1
                if failures <= 3:
                    log(f"GET {path} -> {r.status_code}: {r.text[:200]}")

    await asyncio.gather(*(one() for _ in range(tasks)))
    return failures


def row(label: str, done: int, s: dict[str, float], rate: float) -> str:
    return (
        f"| {label} | {done:,} | {s['api']:.1f} | {s['supervisor']:.1f} | "
        f"{s['offload']:.1f} ({s['offload_n']:.0f}) | {s['job_worker']:.1f} | {rate:.0f} |"
    )


async def run(args: argparse.Namespace) -> int:
    with (
        tempfile.TemporaryDirectory(prefix="docshelf-mem-") as tmp,
        servers(args, tmp) as (
            base,
            tree,
            settings,
        ),
    ):
        limits = httpx.Limits(max_connections=args.concurrency)
        async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
            log(f"API processes {tree.api_pids()}: {[describe(p) for p in tree.api_pids()]}")
            log(f"populating (after start: {tree.sample()['api']:.1f} MB)")
            world = await populate(client, settings)
            log(f"populated (API {tree.sample()['api']:.1f} MB); warming up")
            every = [
                (f"/v1/spaces/{sid}/content/page/{pid}{fmt}", world["admin"].headers)
                for sid, pids in world["spaces"].items()
                for pid in pids
                for fmt in ("", "?format=document")
            ]
            failures = await drive(client, iter(every), len(every), args.concurrency)
            rng = random.Random(1)
            mix = request_mix(world, rng)
            failures += await drive(client, mix, args.warmup, args.concurrency)
            lines = [
                "| after | requests | API MB | supervisor MB | offload MB (procs) | "
                "job worker MB | req/s |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
            first = tree.sample()
            lines.append(row("warm-up", 0, first, 0))
            log(lines[-1])
            samples = [first]
            done = 0
            while done < args.requests:
                n = min(args.sample_every, args.requests - done)
                t0 = time.perf_counter()
                failures += await drive(client, mix, n, args.concurrency)
                rate = n / (time.perf_counter() - t0)
                done += n
                samples.append(tree.sample())
                lines.append(row("load", done, samples[-1], rate))
                log(lines[-1])
    start, end = first["api"], samples[-1]["api"]
    peak = max(s["api"] for s in samples)
    growth = (end - start) / start
    under = peak <= TARGET_MB
    flat = abs(growth) <= FLAT
    print()
    print("\n".join(lines))
    print()
    print(
        f"API process RSS after warm-up: {start:.1f} MB; at the end ({done:,} requests): "
        f"{end:.1f} MB; peak {peak:.1f} MB; change {growth * 100:+.1f} %."
    )
    print(
        f"Target <= {TARGET_MB:.0f} MB: {'met' if under else 'MISSED'}; "
        f"flat within {FLAT * 100:.0f} %: {'met' if flat else 'MISSED'}. "
        f"Non-200 answers: {failures}."
    )
    return 0 if under and flat and not failures else 1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default="")
    parser.add_argument("--server", default="granian", choices=["granian", "uvicorn"])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=10_000, help="mixed requests before")
    parser.add_argument("--sample-every", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--env",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a setting for the server, e.g. --env object_cache_mb 32",
    )
    args = parser.parse_args()
    log("command: " + " ".join([".venv/bin/python", "benchmarks/memory.py", *sys.argv[1:]]))
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
