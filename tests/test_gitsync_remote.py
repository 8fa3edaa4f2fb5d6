"""Git Sync with an outside repository: a space linked to a branch of a git server started
here on loopback (Debian's `git http-backend` behind a small WSGI server, HTTP basic
required), pushed to by the sync job after each change and pulled from on demand; Debian's
git plays the writer on the other side."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.gitsync import remote, repository
from docshelf.kit.db import unit_of_work
from docshelf.worker.queue import make_due
from docshelf.worker.registry import JobEnv, schedule_key
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import FROZEN
from tests.gitcli import GIT
from tests.gitcli import git_text as git
from tests.helpers import error

USER, TOKEN = "writer", "s3cret-token"
WHEN = FROZEN.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class GitServer:
    root: Path
    url: str  # the server's base: a repository is <url>/<name>.git
    requests: list[str]
    # Called with each request's "METHOD /path?query" before it is answered.
    before: list[Callable[[str], None]]

    def bare(self, name: str) -> Path:
        path = self.root / f"{name}.git"
        git("init", "--bare", "--initial-branch=main", str(path), cwd=self.root)
        return path

    def head(self, name: str, branch: str = "main") -> str:
        return git("rev-parse", f"refs/heads/{branch}", cwd=self.root / f"{name}.git")


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def _backend(root: Path, requests: list[str], before: list[Callable[[str], None]]) -> Any:
    """git http-backend as a WSGI app (CGI by hand), behind HTTP basic USER:TOKEN."""
    expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()

    def app(environ: dict[str, Any], start: Any) -> Iterable[bytes]:
        requests.append(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}")
        for call in before:
            call(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}?{environ['QUERY_STRING']}")
        if environ["PATH_INFO"].startswith("/moved/"):
            # A repository that moved: git hosts answer a redirect (GitHub after a rename).
            query = environ.get("QUERY_STRING")
            target = environ["PATH_INFO"].removeprefix("/moved") + (f"?{query}" if query else "")
            start("301 Moved Permanently", [("Location", target)])
            return [b""]
        if environ.get("HTTP_AUTHORIZATION") != expected:
            start("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"')])
            return [b"credentials, please\n"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        cgi = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": USER,
            "REMOTE_ADDR": "127.0.0.1",
            "REQUEST_METHOD": environ["REQUEST_METHOD"],
            "PATH_INFO": environ["PATH_INFO"],
            "QUERY_STRING": environ.get("QUERY_STRING", ""),
            "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(root),
        }
        if environ.get("HTTP_CONTENT_ENCODING"):
            cgi["HTTP_CONTENT_ENCODING"] = environ["HTTP_CONTENT_ENCODING"]
        if environ.get("HTTP_GIT_PROTOCOL"):
            cgi["GIT_PROTOCOL"] = environ["HTTP_GIT_PROTOCOL"]
        done = subprocess.run(
            [GIT, "http-backend"], input=body, env=cgi, capture_output=True, timeout=60
        )
        head, _, out = done.stdout.partition(b"\r\n\r\n")
        status = "200 OK"
        headers = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = value.strip()
            elif name:
                headers.append((name.strip(), value.strip()))
        start(status, headers)
        return [out]

    return app


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitServer]:
    root = tmp_path / "served"
    root.mkdir()
    requests: list[str] = []
    before: list[Callable[[str], None]] = []
    server = make_server(
        "127.0.0.1",
        0,
        _backend(root, requests, before),
        server_class=WSGIServer,
        handler_class=_Quiet,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield GitServer(root, f"http://127.0.0.1:{server.server_port}", requests, before)
    server.shutdown()
    server.server_close()


@pytest.fixture
def loopback(app: FastAPI, settings: Settings) -> Iterator[Settings]:
    """Remotes on loopback are allowed, to the API's check and to the jobs (the `job_env`
    fixture hands the jobs these settings)."""
    allowed = settings.model_copy(update={"fetch_allowed_hosts": "127.0.0.1"})
    app.state.settings = allowed
    yield allowed
    app.state.settings = settings


async def run_jobs(db: AsyncEngine, job_env: JobEnv) -> None:
    await JobRunner(db, job_env).drain()


async def _space(client: httpx.AsyncClient, db: AsyncEngine) -> tuple[factories.Who, str, str]:
    owner = await factories.user(db)
    org = await factories.organization(db, owner=owner)
    space = await factories.api_space(client, org, owner, title="Handbook", editMode="live")
    change = {
        "operation": "insert_page",
        "ref": "g",
        "title": "Guide",
        "document": {"markdown": "Read me."},
    }
    r = await client.post(
        f"/v1/spaces/{space['id']}/content", json={"changes": [change]}, headers=owner.headers
    )
    assert r.status_code == 200, r.text
    return owner, space["id"], r.json()["changes"][0]["page"]["id"]


def _status(space_id: str, url: str, **given: Any) -> dict[str, Any]:
    return {
        "object": "git-sync",
        "space": space_id,
        "url": url,
        "branch": "main",
        "hasCredentials": True,
        "remoteCommit": None,
        "lastPushAt": None,
        "lastPullAt": None,
        "lastSyncAt": None,
        "error": None,
        "errorAt": None,
        "createdAt": WHEN,
        "updatedAt": WHEN,
        **given,
    }


async def _docshelf_main(client: httpx.AsyncClient, space_id: str, who: factories.Who) -> str:
    r = await client.get(f"/v1/spaces/{space_id}", headers=who.headers)
    org = r.json()["organization"]
    r = await client.get(
        f"/git/{org}/{space_id}.git/info/refs",
        params={"service": "git-upload-pack"},
        auth=("x", who.token),
    )
    found = re.search(rb"([0-9a-f]{40}) refs/heads/main", r.content)
    assert found is not None, r.content
    return found.group(1).decode()


async def _markdown(
    client: httpx.AsyncClient, space_id: str, page_id: str, who: factories.Who
) -> str:
    r = await client.get(
        f"/v1/spaces/{space_id}/content/page/{page_id}",
        params={"format": "markdown"},
        headers=who.headers,
    )
    assert r.status_code == 200, r.text
    return str(r.json()["markdown"])


def _clone(git_server: GitServer, tmp_path: Path) -> Path:
    """A writer's clone of the remote."""
    work = tmp_path / "work"
    git("clone", str(git_server.root / "handbook.git"), str(work), cwd=tmp_path)
    return work


