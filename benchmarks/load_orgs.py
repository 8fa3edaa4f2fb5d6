"""Load test: authenticated GET /v1/orgs/{organizationId} on the real `docshelf serve` against a
bare Starlette + orjson endpoint answering the same bytes, on the same ASGI server.

Everything is throwaway and local: a temporary data directory, optionally a temporary
PostgreSQL cluster, servers bound to 127.0.0.1 only, and load runs of bounded duration.

    .venv/bin/python benchmarks/load_orgs.py --db sqlite --server granian --duration 15
    .venv/bin/python benchmarks/load_orgs.py --db postgres --server uvicorn --duration 15
    .venv/bin/python benchmarks/load_orgs.py --db postgres --database-url postgresql+asyncpg://...

The load generator is `wrk` when it is on PATH (apt-get install wrk), else a Python
asyncio+httpx generator, which competes with the server for CPU; the report names the tool.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BIN = Path(sys.executable).parent
PG_BIN = Path("/usr/lib/postgresql/15/bin")
HOST = "127.0.0.1"  # all servers and all load stay on loopback

TARGET_RATIO = 0.25
TARGET_P99_MS = 50.0


# --------------------------------------------------------------------------------------------
# Small helpers


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port(preferred: int | None = None) -> int:
    if preferred:
        with socket.socket() as s, contextlib.suppress(OSError):
            s.bind((HOST, preferred))
            return preferred
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def http_get(port: int, path: str, token: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without any DOCSHELF_* setting, plus ours: reproducible runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.update(extra)
    return env


def cpu_busy_percent(seconds: float = 2.0) -> float:
    """Machine-wide CPU use over a short idle window: anything else running skews the figures."""

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
        done = subprocess.run(["git", *words], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--", "src")
    return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes in src/" if dirty else "")


class Server:
    """A server subprocess in its own session, so that it and its workers stop together."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], port: int, logs: Path):
        self.name = name
        self.port = port
        self.env = env
        self.log_path = logs / f"{name}.log"
        self._log = self.log_path.open("wb")
        log(f"starting {name}: {' '.join(cmd)}")
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=REPO,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited early; see {self.log_path}:\n{self.tail()}")
            try:
                http_get(self.port, "/v1/orgs")  # any HTTP answer (401 included) means up
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not answer within {timeout}s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def python_pids(self) -> list[int]:
        """The server process and its descendants (granian runs the app in worker children)."""
        pids = [self.proc.pid]
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(self.proc.pid)], capture_output=True, text=True
        ).stdout
        pids += [int(p) for p in out.split()]
        return pids

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self._log.close()


# --------------------------------------------------------------------------------------------
# Throwaway PostgreSQL cluster


def _as_postgres(cmd: list[str]) -> list[str]:
    # initdb refuses to run as root: run the cluster as the postgres OS user.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextlib.contextmanager
