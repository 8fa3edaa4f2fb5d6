"""Events and webhooks on a real `docshelf serve` (its worker child delivering), SQLite unless
--database-url:

1. an edit's latency (a live page insert, one at a time) with no webhook, then with three
   webhooks subscribed to every event, all pointing at a loopback receiver;
2. `--events` edits as fast as one client sends them, one webhook: the time from each edit's
   answer (its commit is before it) to the receiver's receipt of its `space_content_updated`,
   p50 and p99.

    python benchmarks/events.py --edits 300 --events 1000
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from load_orgs import HOST, http_get, start_docshelf


class _Server(ThreadingHTTPServer):
    # Deliveries come in overlapping batches: the default listen backlog of 5 refuses some.
    request_queue_size = 128


class Receiver:
    """Loopback HTTP receiver: the monotonic time each revision's event arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.count = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                now = time.monotonic()
                event = json.loads(body)
                with lock:
                    outer.count += 1
                    if event.get("type") == "space_content_updated":
                        outer.arrived.setdefault(event["revisionId"], now)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _Server((HOST, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://{HOST}:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Client:
    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body)
        self.conn.request(method, path, body=data, headers=self.headers)
        response = self.conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None


def edit(client: Client, space_id: str, n: int) -> tuple[float, str, float]:
    """(latency ms, new revision, monotonic time of the answer)."""
    started = time.perf_counter()
    status, body = client.call(
        "POST",
        f"/v1/spaces/{space_id}/content",
        {
            "changes": [
                {
                    "operation": "insert_page",
                    "title": f"Page {n}",
                    "document": {"markdown": f"Text {n}"},
                }
            ]
        },
    )
    answered = time.monotonic()
    if status != 200:
        raise SystemExit(f"edit answered {status}: {body}")
    return (time.perf_counter() - started) * 1000, body["revision"], answered


def new_space(client: Client, org_id: str, title: str) -> str:
    status, body = client.call(
        "POST", f"/v1/orgs/{org_id}/spaces", {"title": title, "editMode": "live"}
    )
    if status != 201:
        raise SystemExit(f"space answered {status}: {body}")
    return str(body["id"])


def latencies(client: Client, space_id: str, count: int, warmup: int) -> list[float]:
    took = [edit(client, space_id, n)[0] for n in range(warmup + count)]
    return sorted(took[warmup:])


def summary(values: list[float]) -> str:
    p95 = values[int(len(values) * 0.95)]
    return f"median {statistics.median(values):.2f} ms, p95 {p95:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edits", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--events", type=int, default=1000)
    p.add_argument("--database-url", default="")
    args = p.parse_args(argv)
    receiver = Receiver()
    with contextlib.ExitStack() as stack:
        stack.callback(receiver.close)
        work = Path(tempfile.mkdtemp(prefix="docshelf-events-"))
        data_dir = work / "data"
        server = start_docshelf(
            stack,
            work,
            data_dir,
            args.database_url or None,
            server="granian",
            rate_limit=0,
            extra_env={"DOCSHELF_FETCH_ALLOWED_HOSTS": HOST},
        )
        token = (data_dir / "admin-token").read_text().strip()
        _, body = http_get(server.port, "/v1/orgs", token)
        org_id = json.loads(body)["items"][0]["id"]
        client = Client(server.port, token)

        bare = latencies(client, new_space(client, org_id, "Bare"), args.edits, args.warmup)
        print(f"edits, no webhook:     {summary(bare)}")
        for _ in range(3):
            status, _ = client.call("POST", f"/v1/orgs/{org_id}/webhooks", {"url": receiver.url})
            assert status == 201
        hooked = latencies(client, new_space(client, org_id, "Hooked"), args.edits, args.warmup)
        print(f"edits, three webhooks: {summary(hooked)}")
        ratio = statistics.median(hooked) / statistics.median(bare)
        print(f"median ratio {ratio:.3f}")

        # Part 2: one webhook, the three above deleted once their deliveries are done.
        deadline = time.monotonic() + 300
        while receiver.count < 3 * (args.edits + args.warmup + 1) and time.monotonic() < deadline:
            time.sleep(0.5)
        _, hooks = client.call("GET", f"/v1/orgs/{org_id}/webhooks")
        for hook in hooks["items"][1:]:
            client.call("DELETE", f"/v1/orgs/{org_id}/webhooks/{hook['id']}")
        space_id = new_space(client, org_id, "Stream")
        committed: dict[str, float] = {}
        started = time.monotonic()
        for n in range(args.events):
            _, revision, answered = edit(client, space_id, n)
            committed[revision] = answered
        sent = time.monotonic() - started
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not set(committed) <= set(receiver.arrived):
            time.sleep(0.2)
        missing = set(committed) - set(receiver.arrived)
        delays = sorted(
            (receiver.arrived[r] - t) * 1000 for r, t in committed.items() if r in receiver.arrived
        )
        p99 = delays[int(len(delays) * 0.99)]
        print(
            f"{args.events} events sent in {sent:.1f} s; commit to receipt: "
            f"p50 {statistics.median(delays):.0f} ms, p99 {p99:.0f} ms, max {delays[-1]:.0f} ms;"
            f" {len(missing)} not received"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