def _commit(work: Path, message: str, *, push: bool = True) -> str:
    """Everything in the writer's clone committed (and pushed to the remote): the commit."""
    git("add", "-A", cwd=work)
    git("commit", "-m", message, cwd=work)
    if push:
        git("push", "origin", "main", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


async def _pull(client: httpx.AsyncClient, space_id: str, who: factories.Who) -> None:
    r = await client.post(f"/v1/spaces/{space_id}/git-sync/pull", headers=who.headers)
    assert r.status_code == 202, r.text


async def _edit(
    client: httpx.AsyncClient, space_id: str, page_id: str, who: factories.Who, markdown: str
) -> None:
    """Main's page `page_id` edited through the API (which queues the link's sync)."""
    edit = {"operation": "update_page", "page": page_id, "document": {"markdown": markdown}}
    r = await client.post(
        f"/v1/spaces/{space_id}/content", json={"changes": [edit]}, headers=who.headers
    )
    assert r.status_code == 200, r.text


async def _linked(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    space_id: str,
    owner: factories.Who,
    at: str = "",
) -> str:
    """The space linked to a new empty repository `handbook` (at `at` on the server), and the
    first sync run; the remote's URL."""
    git_server.bare("handbook")
    url = f"{git_server.url}/{at}handbook.git"
    link = {"url": url, "username": USER, "token": TOKEN}
    r = await client.put(f"/v1/spaces/{space_id}/git-sync", json=link, headers=owner.headers)
    assert r.status_code == 200, r.text
    await run_jobs(db, job_env)
    return url


async def test_push_after_each_change_and_pull_on_demand(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
    tmp_path: Path,
) -> None:
    owner, space_id, page_id = await _space(client, db)
    git_server.bare("handbook")
    url = f"{git_server.url}/handbook.git"
    link = {"url": url, "branch": "main", "username": USER, "token": TOKEN}
    r = await client.put(f"/v1/spaces/{space_id}/git-sync", json=link, headers=owner.headers)
    hook = r.json()["webhookUrl"]
    assert re.fullmatch(rf"http://testserver/git/hooks/{space_id}/[\w-]{{43}}", hook)
    assert (r.status_code, r.json()) == (200, {**_status(space_id, url), "webhookUrl": hook})
    assert TOKEN not in r.text

    # The link's first sync pushes main to the empty remote: a clone shows the space.
    await run_jobs(db, job_env)
    main = await _docshelf_main(client, space_id, owner)
    assert git_server.head("handbook") == main
    pushed = _status(space_id, url, remoteCommit=main, lastPushAt=WHEN, lastSyncAt=WHEN)
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert (r.status_code, r.json()) == (200, pushed)
    work = _clone(git_server, tmp_path)
    assert (
        work / "README.md"
    ).read_text() == f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nRead me."

    # An edit through the API: its sync pushes it, a fast-forward of the remote.
    await _edit(client, space_id, page_id, owner, "Read it all.")
    await run_jobs(db, job_env)
    main = await _docshelf_main(client, space_id, owner)
    assert git_server.head("handbook") == main
    git("pull", "--ff-only", cwd=work)
    assert (work / "README.md").read_text() == (
        f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nRead it all."
    )

    # A writer pushes to the remote; a pull (a webhook's, a button's) brings it in.
    (work / "README.md").write_text(
        f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nWritten in git.\n"
    )
    theirs = _commit(work, "Write in git")
    # (the git host's webhook: no token, the link's secret in the URL; a wrong one is nothing)
    r = await client.post(hook.removesuffix(hook[-5:]) + "xxxxx", json={"ref": "refs/heads/main"})
    assert (r.status_code, r.text) == (404, "Not found\n")
    assert await _markdown(client, space_id, page_id, owner) == "Read it all."
    r = await client.post(hook, json={"ref": "refs/heads/main"})
    assert (r.status_code, r.text) == (202, "A sync is queued\n")
    await run_jobs(db, job_env)
    assert await _markdown(client, space_id, page_id, owner) == "Written in git.\n"
    # The space's main is the writer's very commit: the remote and the space agree.
    assert await _docshelf_main(client, space_id, owner) == theirs
    assert git_server.head("handbook") == theirs
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id, url, remoteCommit=theirs, lastPushAt=WHEN, lastPullAt=WHEN, lastSyncAt=WHEN
    )

    # Both sides move: the sync refuses, records why, and neither side changes.
    await _edit(client, space_id, page_id, owner, "Docshelf's.")
    (work / "README.md").write_text(f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nGit's.\n")
    theirs_again = _commit(work, "Write in git again")
    await run_jobs(db, job_env)
    assert await _markdown(client, space_id, page_id, owner) == "Docshelf's."
    assert git_server.head("handbook") == theirs_again
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id,
        url,
        remoteCommit=theirs,
        lastPushAt=WHEN,
        lastPullAt=WHEN,
        lastSyncAt=WHEN,
        error=(
            "the remote branch main and the space have both changed since they were last in"
            " step: bring one up to date with the other (nothing was changed)"
        ),
        errorAt=WHEN,
    )


