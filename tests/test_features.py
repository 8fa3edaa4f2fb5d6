"""Features that need the operating system (docshelf.features): a machine without what one
needs says so at start in one block with the command that turns it on, lists it in /readyz
(still ready), and the feature answers 503 naming what is missing, never a 4xx about the
content. The libraries are made missing for real, not uninstalled: the check is pointed at a
library name that does not exist, and, where this machine lets a test make a mount namespace
(root; CI), Pango itself is hidden from a real `docshelf serve` under /dev/null."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf import features
from docshelf.config import Settings
from tests import factories
from tests.factories import Who
from tests.helpers import error, second_app
from tests.server import Server

ABSENT = "libdocshelf-absent.so.0"


@pytest.fixture
def pdf_lacks_a_library(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    need = features.Need(ABSENT, "docshelf-absent", features.library(ABSENT))
    pdf = features.Feature("pdf", "PDF export", (*features.PDF.needs, need))
    monkeypatch.setattr(features, "FEATURES", (pdf, features.SSO))
    features.detect.cache_clear()
    yield
    features.detect.cache_clear()


async def _one_line_space(client: httpx.AsyncClient, db: AsyncEngine) -> tuple[str, Who]:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, title="Notes")
    r = await client.patch(
        f"/v1/spaces/{space['id']}", json={"editMode": "live"}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    r = await client.post(
        f"/v1/spaces/{space['id']}/content",
        json={
            "changes": [
                {"operation": "insert_page", "title": "Hello", "document": {"markdown": "Hi."}}
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    return space["id"], admin


def _sudo() -> str:
    return "" if os.geteuid() == 0 else "sudo "


async def test_pdf_without_a_library_is_503_naming_it(
    settings: Settings, db: AsyncEngine, pdf_lacks_a_library: None
) -> None:
    async with second_app(settings) as client:
        sid, admin = await _one_line_space(client, db)
        r = await client.get(f"/v1/spaces/{sid}/pdf", headers=admin.headers)
        assert (r.status_code, r.json()) == (
            503,
            error(
                503,
                f"PDF export is unavailable on this server: it lacks {ABSENT}. An administrator "
                f"turns it on with `{_sudo()}apt-get install docshelf-absent` and a restart",
            ),
        )
        # Off is a fact about the machine: the server stays ready, and says what is missing.
        r = await client.get("/readyz")
        assert (r.status_code, r.json()) == (
            200,
            {
                "status": "ready",
                "checks": {"database": "ok", "migrations": "ok", "blobs": "ok"},
                "features": {
                    "pdf": {
                        "status": "off",
                        "missing": [ABSENT],
                        "install": f"{_sudo()}apt-get install docshelf-absent",
                    },
                    "sso": {"status": "ok"},
                },
            },
        )


def test_the_start_up_notice_is_one_block_with_one_command(pdf_lacks_a_library: None) -> None:
    sso_off = features.Feature(
        "sso",
        "Single sign-on (SAML)",
        (features.Need("xmlsec9", "xmlsec9", features.program("xmlsec9")),),
    )
    found = features.check((features.FEATURES[0], sso_off))
    assert features.startup_notice(found) == (
        "Some features are off: this machine lacks what they need.\n"
        f"  PDF export: missing {ABSENT}\n"
        "  Single sign-on (SAML): missing xmlsec9\n"
        "Turn them on with:\n"
        f"  {_sudo()}apt-get install docshelf-absent xmlsec9\n"
        "then restart Docshelf. They answer 503 until then; GET /readyz lists every feature."
    )
    assert features.startup_notice(features.check((features.PDF, features.SSO))) is None


# -- Pango hidden from a real server ----------------------------------------------------------


def _loaded_path(name: str) -> str:
    """The file the dynamic loader opens for `name` in this process."""
    ctypes.CDLL(name)
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/" in path and Path(path).name.startswith(name.split(".so")[0] + ".so"):
                return os.path.realpath(path)
    raise AssertionError(f"{name} is not mapped")


def _namespace_prefix() -> list[str]:
    """`unshare` into a private mount namespace, or skip (fail under CI) where the machine
    does not allow it: it needs root, as CI runs."""
    unshare = shutil.which("unshare")
    probe = (
        subprocess.run([unshare, "-m", "--propagation", "private", "true"], capture_output=True)
        if unshare
        else None
    )
    if probe is None or probe.returncode != 0:
        message = "this machine does not let a test make a mount namespace (unshare -m; root)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    assert unshare is not None
    return [unshare, "-m", "--propagation", "private"]


def _hide_in(pid: int, path: str) -> None:
    subprocess.run(
        ["nsenter", "-t", str(pid), "-m", "mount", "--bind", "/dev/null", path], check=True
    )


def _hidden_server(settings: Settings, data_dir: Path, path: str | None) -> Server:
    """`docshelf serve` in a mount namespace of its own, where `path` (when given) reads as an
    empty file from the start, as if its package were not installed."""
    hide = f"mount --bind /dev/null '{path}' && " if path else ""
    prefix = (*_namespace_prefix(), "sh", "-c", f'{hide}exec "$@"', "sh")
    return Server(settings, data_dir, prefix=prefix, DOCSHELF_SERVER="uvicorn")


async def _served_space(base: str, token: str) -> tuple[str, dict[str, str]]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        org = (await client.get("/v1/orgs", headers=headers)).json()["items"][0]["id"]
        r = await client.post(f"/v1/orgs/{org}/spaces", json={"title": "Notes"}, headers=headers)
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        r = await client.patch(f"/v1/spaces/{sid}", json={"editMode": "live"}, headers=headers)
        assert r.status_code == 200, r.text
        change = {"operation": "insert_page", "title": "Hello", "document": {"markdown": "Hi."}}
        r = await client.post(
            f"/v1/spaces/{sid}/content", json={"changes": [change]}, headers=headers
        )
        assert r.status_code == 200, r.text
    return sid, headers


async def test_a_server_without_pango_says_so_and_answers_503(
    settings: Settings, db: AsyncEngine, tmp_path: Path
) -> None:
    pango = _loaded_path("libpango-1.0.so.0")
    server = _hidden_server(settings, tmp_path, pango)
    server.start()
    try:
        sid, headers = await _served_space(
            server.base, (tmp_path / "admin-token").read_text().strip()
        )
        async with httpx.AsyncClient(base_url=server.base, timeout=60) as client:
            r = await client.get(f"/v1/spaces/{sid}/pdf", headers=headers)
            # Pango's FreeType half needs Pango: both are missing, and named.
            lacking = "libpango-1.0.so.0, libpangoft2-1.0.so.0"
            command = f"{_sudo()}apt-get install libpango-1.0-0 libpangoft2-1.0-0"
            assert (r.status_code, r.json()) == (
                503,
                error(
                    503,
                    f"PDF export is unavailable on this server: it lacks {lacking}. An "
                    f"administrator turns it on with `{command}` and a restart",
                ),
            )
            ready = (await client.get("/readyz")).json()
        assert ready == {
            "status": "ready",
            "checks": {"database": "ok", "migrations": "ok", "blobs": "ok"},
            "features": {
                "pdf": {
                    "status": "off",
                    "missing": ["libpango-1.0.so.0", "libpangoft2-1.0.so.0"],
                    "install": command,
                },
                "sso": {"status": "ok"},
            },
        }
    finally:
        server.stop()
    # One log record (JSON here, as stderr is no terminal), the block its message.
    records = [json.loads(x) for x in server.log.read_text().splitlines() if x.startswith("{")]
    (block,) = [r["message"] for r in records if "features are off" in r["message"]]
    assert block == (
        "Some features are off: this machine lacks what they need.\n"
        f"  PDF export: missing {lacking}\n"
        "Turn them on with:\n"
        f"  {command}\n"
        "then restart Docshelf. They answer 503 until then; GET /readyz lists every feature."
    )


async def test_a_library_gone_after_start_is_503_not_the_contents_fault(
    settings: Settings, db: AsyncEngine, tmp_path: Path
) -> None:
    pango = _loaded_path("libpango-1.0.so.0")
    server = _hidden_server(settings, tmp_path, None)
    server.start()
    try:
        sid, headers = await _served_space(
            server.base, (tmp_path / "admin-token").read_text().strip()
        )
        assert server.process is not None
        # The start-up check passed; the renderer opens Pango only when it first renders.
        _hide_in(server.process.pid, pango)
        async with httpx.AsyncClient(base_url=server.base, timeout=60) as client:
            r = await client.get(f"/v1/spaces/{sid}/pdf", headers=headers)
        assert r.status_code == 503, r.text
        message = r.json()["error"]["message"]
        # WeasyPrint's own words name the library it could not open.
        assert message.startswith(
            "PDF export is unavailable on this server: cannot load library 'libpango-1.0-0'"
        ), message
        assert message.endswith(
            f"An administrator installs what it lacks with `{_sudo()}apt-get install "
            "libglib2.0-0 libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz0b libharfbuzz-subset0 "
            "libfontconfig1 fonts-dejavu-core` and restarts Docshelf"
        ), message
    finally:
        server.stop()


def test_detection_opens_no_library_in_the_process_that_asks() -> None:
    """An API process learns which features are on without keeping Pango, GLib and fontconfig
    (a child process opens them), and learns the same as opening them itself would (on a
    machine without them, both say so; CI has them)."""
    code = (
        "import json; from docshelf import features; "
        "found = features.detect().readiness(); "
        "maps = open('/proc/self/maps').read(); "
        "opened = [n for n in ('libpango', 'libfontconfig', 'libgobject') if n in maps]; "
        "print(json.dumps([found, opened, features.check(features.FEATURES).readiness()]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    found, opened, in_process = json.loads(done.stdout)
    assert opened == []
    assert found == in_process


def test_detection_without_a_child_checks_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no child Python can be started, the process checks for itself: the same answer."""
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    features.detect.cache_clear()
    try:
        found = features.detect().readiness()
    finally:
        features.detect.cache_clear()
    assert found == features.check(features.FEATURES).readiness()
