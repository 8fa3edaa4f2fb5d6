"""What users do: a team's data, a cycle of GET URLs across every family of the API and the
reader, two callers, and writes alongside, on the real `docshelf serve` (one process, default
settings but the rate limits, which a load from two tokens would trip), against a floor that
answers every URL with the very same bytes (`mix_floor.py`, bare Starlette under uvicorn with
uvloop and httptools), alternating round by round.

The data: an organization with an admin and a member (role read), 4 spaces of 150 pages (the
pages link to each other and out), a change request with an edit, comments with a reply, a
published public site over the first space.

The load: wrk, 64 connections, cycling over every (URL, caller) pair; during Docshelf's runs a
writer asks for 2 writes a second (alternately a space's title PATCH and a comment POST, each
on its schedule, not waiting for the previous one) and records each one's latency; a write
not answered within 10 s of the run's end is "not made".

Then each URL's single-caller median (the admin, one connection, one request at a time), and
the resident memory of the server's processes after all the requests sent.

    python benchmarks/mix.py --db sqlite
    python benchmarks/mix.py --db postgres          # a throwaway PostgreSQL 15 cluster
    python benchmarks/mix.py --db sqlite --rounds 3 --duration 15 --memory-requests 100000

Goals (issue 31): >= 0.10 of the floor with 2 writes/s and p99 <= 100 ms on SQLite;
PostgreSQL within 1.5x of SQLite's throughput; writes p95 <= 100 ms, every one made; each
GET's single-caller median <= 2 ms (searches <= 8 ms); <= 150 MB resident after 100,000
requests, flat.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import contextlib
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.factories

from load_orgs import (  # noqa: E402
    BIN,
    HOST,
    REPO,
    Server,
    clean_env,
    cpu_busy_percent,
    free_port,
    git_state,
    log,
    parse_wrk,
    postgres_cluster,
    start_docshelf,
)

SPACES = 4
PAGES = 150
WRITES_PER_SECOND = 2.0


# --------------------------------------------------------------------------------------------
# HTTP


def request(
    port: int, method: str, target: str, token: str | None, body: Any = None
) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        conn.request(method, target, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheader("content-type", ""), response.read()
    finally:
        conn.close()


def call(port: int, method: str, target: str, token: str, body: Any = None) -> Any:
    status, _, data = request(port, method, target, token, body)
    if status >= 300:
        raise RuntimeError(f"{method} {target}: {status} {data[:300]!r}")
    return json.loads(data) if data else None


# --------------------------------------------------------------------------------------------
# The team's data


def _markdown(space: int, i: int) -> str:
    return (
        f"# Chapter {i}\n\nThe {space}-{i} chapter of the handbook: deployment, details and "
        f"configuration of page {i}. See [the next chapter](chapter-{i + 1}) and "
        f"[the reference](https://example.com/ref/{i}).\n\n"
        f"```python\ndef page_{i}():\n    return {i}\n```\n\n## Details\n\n"
        + "\n".join(f"- item {k} of chapter {i}, settings and options" for k in range(8))
        + "\n"
    )


async def _people(settings: Any) -> tuple[Any, Any, str]:
    from tests import factories

    from docshelf.kit.db import create_engine

    engine = create_engine(settings)
    try:
        admin = await factories.user(engine, email="mix-admin@example.com", name="Ada Admin")
        org = await factories.organization(engine, owner=admin, title="Mix team")
        member = await factories.user(engine, email="mix-member@example.com", name="Max Member")
        await factories.member(engine, org=org, who=member, role="read")
        return admin, member, org
    finally:
        await engine.dispose()


def seed(port: int, settings: Any) -> dict[str, Any]:
    admin, member, org = asyncio.run(_people(settings))
    a = admin.token
    spaces = []
    for s in range(SPACES):
        space = call(
            port,
            "POST",
            f"/v1/orgs/{org}/spaces",
            a,
            {"title": f"Handbook {s}", "visibility": "unlisted"},
        )
        call(port, "PATCH", f"/v1/spaces/{space['id']}", a, {"editMode": "live"})
        for start in range(0, PAGES, 50):
            changes = [
                {
                    "operation": "insert_page",
                    "title": f"Chapter {i}",
                    "document": {"markdown": _markdown(s, i)},
                }
                for i in range(start, start + 50)
            ]
            call(port, "POST", f"/v1/spaces/{space['id']}/content", a, {"changes": changes})
        spaces.append(space["id"])
    s0 = spaces[0]
    pages = call(port, "GET", f"/v1/spaces/{s0}/content/pages", a)["pages"]
    page = pages[3]
    revision = call(port, "GET", f"/v1/spaces/{s0}/content", a)["id"]
    cr = call(port, "POST", f"/v1/spaces/{s0}/change-requests", a, {"subject": "Edits"})
    call(
        port,
        "POST",
        f"/v1/spaces/{s0}/change-requests/{cr['id']}/content",
        a,
        {"changes": [{"operation": "insert_page", "title": "New", "document": {"markdown": "x"}}]},
    )
    comment = call(
        port,
        "POST",
        f"/v1/spaces/{s0}/comments",
        a,
        {"page": page["id"], "body": {"markdown": "Is this still true?"}},
    )
    for n in range(5):
        call(port, "POST", f"/v1/spaces/{s0}/comments", a, {"body": {"markdown": f"Note {n}"}})
    call(
        port,
        "POST",
        f"/v1/spaces/{s0}/comments/{comment['id']}/replies",
        a,
        {"body": {"markdown": "Yes."}},
    )
    site = call(
        port,
        "POST",
        f"/v1/orgs/{org}/sites",
        a,
        {"title": "Team docs", "visibility": "public", "spaces": [s0]},
    )
    call(port, "POST", f"/v1/orgs/{org}/sites/{site['id']}/publish", a)
    site = call(port, "GET", f"/v1/orgs/{org}/sites/{site['id']}", a)
    return {
        "org": org,
        "admin": admin.token,
        "member": member.token,
        "member_id": member.id,
        "spaces": spaces,
        "page": page,
        "pages2": call(port, "GET", f"/v1/spaces/{spaces[2]}/content/pages", a)["pages"],
        "revision": revision,
        "cr": cr["id"],
        "comment": comment["id"],
        "site": site,
    }


def urls(world: dict[str, Any]) -> list[str]:
    org, (s0, s1, s2, _s3) = world["org"], world["spaces"]
    page, rev, cr, comment = world["page"], world["revision"], world["cr"], world["comment"]
    site = world["site"]
    published = site["urls"]["published"]
    reader = "/" + published.split("://", 1)[1].split("/", 1)[1]
    return [
        # identity
        "/v1/user",
        "/v1/orgs",
        f"/v1/users/{world['member_id']}",
        # organizations
        f"/v1/orgs/{org}",
        f"/v1/orgs/{org}/members",
        f"/v1/orgs/{org}/members/{world['member_id']}",
        f"/v1/orgs/{org}/teams",
        f"/v1/orgs/{org}/collections",
        # spaces
        f"/v1/orgs/{org}/spaces",
        f"/v1/spaces/{s0}",
        f"/v1/spaces/{s1}",
        f"/v1/spaces/{s0}/permissions/aggregate",
        # content and revisions
        f"/v1/spaces/{s0}/content",
        f"/v1/spaces/{s0}/content/pages",
        f"/v1/spaces/{s1}/content/pages",
        f"/v1/spaces/{s0}/content/page/{page['id']}",
        f"/v1/spaces/{s2}/content/page/{world['pages2'][40]['id']}",
        f"/v1/spaces/{s0}/content/path/{page['path']}",
        f"/v1/spaces/{s0}/revisions/{rev}",
        f"/v1/spaces/{s0}/revisions/{rev}/page/{page['id']}",
        # change requests
        f"/v1/spaces/{s0}/change-requests",
        f"/v1/spaces/{s0}/change-requests/{cr}",
        f"/v1/spaces/{s0}/change-requests/{cr}/content/pages",
        # comments
        f"/v1/spaces/{s0}/comments",
        f"/v1/spaces/{s0}/comments/{comment}",
        f"/v1/spaces/{s0}/comments/{comment}/replies",
        # search
        f"/v1/spaces/{s0}/search?query=deployment",
        f"/v1/orgs/{org}/search?query=configuration",
        # links
        f"/v1/spaces/{s0}/links",
        f"/v1/spaces/{s0}/content/page/{page['id']}/links",
        # sites
        f"/v1/orgs/{org}/sites",
        f"/v1/orgs/{org}/sites/{site['id']}",
        f"/v1/orgs/{org}/sites/{site['id']}/site-spaces",
        f"/v1/orgs/{org}/sites/{site['id']}/structure",
        # published content
        f"/v1/urls/published?url={quote(published + page['path'], safe='')}",
        # the reader
        reader,
        f"{reader}{page['path']}",
    ]


def capture(port: int, world: dict[str, Any]) -> dict[str, tuple[int, str, bytes]]:
    """Docshelf's answer to every (URL, caller): what the floor sends back."""
    answers = {}
    for target in urls(world):
        for token in (world["admin"], world["member"]):
            status, media, body = request(port, "GET", target, token)
            if status >= 400:
                log(f"left out: {target} answers {status} to a caller: {body[:200]!r}")
                continue
            answers[f"{target} {token}"] = (status, media, body)
    return answers