async def test_bad_credentials_are_a_clear_status(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
) -> None:
    owner, space_id, _ = await _space(client, db)
    git_server.bare("handbook")
    url = f"{git_server.url}/handbook.git"
    link = {"url": url, "username": USER, "token": "not-the-token"}
    r = await client.put(f"/v1/spaces/{space_id}/git-sync", json=link, headers=owner.headers)
    assert r.status_code == 200, r.text
    await run_jobs(db, job_env)
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id,
        url,
        error="the remote refused the credentials (HTTP 401): check the username and token",
        errorAt=WHEN,
    )
    assert "not-the-token" not in r.text
    # Nothing reached the repository.
    assert git("for-each-ref", cwd=git_server.root / "handbook.git") == ""

    # No repository there: said as much.
    link = {"url": f"{git_server.url}/nothing.git", "username": USER, "token": TOKEN}
    r = await client.put(f"/v1/spaces/{space_id}/git-sync", json=link, headers=owner.headers)
    assert r.status_code == 200, r.text
    await run_jobs(db, job_env)
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert (r.json()["error"], r.json()["remoteCommit"]) == (
        "no git repository at this URL (HTTP 404)",
        None,
    )


async def test_a_private_address_is_refused(
    app: FastAPI,
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    settings: Settings,
) -> None:
    owner, space_id, _ = await _space(client, db)
    git_server.bare("handbook")
    url = f"{git_server.url}/handbook.git"
    link = {"url": url, "username": USER, "token": TOKEN}
    # Loopback is not allowed (the default): refused before anything is kept.
    r = await client.put(f"/v1/spaces/{space_id}/git-sync", json=link, headers=owner.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "URL refused: 127.0.0.1 is a loopback address"),
    )
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Git Sync not found"))

    # Linked while allowed, then no longer: the sync's own requests are refused too.
    app.state.settings = settings.model_copy(update={"fetch_allowed_hosts": "127.0.0.1"})
    r = await client.put(f"/v1/spaces/{space_id}/git-sync", json=link, headers=owner.headers)
    assert r.status_code == 200, r.text
    app.state.settings = settings
    await run_jobs(db, job_env)
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id, url, error="URL refused: 127.0.0.1 is a loopback address", errorAt=WHEN
    )
    assert git_server.requests == []


