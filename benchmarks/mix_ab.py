"""Two (or more) builds of Docshelf under the mix of `mix.py`, their rounds interleaved, so that
a change is measured against what it changed on a machine whose speed drifts (the CPU the same
requests cost moved by up to 30 % within half an hour here: benchmarks/RESULTS.md).

Each variant is a `docshelf serve` with its own data directory (and its own throwaway
PostgreSQL cluster with `--db postgres`), seeded with the same world. Each round runs wrk's
mix with 2 writes a second alongside; the variants take turns, in alternating order. Printed
per round and as medians: req/s, p99, the API process's main-thread CPU per request, and the
writes' p50 and p95 over all rounds.

    # the working tree against a commit, on PostgreSQL
    git worktree add /tmp/before 49e7c9a
    PYTHONPATH=src .venv/bin/python benchmarks/mix_ab.py --db postgres --rounds 10 \\
        new=src old=/tmp/before/src
    # one build under two settings
    PYTHONPATH=src .venv/bin/python benchmarks/mix_ab.py --db postgres \\
        in4=src in8=src,DOCSHELF_READS_IN_FLIGHT=8

    # SQLite against PostgreSQL at the same moments (goal 1's ratio)
    PYTHONPATH=src .venv/bin/python benchmarks/mix_ab.py --rounds 10 \\
        sqlite=src,db=sqlite postgres=src,db=postgres

A variant is NAME=PYTHONPATH[,db=sqlite|postgres][,VARIABLE=VALUE...]: the server runs with
that PYTHONPATH (its `docshelf` package comes from there) and those environment variables, on
its own database (`--db` unless `db=` says otherwise).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mix
from docshelf.config import Settings


def _variant(text: str) -> tuple[str, str, dict[str, str]]:
    name, _, rest = text.partition("=")
    path, *pairs = rest.split(",")
    if not name or not path or any("=" not in pair for pair in pairs):
        raise SystemExit(
            f"a variant is NAME=PYTHONPATH[,db=sqlite|postgres][,VARIABLE=VALUE...], not {text!r}"
        )
    env = dict(pair.split("=", 1) for pair in pairs)
    if env.get("db", "sqlite") not in ("sqlite", "postgres"):
        raise SystemExit(f"db= is sqlite or postgres, not {env['db']!r}")
    return name, str(Path(path).resolve()), env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=float, default=12.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--writes-per-second", type=float, default=mix.WRITES_PER_SECOND)
    parser.add_argument("variants", nargs="+", type=_variant)
    args = parser.parse_args()
    os.chdir(Path(__file__).resolve().parent.parent)

    with contextlib.ExitStack() as stack:
        servers: list[dict[str, Any]] = []
        for name, path, env in args.variants:
            work = Path(tempfile.mkdtemp(prefix=f"mix-ab-{name}-"))
            stack.callback(mix.shutil.rmtree, work, True)
            db = None
            if env.pop("db", args.db) == "postgres":
                db = stack.enter_context(mix.postgres_cluster(mix.free_port(), False))
            server = mix.start_docshelf(
                stack,
                work,
                work / "data",
                db,
                server=Settings().server,
                rate_limit=0,
                extra_env={"DOCSHELF_ANONYMOUS_RATE_LIMIT": "0", "PYTHONPATH": path, **env},
            )
            settings = Settings(data_dir=work / "data")
            if db:
                settings = Settings(data_dir=work / "data", database_url=db)
            world = mix.seed(server.port, settings)
            script = work / "mix.lua"
            mix.wrk_script(mix.capture(server.port, world), script)
            mix.run_wrk(server.port, script, args.connections, 4)  # warm-up
            servers.append(
                {
                    "name": name,
                    "server": server,
                    "pid": mix.api_pid(server),
                    "world": world,
                    "script": script,
                    "rounds": [],
                    "writes": [],
                }
            )

        for r in range(args.rounds):
            for v in servers if r % 2 == 0 else servers[::-1]:
                pid = v["pid"]
                main0, all0 = mix.cpu_ticks(pid, pid), mix.cpu_ticks(pid)
                with mix.Writer(v["server"].port, v["world"], args.writes_per_second) as writer:
                    out = mix.run_wrk(
                        v["server"].port, v["script"], args.connections, args.duration
                    )
                main1, all1 = mix.cpu_ticks(pid, pid), mix.cpu_ticks(pid)
                n = max(out["requests"], 1)
                row = {
                    "rps": out["rps"],
                    "p99_ms": out["p99_ms"],
                    "main_ms": (main1 - main0) * mix.TICK_MS / n,
                    "process_ms": (all1 - all0) * mix.TICK_MS / n,
                }
                v["rounds"].append(row)
                v["writes"] += [t for t, status in writer.done if 200 <= status < 300]
                w = writer.summary()
                print(
                    f"{v['name']:>8} {row['rps']:7.0f} req/s  p99 {row['p99_ms']:5.0f} ms  "
                    f"main thread {row['main_ms']:.3f} ms/req  process {row['process_ms']:.3f}"
                    f"  writes {w['made']}/{w['asked']} p95 {w['p95_ms']} ms",
                    flush=True,
                )

    for v in servers:
        med = {k: statistics.median(row[k] for row in v["rounds"]) for k in v["rounds"][0]}
        writes = sorted(v["writes"])
        p50 = statistics.median(writes) * 1000 if writes else float("nan")
        p95 = writes[int(len(writes) * 0.95)] * 1000 if writes else float("nan")
        print(
            f"median {v['name']:>8} {med['rps']:7.0f} req/s  p99 {med['p99_ms']:5.0f} ms  "
            f"main thread {med['main_ms']:.3f} ms/req  process {med['process_ms']:.3f}  "
            f"writes n {len(writes)} p50 {p50:.1f} p95 {p95:.1f} ms "
            f"max {writes[-1] * 1000 if writes else float('nan'):.0f} ms"
        )


if __name__ == "__main__":
    main()
