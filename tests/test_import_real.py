"""Imports of documentation the size real projects write (issue 27): a ~700 KB release-notes page,
a page of 5,200 links and a folder 56 levels deep land, through the API (a zip of the folder) and
the CLI (the folder itself), with what cannot land (a page over the size limit, the levels past
the page tree's depth) left out and named, GitBook's `.gitbook/assets` and `.gitbook/includes`
imported from a folder as from its zip, and links to nothing of the import reported."""

from __future__ import annotations

import asyncio
import io
import shutil
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner
from PIL import Image
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.cli.main import main
from docshelf.config import Settings
from docshelf.document import markdown as md
from docshelf.document.limits import MAX_IMPORT_DEPTH, MAX_MARKDOWN_BYTES
from docshelf.imports.convert import from_folder, from_zip
from tests.real_docs import pull_requests, release_notes
from tests.test_content_limits import depth_of
from tests.test_import import Files, allow_loopback, setup, site
from tests.test_import_projects import body, flat, links, pages_of

__all__ = ["allow_loopback", "site"]  # fixtures, used by name

DEEP = 56  # folders nested in the reference section


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "orange").save(out, "PNG")
    return out.getvalue()


def deep_folder(level: int) -> str:
    """The folder `level` folders down the reference section (level 1 is `reference`)."""
    return "/".join(["reference", *(f"part-{k:02d}" for k in range(2, level + 1))])