# --------------------------------------------------------------------------------------------
# Load


def wrk_script(answers: dict[str, Any], path: Path) -> None:
    lines = ["local requests = {"]
    for key in answers:
        target, token = key.rsplit(" ", 1)
        lines.append(
            f'  wrk.format("GET", {json.dumps(target)}, {{["Authorization"] = "Bearer {token}"}}),'
        )
    lines += [
        "}",
        "local i = 0",
        "function setup(thread) thread:set('offset', math.random(#requests)) end",
        "function init(args) i = tonumber(offset) or 0 end",
        "function request() i = i % #requests + 1; return requests[i] end",
    ]
    path.write_text("\n".join(lines) + "\n")


def run_wrk(port: int, script: Path, connections: int, seconds: float) -> dict[str, Any]:
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{round(seconds)}s", "--timeout", "10s"]
    cmd += ["--latency", "-s", str(script), f"http://{HOST}:{port}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    result = asdict(parse_wrk(done.stdout))
    result.pop("raw", None)
    return result


class Writer:
    """Asks for `rate` writes a second, each at its own time (a slow write does not delay the
    next), alternately a space's title and a comment; records each one's latency."""

    def __init__(self, port: int, world: dict[str, Any], rate: float) -> None:
        self.port, self.rate = port, rate
        self.space = world["spaces"][3]
        self.token = world["admin"]
        self.done: list[tuple[float, int]] = []
        self.asked = 0
        self._stop = threading.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(16)
        self._futures: list[concurrent.futures.Future[None]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Writer:
        if self.rate > 0:
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        concurrent.futures.wait(self._futures, timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _one(self, n: int) -> None:
        t0 = time.perf_counter()
        try:
            if n % 2:
                body = {"markdown": f"Write {n}"}
                status, _, _ = request(
                    self.port,
                    "POST",
                    f"/v1/spaces/{self.space}/comments",
                    self.token,
                    {"body": body},
                )
            else:
                status, _, _ = request(
                    self.port,
                    "PATCH",
                    f"/v1/spaces/{self.space}",
                    self.token,
                    {"title": f"Handbook {n % 7}"},
                )
        except OSError:
            status = 0
        self.done.append((time.perf_counter() - t0, status))

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.is_set():
            self._futures.append(self._pool.submit(self._one, self.asked))
            self.asked += 1
            self._stop.wait(max(0.0, started + self.asked / self.rate - time.monotonic()))

    def summary(self) -> dict[str, Any]:
        made = sorted(t for t, status in self.done if 200 <= status < 300)
        return {
            "asked": self.asked,
            "made": len(made),
            "p50_ms": round(statistics.median(made) * 1000, 1) if made else None,
            "p95_ms": round(made[min(len(made) - 1, int(len(made) * 0.95))] * 1000, 1)
            if made
            else None,
        }


def settle(limit_s: float = 60.0) -> float:
    """Waits until the machine is quiet (the worker's jobs from the writes done, say), so that
    single-caller medians are of a quiet server; returns how long that took."""
    start = time.monotonic()
    while cpu_busy_percent(1.0) > 5.0 and time.monotonic() - start < limit_s:
        pass
    waited = round(time.monotonic() - start, 1)
    log(f"quiet after {waited} s")
    return waited


def medians(port: int, world: dict[str, Any], times: int) -> dict[str, float]:
    """Each URL's median latency for the admin alone: one connection, one request at a time."""
    out = {}
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    headers = {"Authorization": f"Bearer {world['admin']}"}
    for target in urls(world):
        took = []
        for _ in range(times):
            t0 = time.perf_counter()
            conn.request("GET", target, headers=headers)
            response = conn.getresponse()
            response.read()
            took.append(time.perf_counter() - t0)
        out[target] = round(statistics.median(took) * 1000, 2)
    conn.close()
    return out


def cpu_ticks(pid: int, thread: int | None = None) -> int:
    """The process's (or one of its threads') user + system CPU time so far, in clock ticks."""
    stat = f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat"
    fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def family(target: str) -> str:
    """The route family a URL of the mix belongs to (for the CPU table)."""
    path = target.split("?", 1)[0]
    for word, name in (
        ("/search", "search"),
        ("/links", "links"),
        ("/comments", "comments"),
        ("/change-requests", "change requests"),
        ("/permissions", "spaces"),
        ("/revisions", "content"),
        ("/content", "content"),
        ("/sites", "sites"),
        ("/urls/published", "published"),
        ("/members", "organizations"),
        ("/teams", "organizations"),
        ("/collections", "organizations"),
    ):
        if word in path:
            return name
    if path in ("/v1/user", "/v1/orgs") or path.startswith("/v1/users"):
        return "identity"
    if path.startswith("/v1/spaces") or path.endswith("/spaces"):
        return "spaces"
    if path.startswith("/v1/orgs/"):
        return "organizations"
    return "reader"


def cpu_per_request(
    server: Server, world: dict[str, Any], script: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """CPU time the server process spends per request, robust to a shared machine (it does
    not count the time the process waits for a core): each URL alone (the admin, one
    connection, `--cpu-times` requests), then the whole mix under wrk's 64 connections."""
    pid = api_pid(server)
    conn = http.client.HTTPConnection(HOST, server.port, timeout=30)
    headers = {"Authorization": f"Bearer {world['admin']}"}
    per_url: dict[str, float] = {}
    for target in urls(world):
        for _ in range(5):  # warm: the first answers build what later ones reuse
            conn.request("GET", target, headers=headers)
            conn.getresponse().read()
        before = cpu_ticks(pid)
        for _ in range(args.cpu_times):
            conn.request("GET", target, headers=headers)
            conn.getresponse().read()
        per_url[target] = round((cpu_ticks(pid) - before) * TICK_MS / args.cpu_times, 3)
    conn.close()
    families: dict[str, list[float]] = {}
    for target, ms in per_url.items():
        families.setdefault(family(target), []).append(ms)
    before = cpu_ticks(pid)
    done = run_wrk(server.port, script, args.connections, args.cpu_mix_seconds)
    mix_ms = (cpu_ticks(pid) - before) * TICK_MS / max(1, done["requests"])
    return {
        "per_url_ms": per_url,
        "per_family_ms": {k: round(statistics.mean(v), 3) for k, v in sorted(families.items())},
        "mean_over_urls_ms": round(statistics.mean(per_url.values()), 3),
        "mix_ms": round(mix_ms, 3),
        "mix_requests": done["requests"],
        "mix_rps": done["rps"],
    }


def rss_mb(server: Server) -> float:
    total = 0
    for pid in server.python_pids():
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total = max(total, int(line.split()[1]))
    return round(total / 1024, 1)


# --------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not shutil.which("wrk"):
        raise SystemExit("wrk not found: apt-get install -y wrk")
    from docshelf.config import Settings

    work = Path(tempfile.mkdtemp(prefix="docshelf-mix-"))
    data_dir = work / "data"
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "db": args.db,
        "git": git_state(),
        "connections": args.connections,
        "workers": args.workers,
        "duration_s": args.duration,
        "rounds": args.rounds,
        "background_cpu_percent": round(cpu_busy_percent(), 1),
        "env": args.env,
    }
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        database_url = args.database_url
        if args.db == "postgres" and not database_url:
            database_url = stack.enter_context(postgres_cluster(free_port(), False))
        docshelf = start_docshelf(
            stack,
            work,
            data_dir,
            database_url,
            server=Settings().server,
            rate_limit=0,
            workers=args.workers,
            extra_env={
                "DOCSHELF_ANONYMOUS_RATE_LIMIT": "0",
                **dict(kv.split("=", 1) for kv in args.env),
            },
        )
        settings = Settings(data_dir=data_dir, database_url=database_url or "")
        t0 = time.perf_counter()
        world = seed(docshelf.port, settings)
        log(f"seeded in {time.perf_counter() - t0:.1f} s")
        answers = capture(docshelf.port, world)
        report["urls"] = len(urls(world))
        report["pairs"] = len(answers)
        floor_file = work / "answers.json"
        floor_file.write_text(
            json.dumps(
                {k: [s, m, base64.b64encode(b).decode()] for k, (s, m, b) in answers.items()}
            )
        )
        script = work / "mix.lua"
        wrk_script(answers, script)
        floor = Server(
            "floor",
            [
                str(BIN / "uvicorn"),
                "mix_floor:app",
                "--host",
                HOST,
                "--port",
                str(port := free_port()),
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--log-level",
                "warning",
                "--no-access-log",
                "--workers",
                str(args.workers),
            ],
            clean_env(MIX_FLOOR_FILE=str(floor_file), PYTHONPATH=str(HERE)),
            port,
            work,
        )
        stack.callback(floor.stop)
        floor.wait_ready()
        sent = 0
        rounds: list[dict[str, Any]] = []
        run_wrk(docshelf.port, script, args.connections, args.warmup)
        if args.cpu:
            report["cpu"] = cpu_per_request(docshelf, world, script, args)
        for r in range(args.rounds):
            row: dict[str, Any] = {
                "floor": run_wrk(floor.port, script, args.connections, args.duration)
            }
            with Writer(docshelf.port, world, args.writes_per_second) as writer:
                row["docshelf"] = run_wrk(docshelf.port, script, args.connections, args.duration)
            row["writes"] = writer.summary()
            if args.no_writes_too:
                row["docshelf_no_writes"] = run_wrk(
                    docshelf.port, script, args.connections, args.duration
                )
                sent += row["docshelf_no_writes"]["requests"]
            sent += row["docshelf"]["requests"]
            row["share"] = round(row["docshelf"]["rps"] / row["floor"]["rps"], 4)
            log(f"round {r + 1}: {json.dumps(row)}")
            rounds.append(row)
        report["rounds_detail"] = rounds
        report["rss_mb_after"] = {"requests": sent, "mb": rss_mb(docshelf)}
        if args.memory_requests > sent:
            samples = [(sent, rss_mb(docshelf))]
            while sent < args.memory_requests:
                done = run_wrk(docshelf.port, script, args.connections, 30)
                sent += done["requests"]
                samples.append((sent, rss_mb(docshelf)))
                log(f"memory: {samples[-1]}")
            report["rss_samples"] = samples
        if rounds:
            report["settled_s"] = settle()
            report["medians_ms"] = medians(docshelf.port, world, args.times)
        if args.profile:
            report["profile"] = profile_mix(docshelf, script, args)
    return report


def api_pid(server: Server) -> int:
    """The process that runs the app: the one of the server's that used the most CPU."""
    return max(server.python_pids(), key=cpu_ticks)


def profile_mix(server: Server, script: Path, args: argparse.Namespace) -> str:
    """py-spy's collapsed stacks of the server's processes under the mix (no writes)."""
    load = subprocess.Popen(
        [
            *("wrk", "-t1", f"-c{args.connections}", f"-d{round(args.profile) + 3}s"),
            *("-s", str(script), f"http://{HOST}:{server.port}"),
        ],
        stdout=subprocess.DEVNULL,
    )
    out = Path(args.profile_out)
    try:
        time.sleep(1)
        subprocess.run(
            [
                *(str(BIN / "py-spy"), "record", "--pid", str(api_pid(server))),
                *("--rate", "200", "--duration", str(round(args.profile)), "--nonblocking"),
                *("--format", "raw", "--output", str(out)),
            ],
            capture_output=True,
            check=True,
            timeout=args.profile + 30,
        )
    finally:
        load.wait(timeout=args.profile + 30)
    return str(out)


def render_cpu(cpu: dict[str, Any]) -> str:
    lines = [
        f"CPU per request of the server process: the mix {cpu['mix_ms']} ms "
        f"({cpu['mix_requests']} requests, {cpu['mix_rps']:.0f} req/s); mean over the URLs "
        f"alone {cpu['mean_over_urls_ms']} ms",
        "",
        "| family | CPU ms per request, single caller |",
        "|---|---:|",
    ]
    lines += [f"| {k} | {v:.2f} |" for k, v in cpu["per_family_ms"].items()]
    lines.append("\nper URL (admin), CPU ms per request:\n")
    for target, ms in sorted(cpu["per_url_ms"].items(), key=lambda kv: -kv[1]):
        lines.append(f"- {ms:6.2f}  {target}")
    return "\n".join(lines)


def render(report: dict[str, Any]) -> str:
    rounds = report["rounds_detail"]
    if not rounds:
        return render_cpu(report["cpu"]) if "cpu" in report else ""

    def med(key: str, field: str) -> float:
        return round(statistics.median(r[key][field] for r in rounds), 1)

    lines = [
        f"{report['date']} {report['db']} {report['git']} ({report['urls']} URLs, "
        f"{report['pairs']} URL x caller pairs, {report['connections']} connections, "
        f"{report.get('workers', 1)} API process(es) and as many of the floor's, "
        f"{report['rounds']} x {report['duration_s']} s, background CPU "
        f"{report['background_cpu_percent']} %)",
        "",
        "| round | floor req/s | docshelf req/s (2 writes/s) | share | p99 ms | writes asked/made "
        "| write p50 / p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n, r in enumerate(rounds, 1):
        w = r["writes"]
        lines.append(
            f"| {n} | {r['floor']['rps']:.0f} | {r['docshelf']['rps']:.0f} | {r['share']:.3f} "
            f"| {r['docshelf']['p99_ms']:.0f} | {w['asked']}/{w['made']} "
            f"| {w['p50_ms']} / {w['p95_ms']} |"
        )
    share = statistics.median(r["share"] for r in rounds)
    lines.append(
        f"| median | {med('floor', 'rps'):.0f} | {med('docshelf', 'rps'):.0f} "
        f"| {share:.3f} | {med('docshelf', 'p99_ms'):.0f} | | |"
    )
    if "docshelf_no_writes" in rounds[0]:
        lines.append(
            f"\nno writes: {med('docshelf_no_writes', 'rps'):.0f} req/s, "
            f"p99 {med('docshelf_no_writes', 'p99_ms'):.0f} ms"
        )
    errors = sum(r["docshelf"]["non_2xx"] + r["docshelf"]["socket_errors"] for r in rounds)
    lines.append(f"\ndocshelf non-2xx/3xx + socket errors during the runs: {errors}")
    if "cpu" in report:
        lines += ["", render_cpu(report["cpu"])]
    mem = report["rss_mb_after"]
    lines.append(f"resident: {mem['mb']} MB after {mem['requests']} requests of the mix")
    if "rss_samples" in report:
        lines.append(f"resident samples (requests, MB): {report['rss_samples']}")
    lines.append("\nsingle-caller medians (admin), ms:\n")
    for target, ms in sorted(report["medians_ms"].items(), key=lambda kv: -kv[1]):
        lines.append(f"- {ms:6.2f}  {target}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--database-url", default=None, help="an empty PostgreSQL database instead")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=15)
    p.add_argument("--warmup", type=float, default=5)
    p.add_argument("--connections", type=int, default=64)
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="API processes of docshelf serve, and as many of the floor's (default: one each)",
    )
    p.add_argument("--writes-per-second", type=float, default=WRITES_PER_SECOND)
    p.add_argument("--no-writes-too", action="store_true", help="also a run without writes")
    p.add_argument("--times", type=int, default=25, help="requests per URL for the medians")
    p.add_argument("--memory-requests", type=int, default=0)
    p.add_argument("--json-out", type=Path, default=None)
    p.add_argument(
        "--env", action="append", default=[], help="KEY=VALUE for the server (e.g. a setting)"
    )
    p.add_argument(
        "--cpu", action="store_true", help="CPU ms per request of the server, per URL and mix"
    )
    p.add_argument("--cpu-times", type=int, default=200, help="requests per URL for --cpu")
    p.add_argument("--cpu-mix-seconds", type=float, default=10)
    p.add_argument("--profile", type=float, default=0, help="seconds of py-spy under the mix")
    p.add_argument("--profile-out", default="/tmp/mix-profile.txt")
    args = p.parse_args(argv)
    if args.workers < 1:
        p.error("--workers must be 1 or more")
    if args.workers > 1 and (args.cpu or args.profile):
        # Both read the one busiest API process: with several, most requests go elsewhere.
        p.error("--cpu and --profile measure one API process: use them with --workers 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.chdir(REPO)
    report = run(args)
    print()
    print(render(report))
    if args.json_out:
        with args.json_out.open("a") as f:
            f.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