async def test_who_may_link_and_pull(
    client: httpx.AsyncClient, db: AsyncEngine, loopback: Settings, git_server: GitServer
) -> None:
    owner, space_id, _ = await _space(client, db)
    r = await client.get(f"/v1/spaces/{space_id}", headers=owner.headers)
    org = r.json()["organization"]
    editor, reader, stranger = [await factories.user(db) for _ in range(3)]
    await factories.member(db, org=org, who=editor, role="edit")
    await factories.member(db, org=org, who=reader, role="read")
    url = f"{git_server.url}/handbook.git"
    link = {"url": url, "token": TOKEN}
    path = f"/v1/spaces/{space_id}/git-sync"

    r = await client.put(path, json=link, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only space admins can link a git remote"),
    )
    r = await client.put(path, json=link, headers=stranger.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Space not found"))
    r = await client.put(
        path, json={**link, "url": "ftp://example.com/x.git"}, headers=owner.headers
    )
    assert r.status_code == 400, r.text
    r = await client.put(
        path, json={**link, "url": "http://me:pw@127.0.0.1/x.git"}, headers=owner.headers
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "url: give the credentials as username and token, not in the URL"),
    )
    r = await client.put(path, json={**link, "branch": "a..b"}, headers=owner.headers)
    assert r.status_code == 400, r.text
    # A public host over plain http: its credentials could be read on the way.
    public = {"url": "http://93.184.216.34/x.git", "username": "me", "token": TOKEN}
    for body in (public, {**public, "username": None}, {**public, "token": None}):
        r = await client.put(path, json=body, headers=owner.headers)
        assert (r.status_code, r.json()) == (
            400,
            error(400, "url: credentials are sent over https only"),
        )
    r = await client.get(path, headers=owner.headers)
    assert r.status_code == 404, r.text

    r = await client.put(path, json=link, headers=owner.headers)
    hook = r.json()["webhookUrl"]
    assert (r.status_code, r.json()) == (200, {**_status(space_id, url), "webhookUrl": hook})
    # Linked again (a new token): the webhook URL stays the one the git host was given.
    r = await client.put(path, json={**link, "token": "rotated"}, headers=owner.headers)
    assert (r.status_code, r.json()) == (200, {**_status(space_id, url), "webhookUrl": hook})
    r = await client.get(path, headers=reader.headers)
    assert (r.status_code, r.json()) == (200, _status(space_id, url))
    assert TOKEN not in r.text
    r = await client.post(f"{path}/pull", headers=reader.headers)
    assert (r.status_code, r.json()) == (403, error(403, "You cannot sync this space"))
    r = await client.post(f"{path}/pull", headers=editor.headers)
    assert (r.status_code, r.json()) == (202, _status(space_id, url))
    r = await client.delete(path, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only space admins can link a git remote"),
    )
    r = await client.delete(path, headers=owner.headers)
    assert r.status_code == 204
    r = await client.get(path, headers=owner.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Git Sync not found"))
    r = await client.post(hook)
    assert r.status_code == 404


async def _sweep(db: AsyncEngine, job_env: JobEnv) -> None:
    """The periodic sweep, due now: every linked space's sync queued and run."""
    async with unit_of_work(db) as conn:
        await make_due(conn, remote.SWEEP, schedule_key(remote.SWEEP))
    await run_jobs(db, job_env)


async def test_the_sweep_pulls_into_a_change_request_under_merge_rules(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
    tmp_path: Path,
) -> None:
    owner, space_id, page_id = await _space(client, db)
    url = await _linked(client, db, job_env, git_server, space_id, owner)
    main = await _docshelf_main(client, space_id, owner)
    rules = {"type": "rules", "rules": [{"rule": "require_at_least_one_review"}]}
    r = await client.patch(
        f"/v1/spaces/{space_id}", json={"mergeRules": rules}, headers=owner.headers
    )
    assert r.status_code == 200, r.text

    work = _clone(git_server, tmp_path)
    (work / "README.md").write_text(
        f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nReviewed first.\n"
    )
    theirs = _commit(work, "Propose a new guide")
    await _sweep(db, job_env)

    # Main waits for review: the remote's commits are a change request.
    assert await _markdown(client, space_id, page_id, owner) == "Read me."
    r = await client.get(f"/v1/spaces/{space_id}/change-requests", headers=owner.headers)
    crs = r.json()["items"]
    assert [(cr["subject"], cr["status"]) for cr in crs] == [("Propose a new guide", "open")]
    assert await _docshelf_main(client, space_id, owner) == main
    expected = _status(
        space_id, url, remoteCommit=theirs, lastPushAt=WHEN, lastPullAt=WHEN, lastSyncAt=WHEN
    )
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == expected

    # Swept again: the same commits open no second change request.
    await _sweep(db, job_env)
    r = await client.get(f"/v1/spaces/{space_id}/change-requests", headers=owner.headers)
    assert len(r.json()["items"]) == 1
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == expected

    # A commit on top of them goes on in that change request.
    (work / "README.md").write_text(
        f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nReviewed twice.\n"
    )
    theirs = _commit(work, "Say it again")
    await _sweep(db, job_env)
    r = await client.get(f"/v1/spaces/{space_id}/change-requests", headers=owner.headers)
    assert [cr["number"] for cr in r.json()["items"]] == [crs[0]["number"]]
    r = await client.get(
        f"/v1/spaces/{space_id}/change-requests/{crs[0]['id']}/content/page/{page_id}",
        params={"format": "markdown"},
        headers=owner.headers,
    )
    assert r.json()["markdown"] == "Reviewed twice.\n"
    assert await _markdown(client, space_id, page_id, owner) == "Read me."
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == {**expected, "remoteCommit": theirs}


async def test_a_refused_pull_is_a_status_and_changes_nothing(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
    tmp_path: Path,
) -> None:
    owner, space_id, page_id = await _space(client, db)
    url = await _linked(client, db, job_env, git_server, space_id, owner)
    main = await _docshelf_main(client, space_id, owner)
    work = _clone(git_server, tmp_path)
    (work / "README.md").write_text(f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nNew.\n")
    (work / "again.md").symlink_to("README.md")
    _commit(work, "Write, and link a file")
    await _pull(client, space_id, owner)
    await run_jobs(db, job_env)
    assert await _markdown(client, space_id, page_id, owner) == "Read me."
    assert await _docshelf_main(client, space_id, owner) == main
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id,
        url,
        remoteCommit=main,
        lastPushAt=WHEN,
        lastSyncAt=WHEN,
        error=(
            "the remote's commits were not applied:"
            " again.md: symbolic links and submodules are not synced"
        ),
        errorAt=WHEN,
    )


async def test_what_the_space_adds_to_a_pull_is_pushed_back(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
    tmp_path: Path,
) -> None:
    owner, space_id, _ = await _space(client, db)
    url = await _linked(client, db, job_env, git_server, space_id, owner)
    work = _clone(git_server, tmp_path)
    # A new page without an id: the space gives it one, in a commit on top of the writer's.
    (work / "setup.md").write_text("# Setup\n\nInstall it.\n")
    summary = (work / "SUMMARY.md").read_text() + "* [Setup](setup.md)\n"
    (work / "SUMMARY.md").write_text(summary)
    theirs = _commit(work, "Add a setup page")
    await _pull(client, space_id, owner)
    await run_jobs(db, job_env)

    r = await client.get(f"/v1/spaces/{space_id}/content", headers=owner.headers)
    setup = next(p for p in r.json()["pages"] if p["title"] == "Setup")
    main = await _docshelf_main(client, space_id, owner)
    assert main != theirs
    # The remote fast-forwarded to the space's commit, whose parent is the writer's.
    assert git_server.head("handbook") == main
    git("pull", "--ff-only", cwd=work)
    assert git("rev-parse", "HEAD^", cwd=work) == theirs
    assert (
        work / "setup.md"
    ).read_text() == f"---\nid: {setup['id']}\n---\n\n# Setup\n\nInstall it.\n"
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id,
        url,
        remoteCommit=main,
        lastPushAt=WHEN,
        lastPullAt=WHEN,
        lastSyncAt=WHEN,
    )


