"""Domain events under faults, on a real `docshelf serve` (SQLite unless --database-url):

1. kill -9: edits run without pause while the served worker child is killed with SIGKILL (a
   separate `docshelf worker` takes over), then the whole `serve` process group is killed with
   SIGKILL mid-edit and started again on the same data;
2. the receiver down: it stops answering (connection refused) for --down seconds while edits
   go on, then comes back.

Then it waits for the deliveries and checks, from the space itself: every revision main holds
(one per edit that committed, answered or not) reached the receiver as a
`space_content_updated` event at least once, and no event names a revision that does not
exist (an edit that failed, or was cut by a kill before its commit). Edits refused by
validation (rolled back) are sent alongside and must leave no event.

    python benchmarks/events_faults.py --down 600
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from load_orgs import BIN, HOST, Server, free_port, http_get, log, start_docshelf


class _Server(ThreadingHTTPServer):
    # Deliveries come in overlapping batches: the default listen backlog of 5 refuses some.
    request_queue_size = 128


class Receiver:
    """A loopback webhook receiver that can go away and come back on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        # (spaceId, revisionId) -> deliveries received
        self.revisions: dict[tuple[str, str], int] = {}
        self.events: set[str] = set()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.up()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/hook"

    def up(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                event = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with outer.lock:
                    outer.events.add(event["eventId"])
                    if event.get("type") == "space_content_updated":
                        key = (event["spaceId"], event["revisionId"])
                        outer.revisions[key] = outer.revisions.get(key, 0) + 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _Server((HOST, self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()
        self.server = None


def call(port: int, token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        conn.close()


class Editor:
    """Edits one space without pause in a thread; a refused edit every tenth."""

    def __init__(self, port: int, token: str, space_id: str, prefix: str) -> None:
        self.port, self.token, self.space_id, self.prefix = port, token, space_id, prefix
        self.answered: list[str] = []  # revisions of edits answered 200
        self.refused = 0
        self.cut = 0  # edits whose answer was lost to a kill (committed or not)
        self.n = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.n += 1
            change: dict[str, Any] = {
                "operation": "insert_page",
                "title": f"{self.prefix} {self.n}",
                "document": {"markdown": f"Text {self.n}"},
            }
            if self.n % 10 == 0:
                change["parent"] = "no-such-page"  # refused: rolled back
            try:
                status, body = call(
                    self.port,
                    self.token,
                    "POST",
                    f"/v1/spaces/{self.space_id}/content",
                    {"changes": [change]},
                )
            except OSError:
                self.cut += 1
                time.sleep(0.2)
                continue
            if status == 200:
                self.answered.append(body["revision"])
            elif 400 <= status < 500:
                self.refused += 1
            else:
                self.cut += 1
                time.sleep(0.2)


def children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def worker_child(server: Server) -> int:
    """The served job runner: the serve process's child named `docshelf-jobs`."""
    for pid in children(server.proc.pid):
        if Path(f"/proc/{pid}/comm").read_text().strip() == "docshelf-jobs":
            return pid
    raise RuntimeError("no worker child found")


def revisions_of_main(port: int, token: str, space_id: str) -> list[str]:
    """Main's revisions, from the head back through first parents."""
    status, space = call(port, token, "GET", f"/v1/spaces/{space_id}")
    assert status == 200, space
    out: list[str] = []
    rev: str | None = space["revision"]
    while rev:
        status, body = call(port, token, "GET", f"/v1/spaces/{space_id}/revisions/{rev}")
        assert status == 200, body
        out.append(rev)
        parents = body.get("parents") or []
        rev = parents[0] if parents else None
    return out


def wait_for(check: Any, seconds: float, what: str) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > seconds:
            raise SystemExit(f"gave up waiting for {what} after {seconds:.0f} s")
        time.sleep(1)
    return time.monotonic() - started


def verify(port: int, token: str, space_id: str, receiver: Receiver, editor: Editor) -> str:
    revisions = revisions_of_main(port, token, space_id)
    edits = set(revisions[:-1])  # the oldest is the space's empty first revision
    with receiver.lock:
        got = {rev: n for (space, rev), n in receiver.revisions.items() if space == space_id}
    missing = edits - set(got)
    phantom = set(got) - edits
    assert not missing, f"{len(missing)} committed revisions never delivered"
    assert not phantom, f"{len(phantom)} events for revisions main does not hold"
    assert set(editor.answered) <= edits
    twice = sum(1 for r in edits if got[r] > 1)
    return (
        f"{len(edits)} edits committed ({len(editor.answered)} answered, {editor.cut} cut by a"
        f" fault, {editor.refused} refused and rolled back): every committed one delivered,"
        f" {twice} of them more than once, none for a revision that does not exist"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--database-url", default="")
    p.add_argument("--down", type=float, default=600.0, help="seconds the receiver is down")
    p.add_argument("--edit-seconds", type=float, default=20.0)
    args = p.parse_args(argv)
    receiver = Receiver()
    with contextlib.ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="docshelf-events-faults-"))
        data_dir = work / "data"
        env = {"DOCSHELF_FETCH_ALLOWED_HOSTS": HOST}

        def serve() -> Server:
            return start_docshelf(
                stack,
                work,
                data_dir,
                args.database_url or None,
                server="granian",
                rate_limit=0,
                extra_env=env,
            )

        server = serve()
        port = server.port
        token = (data_dir / "admin-token").read_text().strip()
        _, body = http_get(port, "/v1/orgs", token)
        org_id = json.loads(body)["items"][0]["id"]
        status, hook = call(
            port, token, "POST", f"/v1/orgs/{org_id}/webhooks", {"url": receiver.url}
        )
        assert status == 201, hook

        # 1. kill -9 of the worker, then of the server.
        status, space = call(
            port, token, "POST", f"/v1/orgs/{org_id}/spaces", {"title": "Kill", "editMode": "live"}
        )
        assert status == 201, space
        editor = Editor(port, token, space["id"], "Kill")
        editor.start()
        time.sleep(args.edit_seconds / 2)
        victim = worker_child(server)
        os.kill(victim, signal.SIGKILL)
        log(f"killed the served worker {victim} with SIGKILL")
        replacement = subprocess.Popen(
            [str(BIN / "docshelf"), "--data-dir", str(data_dir), "worker"],
            env={**server.env, **env},
            stdout=(work / "worker.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stack.callback(lambda: os.killpg(replacement.pid, signal.SIGTERM))
        time.sleep(args.edit_seconds / 2)
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        log("killed the server's process group with SIGKILL")
        server = serve()
        editor.port = server.port
        time.sleep(args.edit_seconds / 2)
        editor.stop()
        final = {(space["id"], r) for r in revisions_of_main(server.port, token, space["id"])[:-1]}
        # The killed worker's leased jobs come back after their lease (5 minutes).
        took = wait_for(lambda: final <= set(receiver.revisions), 900, "deliveries after kills")
        log(f"kills: all delivered {took:.0f} s after the last edit")
        print("kill -9:", verify(server.port, token, space["id"], receiver, editor))

        # 2. the receiver down for a while.
        status, space = call(
            server.port,
            token,
            "POST",
            f"/v1/orgs/{org_id}/spaces",
            {"title": "Down", "editMode": "live"},
        )
        assert status == 201, space
        receiver.down()
        editor = Editor(server.port, token, space["id"], "Down")
        editor.start()
        time.sleep(args.edit_seconds)
        editor.stop()
        log(f"receiver down; {len(editor.answered)} edits made; waiting {args.down:.0f} s")
        time.sleep(max(0.0, args.down - args.edit_seconds))
        receiver.up()
        final = {(space["id"], r) for r in revisions_of_main(server.port, token, space["id"])[:-1]}
        # The next attempt after a long outage is up to the retry schedule's step (10 or 30
        # minutes, with jitter).
        took = wait_for(lambda: final <= set(receiver.revisions), 3 * 3600, "deliveries")
        log(f"receiver back: all delivered {took:.0f} s after it came back")
        print(
            f"receiver down {args.down:.0f} s:",
            verify(server.port, token, space["id"], receiver, editor),
        )
        print(f"  delivered within {took:.0f} s of the receiver coming back")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
