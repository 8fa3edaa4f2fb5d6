"""Latency of one write at a time: `PATCH /v1/orgs/{id}` (the title toggled) on a fresh
`docshelf serve` (SQLite unless --database-url), one keep-alive connection, nothing else
running. Prints the median and p95 in ms after a warm-up. Writes under a read load are in
`load_reads.py --writes-per-second`.

    python benchmarks/write_latency.py --requests 400
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import statistics
import tempfile
import time
from pathlib import Path

from load_orgs import HOST, http_get, start_docshelf


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--database-url", default="")
    args = p.parse_args(argv)
    with contextlib.ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="docshelf-writes-"))
        data_dir = work / "data"
        server = start_docshelf(
            stack, work, data_dir, args.database_url or None, server="granian", rate_limit=0
        )
        token = (data_dir / "admin-token").read_text().strip()
        _, body = http_get(server.port, "/v1/orgs", token)
        org_id = json.loads(body)["items"][0]["id"]
        conn = http.client.HTTPConnection(HOST, server.port, timeout=30)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        took = []
        for i in range(args.warmup + args.requests):
            started = time.perf_counter()
            title = json.dumps({"title": f"Title {i % 2}"})
            conn.request("PATCH", f"/v1/orgs/{org_id}", body=title, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"PATCH answered {response.status}")
            took.append((time.perf_counter() - started) * 1000)
        measured = sorted(took[args.warmup :])
        p95 = measured[int(len(measured) * 0.95)]
        print(
            f"{args.requests} PATCHes one at a time: median {statistics.median(measured):.2f} ms,"
            f" p95 {p95:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
