"""The console script, run as a user runs it, on the database the suite runs on."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests.helpers import DOCSHELF, cli_env, run_cli


async def test_admin_commands(
    db: AsyncEngine, settings: Settings, tmp_path: Path, client: httpx.AsyncClient
) -> None:
    env = cli_env(settings, tmp_path)
    assert run_cli(env, "db", "upgrade").stdout.strip().endswith("Database is up to date.")
    created = run_cli(env, "user", "create", "--email", "Ada@Example.com", "--name", "Ada")
    assert created.returncode == 0, created.stderr
    user_id = created.stdout.strip()
    dup = run_cli(env, "user", "create", "--email", "ada@example.com")
    assert dup.returncode == 1 and "already exists" in dup.stderr
    org = run_cli(env, "org", "create", "--title", "Ada's Docs", "--owner", "ada@example.com")
    assert org.returncode == 0, org.stderr
    org_id = org.stdout.strip()
    missing = run_cli(env, "org", "create", "--title", "Nope", "--owner", "ghost@example.com")
    assert missing.returncode == 1 and "No user with e-mail ghost@example.com" in missing.stderr
    tok = run_cli(env, "token", "create", "--user", "ada@example.com")
    assert tok.returncode == 0, tok.stderr
    token = tok.stdout.strip().splitlines()[-1]
    assert token.startswith("dsk_")

    h = {"Authorization": f"Bearer {token}"}
    r = await client.get("/v1/orgs", headers=h)
    assert [(o["id"], o["title"], o["permissions"]["admin"]) for o in r.json()["items"]] == [
        (org_id, "Ada's Docs", True)
    ]
    assert (await client.get("/v1/user", headers=h)).json()["id"] == user_id

    revoked = run_cli(env, "token", "revoke", token)
    assert revoked.returncode == 0, revoked.stderr
    assert (await client.get("/v1/orgs", headers=h)).status_code == 401
    again = run_cli(env, "token", "revoke", token)
    assert again.returncode == 1 and "No active API token matches" in again.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DOCSHELF, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _spawn_alone(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """In a session of its own, so that killing its group ends every process it started."""
    return subprocess.Popen(
        [DOCSHELF, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _serve_until_ready(env: dict[str, str], port: int) -> tuple[subprocess.Popen[str], str]:
    proc = _spawn(env, "serve", "--port", str(port))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/", timeout=1)
            return proc, ""
        except httpx.TransportError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"server did not start: {proc.communicate()[0]}")


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out


async def test_serve_bootstraps_once(db: AsyncEngine, settings: Settings, tmp_path: Path) -> None:
    port = _free_port()
    env = cli_env(settings, tmp_path, DOCSHELF_PORT=str(port))
    proc, _ = _serve_until_ready(env, port)
    token_file = tmp_path / "admin-token"
    try:
        token = token_file.read_text().strip()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        async with httpx.AsyncClient() as http:
            r = await http.get(
                f"http://127.0.0.1:{port}/v1/orgs", headers={"Authorization": f"Bearer {token}"}
            )
        assert r.status_code == 200
        assert [o["title"] for o in r.json()["items"]] == ["Docshelf"]
        assert r.json()["items"][0]["urls"]["location"].startswith(
            f"http://127.0.0.1:{port}/v1/orgs/"
        )
    finally:
        first_output = _stop(proc)
    assert (
        f'curl -H "Authorization: Bearer $(cat {token_file})" http://127.0.0.1:{port}/v1/orgs'
        in first_output
    )

    proc, _ = _serve_until_ready(env, port)
    second_output = _stop(proc)
    assert "First start" not in second_output
    assert token_file.read_text().strip() == token


async def test_worker_process_runs_queued_jobs(
    db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    import asyncio
    from datetime import UTC, datetime, timedelta

    import sqlalchemy as sa

    from docshelf.kit.db import unit_of_work
    from docshelf.models import jobs
    from docshelf.worker.queue import enqueue

    # The worker runs on real time, not the test's frozen clock: a job finished 8 days ago.
    stale = datetime.now(UTC) - timedelta(days=8)
    async with db.begin() as conn:
        await conn.execute(
            sa.insert(jobs).values(
                id="stale",
                kind="test.old",
                payload={},
                status="done",
                run_at=stale,
                created_at=stale,
                finished_at=stale,
            )
        )
    # Enqueued as a request would; the worker picks it up (run_at is the frozen past).
    async with unit_of_work(db) as conn:
        await enqueue(conn, "maintenance.purge", {})
    proc = _spawn(cli_env(settings, tmp_path), "worker")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            async with db.connect() as conn:
                left = (
                    await conn.execute(
                        sa.select(sa.func.count()).select_from(jobs).where(jobs.c.id == "stale")
                    )
                ).scalar_one()
                done = (
                    (
                        await conn.execute(
                            sa.select(jobs.c.status).where(jobs.c.kind == "maintenance.purge")
                        )
                    )
                    .scalars()
                    .all()
                )
            if left == 0 and "done" in done:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("the worker did not run the purge job")
    finally:
        out = _stop(proc)
    assert proc.returncode == 0, out
    assert "job runner" in out and "stopped" in out


async def test_serve_keeps_the_data_directory_private(
    db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    port = _free_port()
    data = tmp_path / "data"
    env = cli_env(settings, data, DOCSHELF_PORT=str(port))
    del env["DOCSHELF_DATABASE_URL"]  # SQLite inside the data directory, whatever the suite uses
    db_file = data / "docshelf.db"
    private = [data, db_file, Path(f"{db_file}-wal"), Path(f"{db_file}-shm"), data / "blobs"]
    proc, _ = _serve_until_ready(env, port)
    try:
        token = (data / "admin-token").read_text().strip()
        # A request through the server's own connections: its WAL files are open meanwhile.
        async with httpx.AsyncClient() as http:
            r = await http.get(
                f"http://127.0.0.1:{port}/v1/orgs", headers={"Authorization": f"Bearer {token}"}
            )
        assert r.status_code == 200
        modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in private}
    finally:
        out = _stop(proc)
    assert modes == {
        str(data): "0o700",
        str(db_file): "0o600",
        f"{db_file}-wal": "0o600",
        f"{db_file}-shm": "0o600",
        str(data / "blobs"): "0o700",
    }
    assert "readable by other users" not in out

    # Opened up by hand: left so, but every start says which paths and how to close them.
    data.chmod(0o755)
    db_file.chmod(0o644)
    proc, _ = _serve_until_ready(env, port)
    out = _stop(proc)
    assert f"{data} is readable by other users (mode 0755); run: chmod 700 {data}" in out
    assert f"{db_file} is readable by other users (mode 0644); run: chmod 600 {db_file}" in out
    assert stat.S_IMODE(data.stat().st_mode) == 0o755


async def test_serve_refuses_a_port_already_in_use(
    db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    # A listener as granian makes one (SO_REUSEPORT): a second server binding the same way
    # would be let in and share the port's connections without a word.
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = cli_env(settings, tmp_path, DOCSHELF_SERVER="granian")
        proc = _spawn_alone(env, "serve", "--port", str(port))
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            raise AssertionError(f"serve shared the port instead of refusing it: {out}") from None
    assert proc.returncode == 1
    assert out == (
        f"Error: Port {port} on 127.0.0.1 is already in use (another Docshelf, or another "
        "program, is listening there). Stop it, or choose another port with --port or "
        "DOCSHELF_PORT.\n"
    )
    # Nothing was done first: no migration, no first-start admin.
    assert not (tmp_path / "admin-token").exists()