async def test_a_moved_repository_is_followed_through_the_guard(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
) -> None:
    owner, space_id, _ = await _space(client, db)
    url = await _linked(client, db, job_env, git_server, space_id, owner, at="moved/")
    main = await _docshelf_main(client, space_id, owner)
    assert git_server.head("handbook") == main
    # Each exchange asks the old place first and is redirected; the client then goes on at
    # the new place (same origin: the credentials went along, or nothing would have passed).
    assert git_server.requests == [
        "GET /moved/handbook.git/info/refs",
        "GET /handbook.git/info/refs",
        "POST /handbook.git/git-upload-pack",
        "GET /moved/handbook.git/info/refs",
        "GET /handbook.git/info/refs",
        "POST /handbook.git/git-receive-pack",
    ]
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(space_id, url, remoteCommit=main, lastPushAt=WHEN, lastSyncAt=WHEN)


async def test_a_remote_that_moves_during_a_push_is_not_overwritten(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
    tmp_path: Path,
) -> None:
    owner, space_id, page_id = await _space(client, db)
    url = await _linked(client, db, job_env, git_server, space_id, owner)
    work = _clone(git_server, tmp_path)
    (work / "notes.md").write_text("# Notes\n\nA writer's.\n")
    _commit(work, "A writer's notes", push=False)

    # An edit's sync reads the remote, then, as its push begins, the writer's push lands.
    def writer_first(request: str) -> None:
        if request == "GET /handbook.git/info/refs?service=git-receive-pack":
            git_server.before.clear()
            git("push", str(git_server.root / "handbook.git"), "main", cwd=work)

    git_server.before.append(writer_first)
    await _edit(client, space_id, page_id, owner, "Edited.")
    theirs = git("rev-parse", "HEAD", cwd=work)
    await run_jobs(db, job_env)
    # The writer's commit is still the remote's head: nothing was forced over it. The sync
    # after found both sides moved, and says so.
    assert git_server.head("handbook") == theirs
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    status = r.json()
    assert "have both changed since they were last in step" in status["error"], status
    assert await _markdown(client, space_id, page_id, owner) == "Edited."
    assert url == status["url"]


