"""Git Sync benchmark: a real `docshelf serve` (default settings, a fresh data dir) and
Debian's git.

- clone of an N-page space (first clone: every tree built; second: the trees kept in memory);
- fetch after a one-page edit made through the API;
- a one-page push (`git push` of one commit editing one page, applied to main);
- the server processes' resident memory (VmRSS of every process of its session) before the
  clones, and their peak (VmHWM) after them.

    PYTHONPATH=src .venv/bin/python benchmarks/gitsync.py --pages 1000
    PYTHONPATH=src .venv/bin/python benchmarks/gitsync.py --pages 10000   # memory figure

The space is made through the API in batches of 50 pages (20 sections of pages), so it has
N/50 + 1 revisions, each a commit of the clone.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

GIT = "/usr/bin/git"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _git(*args: str, cwd: Path) -> float:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    started = time.perf_counter()
    done = subprocess.run([GIT, *args], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed:\n{done.stderr}")
    return took


def _rss_mb(session: int, field: str = "VmHWM:") -> float:
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getsid(int(entry.name)) != session:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith(field):
                    total += int(line.split()[1])
        except (OSError, ProcessLookupError):
            continue
    return total / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gitsync-bench-"))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.update(DOCSHELF_DATA_DIR=str(root / "data"), DOCSHELF_RATE_LIMIT="0")
    if args.database_url:
        env["DOCSHELF_DATABASE_URL"] = args.database_url
    command = [sys.executable, "-c", "from docshelf.cli.main import main; main()"]
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port)],
        env=env,
        stdout=(root / "serve.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        token = (root / "data" / "admin-token").read_text().strip()
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=300)
        org = api.get("/v1/orgs").json()["items"][0]["id"]
        space = api.post(f"/v1/orgs/{org}/spaces", json={"title": "Bench", "editMode": "live"})
        space_id = space.json()["id"]
        body = "Some text of a page, with **bold** and a [link](https://example.com).\n\n" * 20
        made = 0
        section = 0
        while made < args.pages:
            batch = min(50, args.pages - made)
            changes = [
                {
                    "operation": "insert_page",
                    "ref": "s",
                    "title": f"Section {section}",
                    "document": {"markdown": body},
                }
            ]
            changes += [
                {
                    "operation": "insert_page",
                    "into": "s",
                    "title": f"Page {section}-{i}",
                    "document": {"markdown": f"Page {i}.\n\n{body}"},
                }
                for i in range(batch - 1)
            ]
            r = api.post(f"/v1/spaces/{space_id}/content", json={"changes": changes})
            r.raise_for_status()
            made += batch
            section += 1
        pages = api.get(f"/v1/spaces/{space_id}/content").json()["pages"]
        host = base.removeprefix("http://")
        remote = f"http://bench:{token}@{host}/git/{org}/{space_id}.git"
        work = root / "work"
        work.mkdir()
        before = _rss_mb(server.pid, "VmRSS:")
        clones = [_git("clone", "-q", remote, f"c{i}", cwd=work) for i in range(3)]
        rss = _rss_mb(server.pid)
        # A one-page edit through the API, then a fetch.
        first = pages[0]["id"]
        edit = {"operation": "update_page", "page": first, "document": {"markdown": "Edited.\n"}}
        api.post(f"/v1/spaces/{space_id}/content", json={"changes": [edit]}).raise_for_status()
        fetch = _git("fetch", "-q", cwd=work / "c0")
        # A one-page push.
        _git("pull", "-q", "--ff-only", cwd=work / "c1")
        readme = work / "c1" / "section-0" / "README.md"
        readme.write_text(readme.read_text() + "\nPushed.\n")
        _git("commit", "-qam", "One page", cwd=work / "c1")
        push = _git("push", "-q", "origin", "main", cwd=work / "c1")
        files = sum(1 for p in (work / "c0").rglob("*.md"))
        print(f"pages: {made} ({files} .md files), revisions: {section + 1}")
        print(f"clone: first {clones[0]:.2f} s, then {clones[1]:.2f} s / {clones[2]:.2f} s")
        print(f"fetch after a one-page edit: {fetch:.2f} s")
        print(f"one-page push: {push:.2f} s")
        print(f"server RSS before the clones {before:.0f} MB, peak after them {rss:.0f} MB")
        print(f"median clone: {statistics.median(clones):.2f} s")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


if __name__ == "__main__":
    main()