def write_project(root: Path) -> Path:
    files: dict[str, str | bytes] = {
        ".gitbook.yaml": "root: ./\n",
        ".gitbook/assets/logo.png": png(),
        ".gitbook/includes/support.md": "---\ntitle: Support\n---\n\nAsk on the forum.\n",
        ".git/HEAD": "ref: refs/heads/main\n",
        ".git/config": "[core]\n",
        ".DS_Store": b"\0\0\0\1Bud1",
        "README.md": (
            "# Rust notes\n\n"
            "See the [release notes](releases.md#1.95-Language), [every pull request]"
            "(pull-requests.md) and the [reference](reference/).\n\n"
            "![logo](.gitbook/assets/logo.png)\n\n"
            '{% include ".gitbook/includes/support.md" %}\n\n'
            "Older notes: [1.0](archive/1.0.md).\n"
        ),
        "releases.md": release_notes(700 * 1024, "Rust release notes"),
        "pull-requests.md": pull_requests(5200),
        "huge.md": "All of it.\n" * (MAX_MARKDOWN_BYTES // 11 + 1),
    }
    for level in range(1, DEEP + 1):
        files[f"{deep_folder(level)}/README.md"] = f"# Part {level}\n\nLevel {level}.\n"
    files[f"{deep_folder(DEEP)}/page.md"] = "# The deepest page\n"
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def zipped(project: Path) -> bytes:
    """The folder as a file manager or `zip -r` archives it: the folder itself inside."""
    base = project.parent / f"{project.name}-archive"
    archive = shutil.make_archive(str(base), "zip", project.parent, project.name)
    return Path(archive).read_bytes()


def too_deep(depth: int) -> str:
    return (
        f"over the page depth limit (it would be {depth} levels deep; an import holds at most "
        f"{MAX_IMPORT_DEPTH}): left out"
    )


def expected_report() -> list[dict[str, str]]:
    huge = len(("All of it.\n" * (MAX_MARKDOWN_BYTES // 11 + 1)).encode())
    levels = range(MAX_IMPORT_DEPTH + 1, DEEP + 1)
    deep = [(f"{deep_folder(level)}/README.md", level) for level in levels]
    deep.append((f"{deep_folder(DEEP)}/page.md", DEEP + 1))  # in the order of their paths
    return [
        {"path": ".DS_Store", "reason": "hidden file", "kind": "skipped"},
        {"path": ".git/", "reason": "hidden folder", "kind": "skipped"},
        *({"path": path, "reason": too_deep(depth), "kind": "skipped"} for path, depth in deep),
        {
            "path": "huge.md",
            "reason": f"over the page size limit (markdown is {huge} bytes; a page holds at most "
            f"{MAX_MARKDOWN_BYTES}): left out",
            "kind": "skipped",
        },
        {
            "path": "README.md",
            "reason": "links to 'archive/1.0.md', which is no page or image of the import: "
            "left as written",
            "kind": "unresolved",
        },
    ]


async def check_landed(client: httpx.AsyncClient, sid: str, who: Any, project: Path) -> None:
    pages = await pages_of(client, sid, who)
    assert [p["title"] for p in pages] == [
        "Rust notes",
        "Every pull request",
        "Part 1",  # the reference section: its README's heading
        "Rust release notes",
    ]
    # The reference section down to the deepest level a page tree holds, in order.
    assert depth_of(pages) == MAX_IMPORT_DEPTH
    level, titles = pages[2], []
    while True:
        titles.append(level["title"])
        if not level.get("pages"):
            break
        (level,) = level["pages"]
    assert titles == [f"Part {k}" for k in range(1, MAX_IMPORT_DEPTH + 1)]
    ids = flat(pages)
    # The release notes whole, byte for byte (their links are all to the web).
    notes = await body(client, sid, ids["Rust release notes"], who)
    source = (project / "releases.md").read_text()
    assert notes["markdown"] == source.removeprefix("# Rust release notes\n\n")
    assert len(notes["markdown"].encode()) > 700 * 1000
    prs = await body(client, sid, ids["Every pull request"], who)
    assert len(md.iter_links(prs["markdown"])) == 5200
    # Images from .gitbook/assets and reusable contents from .gitbook/includes came along.
    files = (await client.get(f"/v1/spaces/{sid}/content/files", headers=who.headers)).json()
    assert [f["name"] for f in files["items"]] == ["logo.png"]
    home = (await body(client, sid, ids["Rust notes"], who))["markdown"]
    content = (await client.get(f"/v1/spaces/{sid}/content", headers=who.headers)).json()
    (reusable,) = content["reusableContents"]
    assert reusable["title"] == "Support"
    assert f"![logo](/files/{files['items'][0]['id']})" in home
    # Links between the pages resolved (read back as paths to the pages, as GitBook shows them).
    assert "[release notes](rust-release-notes.md#1.95-Language)" in home
    assert "[every pull request](every-pull-request.md)" in home
    assert "[1.0](archive/1.0.md)" in home  # reported, and shown broken in the links listing
    listing = await links(client, sid, who)
    assert listing["stats"]["broken"]["total"] == 1


async def test_real_sized_project_through_the_api(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    site: tuple[str, Files],
    allow_loopback: None,
    tmp_path: Path,
) -> None:
    base, served = site
    sid, _admin, editor, reader = await setup(client, db)
    project = write_project(tmp_path / "rust-notes")
    served["/rust-notes.zip"] = ("application/zip", zipped(project))
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"url": base + "/rust-notes.zip", "source": "zip"},
        headers=editor.headers,
    )
    assert r.status_code == 201, r.text
    deep, huge = DEEP - MAX_IMPORT_DEPTH + 1, 1
    assert r.json() == {
        "revision": r.json()["revision"],
        "detected": "gitbook",
        # README, the notes, the pull requests, 50 levels; the logo and the reusable content.
        "importedResources": 3 + MAX_IMPORT_DEPTH + 2,
        "totalResources": 3 + MAX_IMPORT_DEPTH + 2 + 3 + deep + huge,
        "skipped": expected_report(),
        # The hidden folder is one entry for its two files.
        "skippedCounts": {"skipped": 2 + deep + huge, "unresolved": 1, "approximated": 0},
    }
    await check_landed(client, sid, reader, project)


async def test_real_sized_project_through_the_cli(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    sid, admin, *_ = await setup(client, db)
    project = write_project(tmp_path / "rust-notes")
    env = {"DOCSHELF_DATABASE_URL": settings.resolved_database_url}
    result = await asyncio.to_thread(
        CliRunner().invoke,
        main,
        ["--data-dir", str(settings.data_dir), "import", sid, str(project), "--as", admin.email],
        env=env,
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    report = expected_report()
    deep = DEEP - MAX_IMPORT_DEPTH + 1
    assert lines[: 2 + len(report)] == [
        "Detected: gitbook",
        f"{3 + MAX_IMPORT_DEPTH} pages and 1 files to import: {3 + MAX_IMPORT_DEPTH + 2} of "
        f"{3 + MAX_IMPORT_DEPTH + 2 + 3 + deep + 1} resources; "
        f"{2 + deep + 1} skipped, 1 unresolved, 0 approximated",
        *(f"{s['kind']} {s['path']}: {s['reason']}" for s in report),
    ]
    assert lines[-1].startswith("Imported into revision ")
    await check_landed(client, sid, admin, project)


def test_a_folder_reads_as_its_zip(tmp_path: Path) -> None:
    """One reading for both: the same pages, files, reusable contents and report. A GitBook
    repository's `.gitbook/assets` and `.gitbook/includes` come along from a folder too."""
    project = write_project(tmp_path / "rust-notes")
    (project / "releases.md").write_text(
        release_notes(20_000, "Rust release notes")
    )  # size is not the point here
    (project / "pull-requests.md").write_text(pull_requests(50))
    from_disk = from_folder(project)
    assert from_disk == from_zip(zipped(project))
    assert [f.name for f in from_disk.files] == ["logo.png"]
    assert [r.title for r in from_disk.reusables] == ["Support"]
    assert [(s.path, s.reason) for s in from_disk.skipped[:2]] == [
        (".DS_Store", "hidden file"),
        (".git/", "hidden folder"),
    ]