def _stall(git_server: GitServer, request: str) -> tuple[threading.Event, threading.Event]:
    """The remote holds its answer to `request` (once) until released (at most 10 s): the
    events say it was reached, and release it."""
    reached, release = threading.Event(), threading.Event()

    def hold(seen: str) -> None:
        if seen == request:
            git_server.before.clear()
            reached.set()
            release.wait(10)

    git_server.before.append(hold)
    return reached, release


async def test_a_remote_that_stalls_past_the_deadline_gets_nothing_after_it(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
) -> None:
    owner, space_id, page_id = await _space(client, db)
    url = await _linked(client, db, job_env, git_server, space_id, owner)
    first = git_server.head("handbook")
    await _edit(client, space_id, page_id, owner, "Edited.")
    # The edit's sync reads the remote, then the remote sits on the push's first request
    # past the exchange's deadline (1.5 s here, from the settings).
    _, release = _stall(git_server, "GET /handbook.git/info/refs?service=git-receive-pack")
    quick = replace(job_env, settings=loopback.model_copy(update={"gitsync_timeout": 1.5}))
    del git_server.requests[:]
    try:
        await run_jobs(db, quick)
    finally:
        release.set()
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id,
        url,
        remoteCommit=first,
        lastPushAt=WHEN,
        lastSyncAt=WHEN,
        error="the exchange with the remote ran longer than 1.5 s and was stopped",
        errorAt=WHEN,
    )
    # The sync ended with its thread: nothing was pushed, then or after.
    assert git_server.requests == [
        "GET /handbook.git/info/refs",
        "POST /handbook.git/git-upload-pack",
        "GET /handbook.git/info/refs",
    ]
    assert git_server.head("handbook") == first


