"""Load test of the read path: authenticated GET /v1/orgs/{id} and GET /v1/spaces/{id} on the
real `docshelf serve` (rate limiter on), against, in the same run and alternating with it:

- the floor: a bare Starlette app answering the same bytes (`bare_app.py`) under
  `uvicorn --loop uvloop --http httptools`, one process;
- the raw-driver app (`raw_app.py`): FastAPI under plain uvicorn (asyncio loop, h11) doing the
  same two look-ups (token hash -> user; the organization or space joined to the caller's
  membership) with the raw driver (`sqlite3`; asyncpg on PostgreSQL) on the same database.

Targets (the read-path issue): Docshelf >= 0.20 x the floor, >= the raw-driver app, p99 <= 50 ms
at 64 connections, on both routes and both engines.

    python benchmarks/load_reads.py --db sqlite --rounds 3 --duration 10
    python benchmarks/load_reads.py --db postgres --rounds 3 --duration 10

`--writes-per-second N` commits up to N changes a second to the measured organization
meanwhile (one PATCH at a time: the run prints how many were made).

Everything is throwaway and on 127.0.0.1 (a temporary data directory and, for PostgreSQL, a
temporary cluster); each load run is bounded in time. Needs wrk (apt-get install wrk) and
uvloop + httptools (`pip install -e .[bench]`).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from load_orgs import (
    HERE,
    HOST,
    Server,
    clean_env,
    cpu_busy_percent,
    free_port,
    git_state,
    http_get,
    log,
    postgres_cluster,
    profile,
    run_wrk,
    start_docshelf,
)

TARGET_FLOOR_RATIO = 0.20
TARGET_P99_MS = 50.0
ROUTES = ("orgs", "spaces")
TARGETS = ("floor", "raw", "docshelf")


def http_post(port: int, path: str, token: str, body: dict[str, Any]) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request(
            "POST",
            path,
            body=json.dumps(body),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class Writer:
    """Commits up to `rate` writes a second to the server while a load runs, one at a time:
    the organization's title toggled between two of the same length. Each commit changes the
    organization's answer."""

    def __init__(self, port: int, path: str, token: str, rate: float) -> None:
        self.port, self.path, self.token, self.rate = port, path, token, rate
        self.statuses: collections.Counter[int] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Writer:
        if self.rate > 0:
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        import http.client

        conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        started, n = time.monotonic(), 0
        while not self._stop.is_set():
            body = json.dumps({"title": "Bench A" if n % 2 else "Bench B"})
            conn.request("PATCH", self.path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            self.statuses[response.status] += 1
            n += 1
            self._stop.wait(max(0.0, started + n / self.rate - time.monotonic()))
        conn.close()


def measure(url: str, token: str | None, args: argparse.Namespace) -> dict[str, Any]:
    if args.warmup > 0:
        run_wrk(url, token, args.connections, args.threads, args.warmup)
    result = asdict(run_wrk(url, token, args.connections, args.threads, args.duration))
    result.pop("raw", None)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not shutil.which("wrk"):
        raise SystemExit("wrk not found: apt-get install -y wrk")
    work = Path(tempfile.mkdtemp(prefix="docshelf-reads-"))
    data_dir = work / "data"
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "db": args.db,
        "server": args.server,
        "connections": args.connections,
        "wrk_threads": args.threads,
        "duration_s": args.duration,
        "rounds": args.rounds,
        "rate_limit": args.rate_limit,
        "writes_per_second": args.writes_per_second,
        "cpus": os.cpu_count(),
        "git": git_state(),
        "background_cpu_percent": round(cpu_busy_percent(), 1),
    }
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {r: {t: [] for t in TARGETS} for r in ROUTES}
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
            server=args.server,
            rate_limit=args.rate_limit,
        )
        port = docshelf.port
        token = (data_dir / "admin-token").read_text().strip()
        status, body = http_get(port, "/v1/orgs", token)
        org_id = json.loads(body)["items"][0]["id"]
        status, body = http_post(port, f"/v1/orgs/{org_id}/spaces", token, {"title": "Bench"})
        if status != 201:
            raise SystemExit(f"creating a space answered {status}: {body[:300]!r}")
        space_id = json.loads(body)["id"]
        paths = {"orgs": f"/v1/orgs/{org_id}", "spaces": f"/v1/spaces/{space_id}"}
        payloads: dict[str, Path] = {}
        for route, path in paths.items():
            status, answer = http_get(port, path, token)
            if status != 200:
                raise SystemExit(f"GET {path} answered {status}: {answer[:300]!r}")
            payloads[route] = work / f"{route}.json"
            payloads[route].write_bytes(answer)
            report[f"{route}_response_bytes"] = len(answer)

        floor_port = free_port()
        floor = Server(
            "floor",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "bare_app:app",
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--host",
                HOST,
                "--port",
                str(floor_port),
                "--log-level",
                "warning",
            ],
            clean_env(
                BARE_PAYLOAD_FILE=str(payloads["orgs"]),
                BARE_SPACE_PAYLOAD_FILE=str(payloads["spaces"]),
                PYTHONPATH=str(HERE),
            ),
            floor_port,
            work,
        )
        stack.callback(floor.stop)
        floor.wait_ready()

        raw_port = free_port()
        raw_env = clean_env(
            RAW_ORG_PAYLOAD_FILE=str(payloads["orgs"]),
            RAW_SPACE_PAYLOAD_FILE=str(payloads["spaces"]),
            PYTHONPATH=str(HERE),
        )
        if database_url:
            raw_env["RAW_PG_DSN"] = database_url.replace("postgresql+asyncpg", "postgresql")
        else:
            raw_env["RAW_SQLITE_PATH"] = str(data_dir / "docshelf.db")
        raw = Server(
            "raw",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "raw_app:app",
                "--loop",
                "asyncio",
                "--http",
                "h11",
                "--host",
                HOST,
                "--port",
                str(raw_port),
                "--log-level",
                "warning",
            ],
            raw_env,
            raw_port,
            work,
        )
        stack.callback(raw.stop)
        raw.wait_ready()
        ports = {"floor": floor_port, "raw": raw_port, "docshelf": port}
        for target, target_port in ports.items():
            for route, path in paths.items():
                status, answer = http_get(target_port, path, token)
                if status != 200 or answer != payloads[route].read_bytes():
                    raise SystemExit(f"{target} {path}: {status}, {len(answer)} bytes differ")

        for round_no in range(1, args.rounds + 1):
            for route, path in paths.items():
                for target in TARGETS:
                    url = f"http://{HOST}:{ports[target]}{path}"
                    rate = args.writes_per_second if target == "docshelf" else 0
                    with Writer(port, paths["orgs"], token, rate) as writer:
                        result = measure(url, None if target == "floor" else token, args)
                    if rate:
                        result["writes"] = dict(writer.statuses)
                        log(f"writes during the run, by status: {dict(writer.statuses)}")
                    runs[route][target].append(result)
                    log(
                        f"round {round_no} {route:6} {target:8} {result['rps']:8.0f} req/s  "
                        f"p99 {result['p99_ms']:7.2f} ms  non-2xx {result['non_2xx']}"
                    )
        if args.profile > 0:
            url = f"http://{HOST}:{port}{paths[args.profile_route]}"
            report["profile"] = profile(docshelf, url, token, args, work)
    report["runs"] = runs
    return report