def postgres_cluster(port: int, keep: bool) -> Iterator[str]:
    if not (PG_BIN / "initdb").exists():
        raise SystemExit(f"--db postgres without --database-url needs {PG_BIN}/initdb")
    root = Path(tempfile.mkdtemp(prefix="docshelf-bench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, sock, pglog = root / "data", root / "sock", root / "postgres.log"
    run = subprocess.run
    try:
        run(_as_postgres(["mkdir", "-p", str(sock)]), check=True)
        run(
            _as_postgres(
                [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        options = f"-c listen_addresses={HOST} -p {port} -k {sock} -c max_connections=200"
        run(
            _as_postgres(
                [
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(pglog),
                    "-o",
                    options,
                    "-w",
                    "start",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        run(
            _as_postgres(
                [
                    str(PG_BIN / "createdb"),
                    "-h",
                    HOST,
                    "-p",
                    str(port),
                    "-U",
                    "postgres",
                    "docshelf_bench",
                ]
            ),
            check=True,
        )
        log(f"throwaway PostgreSQL 15 cluster on {HOST}:{port} in {root}")
        yield f"postgresql+asyncpg://postgres@{HOST}:{port}/docshelf_bench"
    finally:
        run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if keep:
            log(f"kept PostgreSQL directory {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Load generators


@dataclass
class LoadResult:
    tool: str
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p75_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    non_2xx: int
    socket_errors: int
    raw: str = field(default="", repr=False)


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)([a-z]+)", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS_MS[unit]


def parse_wrk(out: str) -> LoadResult:
    def grab(pattern: str, default: str = "0") -> str:
        found = re.search(pattern, out)
        return found.group(1) if found else default

    pct = {p: _ms(grab(rf"\s{p}%\s+([\d.]+[a-z]+)", "0ms")) for p in ("50", "75", "90", "99")}
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    requests_line = re.search(r"(\d+) requests in ([\d.]+)(\w+),", out)
    if requests_line is None:
        raise RuntimeError(f"cannot parse wrk output:\n{out}")
    seconds = _ms(requests_line.group(2) + requests_line.group(3)) / 1000
    return LoadResult(
        tool="wrk",
        requests=int(requests_line.group(1)),
        seconds=seconds,
        rps=float(grab(r"Requests/sec:\s+([\d.]+)")),
        p50_ms=pct["50"],
        p75_ms=pct["75"],
        p90_ms=pct["90"],
        p99_ms=pct["99"],
        max_ms=_ms(grab(r"Latency\s+\S+\s+\S+\s+(\S+)", "0ms")),
        # wrk counts answers with a status >= 400 here; the preflight checks for exactly 200.
        non_2xx=int(grab(r"Non-2xx or 3xx responses: (\d+)")),
        socket_errors=sum(int(n) for n in errors.groups()) if errors else 0,
        raw=out,
    )


def run_wrk(
    url: str, token: str | None, connections: int, threads: int, seconds: float
) -> LoadResult:
    cmd = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "5s",
        "--latency",
    ]
    if token:
        cmd += ["-H", f"Authorization: Bearer {token}"]
    cmd.append(url)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    return parse_wrk(done.stdout)


async def _httpx_load(url: str, token: str | None, connections: int, seconds: float) -> LoadResult:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    latencies: list[float] = []
    statuses: collections.Counter[int] = collections.Counter()
    errors = 0
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(limits=limits, timeout=10) as client:
        start = time.perf_counter()
        deadline = start + seconds

        async def user() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                try:
                    response = await client.get(url, headers=headers)
                except httpx.HTTPError:
                    errors += 1
                    continue
                latencies.append(time.perf_counter() - t0)
                statuses[response.status_code] += 1

        await asyncio.gather(*(user() for _ in range(connections)))
        elapsed = time.perf_counter() - start
    latencies.sort()

    def pct(p: float) -> float:
        return (
            latencies[min(len(latencies) - 1, int(len(latencies) * p))] * 1000 if latencies else 0
        )

    return LoadResult(
        tool="httpx (asyncio, in-process: steals CPU from the server)",
        requests=len(latencies),
        seconds=elapsed,
        rps=len(latencies) / elapsed,
        p50_ms=pct(0.50),
        p75_ms=pct(0.75),
        p90_ms=pct(0.90),
        p99_ms=pct(0.99),
        max_ms=latencies[-1] * 1000 if latencies else 0,
        non_2xx=sum(n for s, n in statuses.items() if not 200 <= s < 300),
        socket_errors=errors,
    )


def load(
    tool: str, url: str, token: str | None, connections: int, threads: int, seconds: float
) -> LoadResult:
    if tool == "wrk":
        return run_wrk(url, token, connections, threads, seconds)
    return asyncio.run(_httpx_load(url, token, connections, seconds))


# --------------------------------------------------------------------------------------------
# Profiling (optional): py-spy on the Docshelf server process tree while wrk drives it


def _area(frame: str) -> str:
    """The top-level package of a py-spy frame such as `execute (sqlalchemy/engine/base.py:12)`."""
    found = re.search(r"\(([^)]*)\)$", frame)
    if not found:
        return "other"
    path = found.group(1)
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    head = path.lstrip("/").split("/", 1)[0]
    return head.removesuffix(".py").split(":", 1)[0] or "other"


def summarize_profile(raw_file: Path, top: int = 25) -> str:
    """Self and inclusive time per function and per package from py-spy's collapsed stacks."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    areas: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw_file.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        frames = [f for f in frames if not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        areas[_area(frames[-1])] += count
        for f in set(frames):
            inclusive[f] += count
    if not total:
        return "no samples"
    lines = [f"{total} samples"]
    lines.append("\nself time by package (leaf frame):")
    lines += [f"  {n * 100 / total:5.1f}%  {a}" for a, n in areas.most_common(top)]
    lines.append("\nself time by function:")
    lines += [f"  {n * 100 / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines.append("\ninclusive time by function:")
    lines += [f"  {n * 100 / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(lines)


def profile(
    server: Server, url: str, token: str, args: argparse.Namespace, out_dir: Path
) -> str | None:
    py_spy = shutil.which("py-spy") or str(BIN / "py-spy")
    if not Path(py_spy).exists():
        log("py-spy not found (.venv/bin/pip install py-spy): skipping the profile")
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    raw = out_dir / f"profile-{args.db}-{args.server}.txt"
    wrk = subprocess.Popen(
        [
            "wrk",
            "-t1",
            f"-c{args.connections}",
            f"-d{round(args.profile) + 3}s",
            "-H",
            f"Authorization: Bearer {token}",
            url,
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(1)
        # Collapsed stacks: readable as text, and loadable in speedscope or flamegraph.pl.
        done = subprocess.run(
            [
                py_spy,
                "record",
                "--pid",
                str(server.proc.pid),
                "--subprocesses",
                "--gil",
                "--rate",
                "250",
                "--duration",
                str(round(args.profile)),
                "--nonblocking",
                "--format",
                "raw",
                "--output",
                str(raw),
            ],
            capture_output=True,
            text=True,
            timeout=args.profile + 30,
        )
        if done.returncode != 0:
            log(f"py-spy failed ({done.returncode}): {done.stderr.strip()[-500:]}")
            return None
    finally:
        wrk.wait(timeout=args.profile + 30)
    log(f"profile (collapsed stacks) written to {raw}")
    return summarize_profile(raw)


# --------------------------------------------------------------------------------------------
# The run


def measure(
    name: str, tool: str, url: str, token: str | None, args: argparse.Namespace
) -> LoadResult:
    if args.warmup > 0:
        log(f"{name}: warm-up {args.warmup}s")
        load(tool, url, token, args.connections, args.threads, args.warmup)
    log(f"{name}: measuring {args.duration}s at {args.connections} connections ({tool})")
    result = load(tool, url, token, args.connections, args.threads, args.duration)
    log(
        f"{name}: {result.rps:.0f} req/s, p50 {result.p50_ms:.2f} ms, "
        f"p99 {result.p99_ms:.2f} ms, non-2xx {result.non_2xx}, socket errors "
        f"{result.socket_errors}"
    )
    return result


def cli_bootstrap(env: dict[str, str], data_dir: Path) -> tuple[str, str]:
    """A user, an organization and a token through the `docshelf` CLI."""
    email = f"bench-{os.getpid()}-{int(time.time())}@docshelf.local"
    log(f"database not empty: creating {email}, an organization and a token with the CLI")

    def cli(*words: str) -> str:
        done = subprocess.run(
            [str(BIN / "docshelf"), "--data-dir", str(data_dir), *words],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip().splitlines()[-1].strip()

    cli("user", "create", "--email", email)
    org_id = cli("org", "create", "--title", "Benchmark", "--owner", email)
    return cli("token", "create", "--user", email), org_id


def run(args: argparse.Namespace) -> dict[str, Any]:
    tool = args.tool
    if tool == "auto":
        tool = "wrk" if shutil.which("wrk") else "httpx"
    if tool == "wrk" and not shutil.which("wrk"):
        raise SystemExit("wrk not found: apt-get install -y wrk, or use --tool httpx")
    work = Path(tempfile.mkdtemp(prefix="docshelf-bench-"))
    data_dir = work / "data"
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "db": args.db,
        "server": args.server,
        "tool": tool,
        "connections": args.connections,
        "wrk_threads": args.threads if tool == "wrk" else None,
        "duration_s": args.duration,
        "workers": args.workers,
        "rate_limit": args.rate_limit,
        "cpus": os.cpu_count(),
        "git": git_state(),
    }
    busy = cpu_busy_percent()
    deadline = time.monotonic() + args.wait_quiet
    while busy > 10 and time.monotonic() < deadline:
        log(f"machine {busy:.0f}% busy: waiting for it to quiet down (--wait-quiet)")
        time.sleep(3)
        busy = cpu_busy_percent()
    report["background_cpu_percent"] = round(busy, 1)
    if busy > 10:
        log(f"WARNING: the machine is already {busy:.0f}% busy before the run: figures are skewed")
    with contextlib.ExitStack() as stack:
        if not args.keep:
            stack.callback(shutil.rmtree, work, ignore_errors=True)
        else:
            stack.callback(log, f"kept {work}")
        database_url = args.database_url
        if args.db == "postgres" and not database_url:
            database_url = stack.enter_context(postgres_cluster(free_port(args.pg_port), args.keep))
        if args.db == "sqlite" and database_url:
            raise SystemExit("--database-url is for --db postgres")

        docshelf = start_docshelf(
            stack,
            work,
            data_dir,
            database_url,
            server=args.server,
            rate_limit=args.rate_limit,
            workers=args.workers,
            log_level=args.log_level,
        )
        port = docshelf.port

        # First start on an empty database bootstrapped an admin, an organization and the
        # admin's token; on an existing database (--database-url) the CLI makes fresh ones.
        token_file = data_dir / "admin-token"
        if token_file.exists():
            token = token_file.read_text().strip()
            status, body = http_get(port, "/v1/orgs", token)
            if status != 200:
                raise SystemExit(f"GET /v1/orgs answered {status}: {body[:300]!r}")
            org_id = json.loads(body)["items"][0]["id"]
        else:
            token, org_id = cli_bootstrap(docshelf.env, data_dir)
        path = f"/v1/orgs/{org_id}"
        status, org_bytes = http_get(port, path, token)
        if status != 200:
            raise SystemExit(f"GET {path} answered {status}: {org_bytes[:300]!r}")
        payload_file = work / "org.json"
        payload_file.write_bytes(org_bytes)
        report["response_bytes"] = len(org_bytes)
        log(f"GET {path} -> {status}, {len(org_bytes)} bytes")

        url = f"http://{HOST}:{port}{path}"
        report["docshelf"] = asdict(measure("docshelf", tool, url, token, args))
        if args.profile > 0 and tool == "wrk":
            report["profile"] = profile(docshelf, url, token, args, args.profile_dir or work)
        docshelf.stop()

        bare_port = free_port()
        bare = Server(
            "bare",
            [
                sys.executable,
                str(HERE / "bare_app.py"),
                "--server",
                args.server,
                "--host",
                HOST,
                "--port",
                str(bare_port),
                "--workers",
                str(args.workers),
                "--log-level",
                args.log_level,
            ],
            clean_env(BARE_PAYLOAD_FILE=str(payload_file), PYTHONPATH=str(HERE)),
            bare_port,
            work,
        )
        stack.callback(bare.stop)
        bare.wait_ready()
        status, bare_bytes = http_get(bare_port, path)
        if status != 200 or len(bare_bytes) != len(org_bytes):
            raise SystemExit(f"bare endpoint: {status}, {len(bare_bytes)} bytes")
        report["bare"] = asdict(
            measure("bare", tool, f"http://{HOST}:{bare_port}{path}", None, args)
        )
        bare.stop()
    for side in ("docshelf", "bare"):
        report[side].pop("raw", None)
    report["ratio"] = report["docshelf"]["rps"] / report["bare"]["rps"]
    return report


def render(report: dict[str, Any]) -> str:
    d, b = report["docshelf"], report["bare"]
    ratio, p99 = report["ratio"], d["p99_ms"]
    rows = [
        f"Docshelf GET /v1/orgs/{{id}} vs bare Starlette+orjson ({report['response_bytes']} "
        f"bytes), db={report['db']}, server={report['server']}, tool={report['tool']}, "
        f"{report['connections']} connections, {report['duration_s']}s, {report['cpus']} CPUs, "
        f"git {report['git']}, background CPU before the run {report['background_cpu_percent']}%",
        "",
        f"{'':10} {'req/s':>10} {'p50 ms':>8} {'p75 ms':>8} {'p90 ms':>8} {'p99 ms':>8} "
        f"{'max ms':>8} {'non-2xx':>8} {'sock err':>8}",
    ]
    for name, r in (("docshelf", d), ("bare", b)):
        rows.append(
            f"{name:10} {r['rps']:10.0f} {r['p50_ms']:8.2f} {r['p75_ms']:8.2f} "
            f"{r['p90_ms']:8.2f} {r['p99_ms']:8.2f} {r['max_ms']:8.2f} {r['non_2xx']:8d} "
            f"{r['socket_errors']:8d}"
        )
    rows += [
        "",
        f"ratio docshelf/bare = {ratio:.3f} (target >= {TARGET_RATIO}: "
        f"{'met' if ratio >= TARGET_RATIO else 'MISSED'})",
        f"docshelf p99 = {p99:.2f} ms (target < {TARGET_P99_MS:.0f} ms: "
        f"{'met' if p99 < TARGET_P99_MS else 'MISSED'})",
        f"non-2xx: docshelf {d['non_2xx']}, bare {b['non_2xx']} (must be 0: "
        f"{'ok' if d['non_2xx'] == 0 and b['non_2xx'] == 0 else 'FAILED'})",
    ]
    if report.get("profile"):
        rows += [
            "",
            "py-spy profile of the docshelf server under the same load:",
            report["profile"],
        ]
    return "\n".join(rows)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--server", choices=("granian", "uvicorn"), default="granian")
    p.add_argument("--duration", type=float, default=15, help="seconds measured per target")
    p.add_argument("--warmup", type=float, default=3, help="seconds of unmeasured load first")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="wrk threads (default 1: 2 cores)")
    p.add_argument("--tool", choices=("auto", "wrk", "httpx"), default="auto")
    p.add_argument("--workers", type=int, default=1, help="server worker processes (both)")
    p.add_argument(
        "--rate-limit",
        type=int,
        default=0,
        help="DOCSHELF_RATE_LIMIT (0 disables; a large value measures the limiter's cost)",
    )
    p.add_argument("--log-level", default="info")
    p.add_argument("--database-url", default="", help="use this PostgreSQL instead of a temp one")
    p.add_argument("--pg-port", type=int, default=55433, help="temp cluster port if free")
    p.add_argument("--profile", type=float, default=0, help="after measuring, py-spy for N seconds")
    p.add_argument("--profile-dir", type=Path, default=None)
    p.add_argument("--json-out", type=Path, default=None, help="append the report as JSON")
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=0,
        help="wait up to N seconds for other processes to leave the CPUs idle first",
    )
    p.add_argument("--keep", action="store_true", help="keep temp directories (and logs)")
    args = p.parse_args(argv)
    if args.duration > 120 or args.warmup > 30 or args.profile > 60:
        p.error("keep runs bounded: --duration <= 120, --warmup <= 30, --profile <= 60")
    if args.database_url and not args.database_url.startswith("postgresql"):
        p.error("--database-url must be a postgresql+asyncpg:// URL")
    if args.database_url:
        args.db = "postgres"
    return args


def start_docshelf(
    stack: contextlib.ExitStack,
    work: Path,
    data_dir: Path,
    database_url: str | None,
    *,
    server: str,
    rate_limit: int,
    workers: int = 1,
    log_level: str = "warning",
    extra_env: dict[str, str] | None = None,
) -> Server:
    """`docshelf serve` on a free port, stopped when `stack` closes; ready when returned."""
    port = free_port()
    env = clean_env(
        DOCSHELF_SERVER=server,
        DOCSHELF_RATE_LIMIT=str(rate_limit),
        DOCSHELF_WORKERS=str(workers),
        DOCSHELF_LOG_LEVEL=log_level,
        # A fresh admin e-mail per run: the bootstrap only runs on an empty database.
        DOCSHELF_ADMIN_EMAIL="bench-admin@docshelf.local",
    )
    if database_url:
        env["DOCSHELF_DATABASE_URL"] = database_url
    env.update(extra_env or {})
    command = [str(BIN / "docshelf"), "serve", "--host", HOST, "--port", str(port)]
    docshelf = Server("docshelf", [*command, "--data-dir", str(data_dir)], env, port, work)
    stack.callback(docshelf.stop)
    docshelf.wait_ready()
    return docshelf


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    print()
    print(render(report))
    if args.json_out:
        with args.json_out.open("a") as f:
            f.write(json.dumps(report) + "\n")
    return 0 if report["docshelf"]["non_2xx"] == 0 and report["bare"]["non_2xx"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