async def test_a_sync_stopped_with_its_worker_pushes_nothing_after(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
) -> None:
    owner, space_id, page_id = await _space(client, db)
    await _linked(client, db, job_env, git_server, space_id, owner)
    first = git_server.head("handbook")
    await _edit(client, space_id, page_id, owner, "Edited.")
    reached, release = _stall(git_server, "GET /handbook.git/info/refs?service=git-receive-pack")
    del git_server.requests[:]
    runner = JobRunner(db, job_env, poll_interval=0.05)
    running = asyncio.create_task(runner.run_forever())
    try:
        assert await asyncio.to_thread(reached.wait, 10)
        # The worker stops at once (a shutdown, or the job's own time limit): it no longer
        # waits for the exchange, which must not go on by itself.
        runner.stop(now=True)
        await running
    finally:
        release.set()
    # The remote answers at last: no push follows (one would come within milliseconds).
    for _ in range(20):
        await asyncio.sleep(0.05)
        assert "POST /handbook.git/git-receive-pack" not in git_server.requests
    assert git_server.head("handbook") == first


async def test_what_a_sync_fetched_is_its_own_until_applied(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    job_env: JobEnv,
    git_server: GitServer,
    loopback: Settings,
    tmp_path: Path,
) -> None:
    owner, space_id, page_id = await _space(client, db)
    url = await _linked(client, db, job_env, git_server, space_id, owner)
    r = await client.get(f"/v1/spaces/{space_id}", headers=owner.headers)
    org = r.json()["organization"]
    work = _clone(git_server, tmp_path)
    (work / "README.md").write_text(f"---\nslug: guide\nid: {page_id}\n---\n\n# Guide\n\nNew.\n")
    theirs = _commit(work, "Write in git")
    await _pull(client, space_id, owner)

    # The pull fetches the writer's commit, then waits to apply it (the link's row is held)
    # while the space's own git endpoint answers a push of nothing: each keeps to its own
    # objects, and the pull applies the commit it fetched.
    reached, release = _stall(git_server, "GET /handbook.git/info/refs?service=git-upload-pack")
    del git_server.requests[:]
    pulling = asyncio.create_task(run_jobs(db, job_env))
    try:
        assert await asyncio.to_thread(reached.wait, 10)
        async with unit_of_work(db) as conn:
            assert await repository.remote_of(conn, space_id, lock=True) is not None
            release.set()
            for _ in range(200):
                if len(git_server.requests) == 5:  # the refs read, then the fetch's requests
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # the fetched pack taken in, the sync waits for the row
            r = await client.post(
                f"/git/{org}/{space_id}.git/git-receive-pack",
                content=b"0000",
                headers={"content-type": "application/x-git-receive-pack-request"},
                auth=("x", owner.token),
            )
            assert r.status_code == 200, r.text
    finally:
        release.set()
        await pulling
    # (a sync after the pull finds both sides in step)
    assert git_server.requests == [
        "GET /handbook.git/info/refs",
        "POST /handbook.git/git-upload-pack",
        "GET /handbook.git/info/refs",
        "POST /handbook.git/git-upload-pack",
        "POST /handbook.git/git-upload-pack",
        "GET /handbook.git/info/refs",
        "POST /handbook.git/git-upload-pack",
    ]
    assert await _markdown(client, space_id, page_id, owner) == "New.\n"
    assert await _docshelf_main(client, space_id, owner) == theirs
    r = await client.get(f"/v1/spaces/{space_id}/git-sync", headers=owner.headers)
    assert r.json() == _status(
        space_id, url, remoteCommit=theirs, lastPushAt=WHEN, lastPullAt=WHEN, lastSyncAt=WHEN
    )