def render(report: dict[str, Any]) -> str:
    rows = [
        f"db={report['db']} docshelf server={report['server']} rate limit={report['rate_limit']}"
        f" {report['writes_per_second']} writes/s during its runs,"
        f" wrk -t{report['wrk_threads']} -c{report['connections']} {report['duration_s']}s x "
        f"{report['rounds']} alternating rounds, git {report['git']}, background CPU "
        f"{report['background_cpu_percent']}%",
        "",
        f"{'route':8} {'target':9} {'req/s (median)':>15} {'each round':>24} {'p99 ms':>8} "
        f"{'non-2xx':>8}",
    ]
    ok = True
    for route, targets in report["runs"].items():
        med = {t: statistics.median(r["rps"] for r in rs) for t, rs in targets.items()}
        for target, results in targets.items():
            each = " ".join(f"{r['rps']:.0f}" for r in results)
            p99 = max(r["p99_ms"] for r in results)
            non2xx = sum(r["non_2xx"] + r["socket_errors"] for r in results)
            ok &= non2xx == 0
            rows.append(
                f"{route:8} {target:9} {med[target]:15.0f} {each:>24} {p99:8.2f} {non2xx:8d}"
            )
        ratios = [
            d["rps"] / f["rps"] for d, f in zip(targets["docshelf"], targets["floor"], strict=True)
        ]
        p99 = max(r["p99_ms"] for r in targets["docshelf"])
        floor_ok = min(ratios) >= TARGET_FLOOR_RATIO
        raw_ok = med["docshelf"] >= med["raw"]
        rows.append(
            f"{route:8} docshelf/floor per round {' '.join(f'{r:.3f}' for r in ratios)} "
            f"(>= {TARGET_FLOOR_RATIO}: {'met' if floor_ok else 'MISSED'}); "
            f"docshelf/raw {med['docshelf'] / med['raw']:.2f} (>= 1: "
            f"{'met' if raw_ok else 'MISSED'}); worst p99 {p99:.2f} ms (<= {TARGET_P99_MS:.0f}: "
            f"{'met' if p99 <= TARGET_P99_MS else 'MISSED'})"
        )
        rows.append("")
    rows.append(f"non-2xx and socket errors: {'none' if ok else 'SOME (see above)'}")
    if report.get("profile"):
        rows += ["", "py-spy profile of the docshelf server:", report["profile"]]
    return "\n".join(rows)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--server", choices=("granian", "uvicorn"), default="granian")
    p.add_argument("--duration", type=float, default=10, help="seconds measured per run")
    p.add_argument("--warmup", type=float, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--rate-limit", type=int, default=1_000_000_000, help="on, never reached")
    p.add_argument(
        "--writes-per-second",
        type=float,
        default=0,
        help="PATCH the organization this often while Docshelf is measured (commits under load)",
    )
    p.add_argument("--database-url", default="", help="a PostgreSQL to use instead of a temp one")
    p.add_argument("--profile", type=float, default=0, help="py-spy for N seconds at the end")
    p.add_argument("--profile-route", choices=ROUTES, default="spaces")
    p.add_argument("--json-out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.duration > 60 or args.warmup > 10 or args.rounds > 5 or args.profile > 30:
        p.error("keep runs bounded: --duration <= 60, --warmup <= 10, --rounds <= 5")
    if args.database_url:
        args.db = "postgres"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.monotonic()
    report = run(args)
    report["wall_s"] = round(time.monotonic() - start)
    print()
    print(render(report))
    if args.json_out:
        with args.json_out.open("a") as f:
            f.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
