"""Git Sync journeys: Debian's git clones, commits, branches and pushes against a real
`docshelf serve` (the database of DOCSHELF_TEST_DATABASE_URL's server when set, else SQLite)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gitcli import GIT, git
from tests.test_journeys import Product, _postgres, start_product


@pytest.fixture(scope="module")
def product(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Product]:
    assert Path(GIT).exists(), "git is needed (Debian package git)"
    url = os.environ.get("DOCSHELF_TEST_DATABASE_URL")
    name = f"gitsync_{uuid.uuid4().hex[:8]}"
    started = start_product(
        tmp_path_factory.mktemp("gitsync"), _postgres(url, name, create=True) if url else None
    )
    try:
        yield started
    finally:
        started.stop()
        if url:
            _postgres(url, name, create=False)


def _remote(product: Product, org: str, space: str, token: str | None = None) -> str:
    host = product.base.removeprefix("http://")
    creds = f"anyone:{token}@" if token else ""
    return f"http://{creds}{host}/git/{org}/{space}.git"


async def _org(product: Product) -> str:
    async with product.client(product.token) as c:
        return str((await c.get("/v1/orgs")).json()["items"][0]["id"])


async def _space(product: Product, title: str, **space: Any) -> tuple[str, str]:
    """A live space holding a first page, a page with a child and a hint."""
    org = await _org(product)
    async with product.client(product.token) as c:
        r = await c.post(
            f"/v1/orgs/{org}/spaces", json={"title": title, "editMode": "live", **space}
        )
        assert r.status_code == 201, r.text
        space_id = r.json()["id"]
        changes = [
            {
                "operation": "insert_page",
                "ref": "a",
                "title": "Welcome",
                "document": {"markdown": "Hello."},
            },
            {
                "operation": "insert_page",
                "ref": "b",
                "title": "Guide",
                "description": "All of it",
                "document": {"markdown": '{% hint style="info" %}\nRead me.\n{% endhint %}'},
            },
            {
                "operation": "insert_page",
                "ref": "c",
                "into": "b",
                "title": "Step one",
                "document": {"markdown": "First."},
            },
        ]
        r = await c.post(f"/v1/spaces/{space_id}/content", json={"changes": changes})
        assert r.status_code == 200, r.text
    return org, space_id


async def _pages(product: Product, space_id: str) -> list[dict[str, Any]]:
    """Every page of main, parents first (the listing nests them)."""
    async with product.client(product.token) as c:
        r = await c.get(f"/v1/spaces/{space_id}/content")
        assert r.status_code == 200, r.text
    out: list[dict[str, Any]] = []

    def walk(pages: list[dict[str, Any]]) -> None:
        for page in pages:
            out.append(page)
            walk(page.get("pages") or [])

    walk(r.json()["pages"])
    return out


async def _markdown(product: Product, space_id: str, page_id: str) -> str:
    async with product.client(product.token) as c:
        r = await c.get(
            f"/v1/spaces/{space_id}/content/page/{page_id}", params={"format": "markdown"}
        )
        assert r.status_code == 200, r.text
        return str(r.json()["markdown"])


async def test_clone_edit_push_and_fetch(product: Product, tmp_path: Path) -> None:
    org, space_id = await _space(product, "Handbook")
    remote = _remote(product, org, space_id, product.token)
    git("clone", remote, "one", cwd=tmp_path)
    one = tmp_path / "one"
    assert sorted(
        p.relative_to(one).as_posix()
        for p in one.rglob("*")
        if ".git/" not in p.as_posix() + "/" and p.is_file()
    ) == [
        ".gitbook.yaml",
        "README.md",
        "SUMMARY.md",
        "guide/README.md",
        "guide/step-one.md",
    ]
    pages = await _pages(product, space_id)
    ids = {p["title"]: p["id"] for p in pages}
    assert (one / "SUMMARY.md").read_text() == (
        "# Table of contents\n\n* [Welcome](README.md)\n* [Guide](guide/README.md)\n"
        "  * [Step one](guide/step-one.md)\n"
    )
    assert (one / "guide/README.md").read_text() == (
        f"---\ndescription: All of it\nid: {ids['Guide']}\n---\n\n# Guide\n\n"
        '{% hint style="info" %}\nRead me.\n{% endhint %}'
    )
    # Deterministic: a second clone has the same commits.
    git("clone", remote, "two", cwd=tmp_path)
    head = git("rev-parse", "HEAD", cwd=one).stdout
    assert git("rev-parse", "HEAD", cwd=tmp_path / "two").stdout == head
    # Pushing what was cloned changes nothing.
    git("push", "origin", "main", cwd=one)
    assert len(await _pages(product, space_id)) == 3

    # An edit in the editor, committed and pushed, is the page's new body.
    (one / "guide/step-one.md").write_text(
        f"---\nid: {ids['Step one']}\n---\n\n# Step one\n\nFirst, then second.\n"
    )
    git("commit", "-am", "Say more about step one", cwd=one)
    pushed = git("push", "origin", "main", cwd=one)
    assert "Docshelf: applied to main" in pushed.stderr
    assert await _markdown(product, space_id, ids["Step one"]) == "First, then second.\n"
    # The space's main is the very commit pushed: a fetch has nothing new.
    mine = git("rev-parse", "HEAD", cwd=one).stdout
    git("fetch", cwd=one)
    assert git("rev-parse", "origin/main", cwd=one).stdout == mine
    git("pull", "--ff-only", cwd=tmp_path / "two")
    assert git("rev-parse", "HEAD", cwd=tmp_path / "two").stdout == mine

    # A new page without an id: added, and the fetch brings the id on top of the writer's commit.
    (one / "guide/step-two.md").write_text("# Step two\n\nSecond.\n")
    summary = (one / "SUMMARY.md").read_text() + "  * [Step two](guide/step-two.md)\n"
    (one / "SUMMARY.md").write_text(summary)
    git("add", "-A", cwd=one)
    git("commit", "-m", "Add step two", cwd=one)
    git("push", "origin", "main", cwd=one)
    pages = await _pages(product, space_id)
    guide = next(p for p in pages if p["title"] == "Guide")
    assert [p["title"] for p in guide["pages"]] == ["Step one", "Step two"]
    git("pull", "--ff-only", cwd=one)
    new_id = guide["pages"][1]["id"]
    assert (
        one / "guide/step-two.md"
    ).read_text() == f"---\nid: {new_id}\n---\n\n# Step two\n\nSecond.\n"
    assert git("status", "--porcelain", cwd=one).stdout == ""


async def test_a_branch_is_a_change_request(product: Product, tmp_path: Path) -> None:
    org, space_id = await _space(product, "Branches")
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    git("checkout", "-b", "reword", cwd=w)
    text = (w / "README.md").read_text().replace("Hello.", "Hello, reader.")
    (w / "README.md").write_text(text)
    git("commit", "-am", "Reword the welcome\n\nLonger text.", cwd=w)
    pushed = git("push", "origin", "reword", cwd=w)
    assert "opened change request #1" in pushed.stderr
    async with product.client(product.token) as c:
        crs = (await c.get(f"/v1/spaces/{space_id}/change-requests")).json()["items"]
        # The address printed is the change request's in the app, and it answers.
        printed = re.findall(r"opened change request #1: (\S+)", pushed.stderr)
        assert printed == [crs[0]["urls"]["app"]]
        assert (await c.get(printed[0])).status_code == 200
    assert [(cr["number"], cr["subject"], cr["status"]) for cr in crs] == [
        (1, "Reword the welcome", "open")
    ]
    welcome = next(p for p in await _pages(product, space_id) if p["title"] == "Welcome")
    assert await _markdown(product, space_id, welcome["id"]) == "Hello."  # main is untouched
    # A second push updates the same change request.
    (w / "README.md").write_text(text.replace("reader", "writer"))
    git("commit", "-am", "Better", cwd=w)
    assert "updated change request #1" in git("push", "origin", "reword", cwd=w).stderr
    refs = git("ls-remote", "origin", cwd=w).stdout
    assert "refs/heads/reword" in refs and "refs/heads/main" in refs
    async with product.client(product.token) as c:
        cr = (await c.get(f"/v1/spaces/{space_id}/change-requests/{crs[0]['id']}")).json()
        r = await c.get(
            f"/v1/spaces/{space_id}/change-requests/{cr['id']}/content/page/{welcome['id']}",
            params={"format": "markdown"},
        )
    assert r.json()["markdown"] == "Hello, writer."


async def test_main_merged_into_a_branch_brings_the_change_request_up_to_date(
    product: Product, tmp_path: Path
) -> None:
    """`git merge origin/main` on a change request's branch, a conflict resolved in git, then a
    push: the change request stands on that main with the resolution, so main's new pages are
    not its own (a tester saw them created again, then twice on main after the merge) and its
    merge takes the resolution without a conflict."""
    org, space_id = await _space(product, "Merged in")
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    git("checkout", "-b", "reword", cwd=w)
    (w / "README.md").write_text((w / "README.md").read_text().replace("Hello.", "Hello, you."))
    # The branch's own new page and file: they keep their ids through the merge.
    (w / "faq.md").write_text("# FAQ\n\nAsk.\n")
    (w / "SUMMARY.md").write_text((w / "SUMMARY.md").read_text() + "* [FAQ](faq.md)\n")
    (w / ".gitbook/assets").mkdir(parents=True)
    (w / ".gitbook/assets/faq.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"1" * 32)
    git("add", "-A", cwd=w)
    git("commit", "-m", "Reword", cwd=w)
    assert "opened change request" in git("push", "origin", "reword", cwd=w).stderr
    git("pull", "--ff-only", "origin", "reword", cwd=w)  # the new page's id line
    welcome = next(p for p in await _pages(product, space_id) if p["title"] == "Welcome")
    async with product.client(product.token) as c:
        (cr,) = (await c.get(f"/v1/spaces/{space_id}/change-requests")).json()["items"]
        base = f"/v1/spaces/{space_id}/change-requests/{cr['id']}"
        pages = (await c.get(f"{base}/content/pages")).json()["pages"]
        faq = next(p["id"] for p in pages if p["title"] == "FAQ")
        (faq_png,) = (await c.get(f"{base}/content/files")).json()["items"]
    async with product.client(product.token) as c:
        changes = [
            {"operation": "insert_page", "title": "News", "document": {"markdown": "New."}},
            {"operation": "update_page", "page": welcome["id"], "document": {"markdown": "Hi."}},
        ]
        r = await c.post(f"/v1/spaces/{space_id}/content", json={"changes": changes})
        assert r.status_code == 200, r.text
        news = r.json()["changes"][0]["page"]["id"]
    git("fetch", "origin", cwd=w)
    assert git("merge", "--no-edit", "origin/main", cwd=w, ok=False).returncode != 0  # conflict
    resolved = git("show", "origin/main:README.md", cwd=w).stdout.replace("Hi.", "Hi, you.")
    (w / "README.md").write_text(resolved)
    summary = git("show", "origin/main:SUMMARY.md", cwd=w).stdout + "* [FAQ](faq.md)\n"
    (w / "SUMMARY.md").write_text(summary)
    git("add", "README.md", "SUMMARY.md", cwd=w)
    git("commit", "--no-edit", cwd=w)
    assert "updated change request" in git("push", "origin", "reword", cwd=w).stderr
    git("pull", "--ff-only", "origin", "reword", cwd=w)  # the branch served builds on the merge
    # Main again, merged cleanly: the push is the merge alone, and the branch stays the user's.
    step = next(p for p in await _pages(product, space_id) if p["title"] == "Step one")
    async with product.client(product.token) as c:
        edit = {"operation": "update_page", "page": step["id"], "document": {"markdown": "1st."}}
        r = await c.post(f"/v1/spaces/{space_id}/content", json={"changes": [edit]})
        assert r.status_code == 200, r.text
    git("fetch", "origin", cwd=w)
    git("merge", "--no-edit", "origin/main", cwd=w)
    pushed = git("push", "origin", "reword", cwd=w).stderr
    assert "updated change request #1 (no change to the content)" in pushed
    git("pull", "--ff-only", "origin", "reword", cwd=w)
    async with product.client(product.token) as c:
        r = await c.get(f"{base}/changes")
        assert sorted(
            (ch["type"], ch.get("page", ch.get("file", {})).get("title"))
            for ch in r.json()["changes"]
        ) == [("file_created", None), ("page_created", "FAQ"), ("page_edited", "Welcome")], r.text
        r = await c.post(f"{base}/merge")
        assert r.json()["result"] == "merge", r.text
        (on_main,) = (await c.get(f"/v1/spaces/{space_id}/content/files")).json()["items"]
    pages = await _pages(product, space_id)
    assert sorted((p["title"], p["id"]) for p in pages if p["title"] in ("News", "FAQ")) == [
        ("FAQ", faq),
        ("News", news),
    ]
    assert on_main["id"] == faq_png["id"]
    assert await _markdown(product, space_id, welcome["id"]) == "Hi, you."
    assert await _markdown(product, space_id, step["id"]) == "1st."
    assert len(pages) == 5


async def test_a_branch_fast_forwarded_to_main_takes_nothing_of_it_for_its_own(
    product: Product, tmp_path: Path
) -> None:
    """A change request opened by the API holds main as it was; its branch fast-forwarded to
    a newer main (no merge commit) and edited: only the edit is the change request's."""
    org, space_id = await _space(product, "Fast-forward")
    async with product.client(product.token) as c:
        r = await c.post(f"/v1/spaces/{space_id}/change-requests", json={"subject": "Later"})
        number = r.json()["number"]
        changes = [{"operation": "insert_page", "title": "News", "document": {"markdown": "N"}}]
        r = await c.post(f"/v1/spaces/{space_id}/content", json={"changes": changes})
        assert r.status_code == 200, r.text
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    git("checkout", "-b", "mine", f"origin/change-requests/{number}", cwd=w)
    git("merge", "--ff-only", "origin/main", cwd=w)
    (w / "README.md").write_text((w / "README.md").read_text().replace("Hello.", "Hey."))
    git("commit", "-am", "Hey", cwd=w)
    assert (
        f"updated change request #{number}"
        in git("push", "origin", f"mine:change-requests/{number}", cwd=w).stderr
    )
    async with product.client(product.token) as c:
        crs = (await c.get(f"/v1/spaces/{space_id}/change-requests")).json()["items"]
        r = await c.get(f"/v1/spaces/{space_id}/change-requests/{crs[0]['id']}/changes")
    assert [(ch["type"], ch["page"]["title"]) for ch in r.json()["changes"]] == [
        ("page_edited", "Welcome")
    ], r.text


async def test_a_heading_under_the_title_line_is_content(product: Product, tmp_path: Path) -> None:
    """A page file states its title on its first line; a `# heading` added under it opens the
    body and renames nothing (a reviewer's finding: the heading became the title)."""
    org, space_id = await _space(product, "Headings")
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    step = w / "guide/step-one.md"
    step.write_text(step.read_text().replace("# Step one\n\n", "# Step one\n\n# Section\n\n"))
    git("commit", "-am", "A section", cwd=w)
    git("push", "origin", "main", cwd=w)
    page = next(p for p in await _pages(product, space_id) if p["path"].endswith("step-one"))
    assert page["title"] == "Step one"
    assert await _markdown(product, space_id, page["id"]) == "# Section\n\nFirst."


async def test_refused_pushes_say_why_and_change_nothing(product: Product, tmp_path: Path) -> None:
    org, space_id = await _space(product, "Refusals")
    remote = _remote(product, org, space_id, product.token)
    git("clone", remote, "a", cwd=tmp_path)
    git("clone", remote, "b", cwd=tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    before = await _pages(product, space_id)

    (a / "notes.txt").write_text("x")
    (a / "README.md").write_text((a / "README.md").read_text() + "\nMore.")
    git("add", "-A", cwd=a)
    git("commit", "-m", "Notes", cwd=a)
    refused = git("push", "origin", "main", cwd=a, ok=False)
    assert refused.returncode != 0
    assert "notes.txt: forbidden path" in refused.stderr
    git("rm", "-q", "notes.txt", cwd=a)
    (a / "SUMMARY.md").write_text("# Table of contents\n\nnot a list\n")
    git("commit", "-am", "Break the summary", cwd=a)
    refused = git("push", "origin", "main", cwd=a, ok=False)
    assert "SUMMARY.md line 3: expected" in refused.stderr
    assert await _pages(product, space_id) == before

    # A file past the bound (incompressible, so the push's body is that large too).
    (a / "SUMMARY.md").write_text((b / "SUMMARY.md").read_text())
    (a / ".gitbook/assets").mkdir(parents=True)
    (a / ".gitbook/assets/big.bin").write_bytes(os.urandom(5 * 1024 * 1024 + 1))
    git("add", "-A", cwd=a)
    git("commit", "-m", "A big file", cwd=a)
    refused = git("push", "origin", "main", cwd=a, ok=False)
    assert ".gitbook/assets/big.bin: 5242881 bytes, more than 5242880" in refused.stderr
    assert await _pages(product, space_id) == before

    # Someone else pushes first: a push from behind is not a fast-forward.
    (b / "README.md").write_text((b / "README.md").read_text() + "\nFrom b.")
    git("commit", "-am", "From b", cwd=b)
    git("push", "origin", "main", cwd=b)
    git("reset", "-q", "--hard", "HEAD~3", cwd=a)
    (a / "README.md").write_text((a / "README.md").read_text() + "\nFrom a.")
    git("commit", "-am", "From a", cwd=a)
    refused = git("push", "--force", "origin", "main", cwd=a, ok=False)
    assert refused.returncode != 0
    assert "! [remote rejected] main -> main (non-fast-forward: fetch first" in refused.stderr
    assert len(await _pages(product, space_id)) == len(before)


async def test_a_push_larger_than_an_api_body(product: Product, tmp_path: Path) -> None:
    """Files under the 5 MiB bound make a pack past the API's 8 MiB body cap: the push has its
    own (DOCSHELF_GIT_PUSH_MAX_BYTES); a tester's push of three 3 MB files got a bare 413."""
    org, space_id = await _space(product, "Large push")
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    (w / ".gitbook/assets").mkdir(parents=True)
    for n in range(3):  # incompressible: the pack is as large as the files
        (w / f".gitbook/assets/part-{n}.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    git("add", "-A", cwd=w)
    git("commit", "-m", "Three large files", cwd=w)
    assert "applied to main" in git("push", "origin", "main", cwd=w).stderr
    async with product.client(product.token) as c:
        r = await c.get(f"/v1/spaces/{space_id}/content/files")
    assert sorted((f["name"], f["size"]) for f in r.json()["items"]) == [
        (f"part-{n}.bin", 3 * 1024 * 1024) for n in range(3)
    ]


async def test_images_written_as_gitbook_writes_them_are_the_spaces_files(
    product: Product, tmp_path: Path
) -> None:
    """`../.gitbook/assets/x.png` from a page in a folder, `.gitbook/assets/x.png` from the
    root: the file the push adds, or one the space has, not a URL nothing serves (a tester's
    finding: the reader and the PDF showed the alt text)."""
    org, space_id = await _space(product, "Pictures")
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    (w / ".gitbook/assets").mkdir(parents=True)
    (w / ".gitbook/assets/diagram one.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 64)
    step = w / "guide/step-one.md"
    step.write_text(step.read_text() + "\n![Diagram](../.gitbook/assets/diagram%20one.png)\n")
    readme = w / "README.md"
    readme.write_text(readme.read_text() + "\n[The diagram](.gitbook/assets/diagram%20one.png)\n")
    git("add", "-A", cwd=w)
    git("commit", "-m", "A diagram", cwd=w)
    git("push", "origin", "main", cwd=w)
    async with product.client(product.token) as c:
        (diagram,) = (await c.get(f"/v1/spaces/{space_id}/content/files")).json()["items"]
    pages = {p["title"]: p["id"] for p in await _pages(product, space_id)}
    step_text = await _markdown(product, space_id, pages["Step one"])
    assert step_text.endswith(f"\n![Diagram](/files/{diagram['id']})\n"), step_text
    welcome_text = await _markdown(product, space_id, pages["Welcome"])
    assert welcome_text.endswith(f"\n[The diagram](/files/{diagram['id']})\n"), welcome_text
    # The file the space has, named again from an edited page.
    git("pull", "--ff-only", cwd=w)
    guide = w / "guide/README.md"
    guide.write_text(guide.read_text() + "\n![Again](/.gitbook/assets/diagram%20one.png)\n")
    git("commit", "-am", "Again", cwd=w)
    git("push", "origin", "main", cwd=w)
    assert (await _markdown(product, space_id, pages["Guide"])).endswith(
        f"![Again](/files/{diagram['id']})\n"
    )


async def test_access_is_the_apis(product: Product, tmp_path: Path) -> None:
    org, space_id = await _space(product, "Private")
    async with httpx.AsyncClient() as c:
        r = await c.get(
            f"{product.base}/git/{org}/{space_id}.git/info/refs",
            params={"service": "git-upload-pack"},
        )
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Basic")
    done = git("clone", _remote(product, org, space_id), "anon", cwd=tmp_path, ok=False)
    assert done.returncode != 0 and "could not read Username" in done.stderr
    # A user of another organization: no view right is a missing space.
    product.cli("user", "create", "--email", "outsider@example.com")
    outsider = (
        product.cli("token", "create", "--user", "outsider@example.com").strip().splitlines()[-1]
    )
    async with httpx.AsyncClient(auth=("x", outsider)) as c:
        r = await c.get(
            f"{product.base}/git/{org}/{space_id}.git/info/refs",
            params={"service": "git-upload-pack"},
        )
        missing = await c.get(
            f"{product.base}/git/{org}/nosuchspace.git/info/refs",
            params={"service": "git-upload-pack"},
        )
    assert (r.status_code, r.text) == (
        missing.status_code,
        missing.text.replace("nosuchspace", space_id),
    )
    assert r.status_code == 404


async def test_main_under_merge_rules_opens_a_change_request(
    product: Product, tmp_path: Path
) -> None:
    org, space_id = await _space(product, "Reviewed")
    rules = {"type": "rules", "rules": [{"rule": "require_at_least_one_review"}]}
    async with product.client(product.token) as c:
        r = await c.patch(f"/v1/spaces/{space_id}", json={"mergeRules": rules})
        assert r.status_code == 200, r.text
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    (w / "README.md").write_text((w / "README.md").read_text().replace("Hello.", "Hi."))
    # A new page without its id line: the space keeps the files in a commit on top of this one.
    (w / "faq.md").write_text("# FAQ\n\nAsk.\n")
    (w / "SUMMARY.md").write_text((w / "SUMMARY.md").read_text() + "* [FAQ](faq.md)\n")
    git("add", "-A", cwd=w)
    git("commit", "-m", "Shorter greeting", cwd=w)
    pushed = git("push", "origin", "main", cwd=w)
    said = "main is under review: opened change request #1 (branch change-requests/1)"
    assert said in pushed.stderr
    welcome = next(p for p in await _pages(product, space_id) if p["title"] == "Welcome")
    assert await _markdown(product, space_id, welcome["id"]) == "Hello."
    async with product.client(product.token) as c:
        crs = (await c.get(f"/v1/spaces/{space_id}/change-requests")).json()["items"]
    assert [(cr["subject"], cr["status"]) for cr in crs] == [("Shorter greeting", "open")]
    # The change request is a branch of its own; main did not move.
    git("fetch", cwd=w)
    refs = git("ls-remote", "origin", cwd=w).stdout
    assert "refs/heads/change-requests/1" in refs
    assert git("rev-parse", "origin/main", cwd=w).stdout != git("rev-parse", "HEAD", cwd=w).stdout
    # The next push to main holds those commits again: they go on in the same change request,
    # with the new commit's change on top.
    (w / "README.md").write_text((w / "README.md").read_text().replace("Hi.", "Hi there."))
    git("commit", "-am", "Warmer greeting", cwd=w)
    pushed = git("push", "origin", "main", cwd=w)
    said = "main is under review: updated change request #1 (branch change-requests/1)"
    assert said in pushed.stderr
    again = git("push", "origin", "main", cwd=w)
    held = "main is under review: change request #1 (branch change-requests/1) holds these"
    assert held in again.stderr
    async with product.client(product.token) as c:
        crs = (await c.get(f"/v1/spaces/{space_id}/change-requests")).json()["items"]
        r = await c.get(
            f"/v1/spaces/{space_id}/change-requests/{crs[0]['id']}/content/page/{welcome['id']}",
            params={"format": "markdown"},
        )
    assert [(cr["number"], cr["status"]) for cr in crs] == [(1, "open")]
    assert r.json()["markdown"] == "Hi there."
    async with product.client(product.token) as c:
        r = await c.get(f"/v1/spaces/{space_id}/change-requests/{crs[0]['id']}/content")
    assert [p["title"] for p in r.json()["pages"]] == ["Welcome", "Guide", "FAQ"]
    assert [p["title"] for p in await _pages(product, space_id)] == ["Welcome", "Guide", "Step one"]
    assert await _markdown(product, space_id, welcome["id"]) == "Hello."
    # Unrelated commits on main's head are a change request of their own.
    git("fetch", cwd=w)
    git("reset", "--hard", "origin/main", cwd=w)
    (w / "README.md").write_text((w / "README.md").read_text().replace("Hello.", "Hey."))
    git("commit", "-am", "Another greeting", cwd=w)
    pushed = git("push", "origin", "main", cwd=w)
    assert "main is under review: opened change request #2" in pushed.stderr
    # #2 is edited in the app; a push of main on top of its commit would undo that: refused.
    async with product.client(product.token) as c:
        crs = (await c.get(f"/v1/spaces/{space_id}/change-requests")).json()["items"]
        second = next(cr for cr in crs if cr["number"] == 2)
        edit = {"operation": "update_page", "page": welcome["id"], "title": "Welcome"}
        edit["document"] = {"markdown": "Hey.\n\nA reviewer's line."}
        r = await c.post(
            f"/v1/spaces/{space_id}/change-requests/{second['id']}/content",
            json={"changes": [edit]},
        )
        assert r.status_code == 200, r.text
    (w / "README.md").write_text((w / "README.md").read_text().replace("Hey.", "Hey you."))
    git("commit", "-am", "Longer greeting", cwd=w)
    refused = git("push", "origin", "main", cwd=w, ok=False)
    assert refused.returncode != 0
    assert (
        "main is under review: change request #2 (branch change-requests/2) has changed since"
        " these commits; fetch its branch and push your commits there" in refused.stderr
    )
    async with product.client(product.token) as c:
        r = await c.get(
            f"/v1/spaces/{space_id}/change-requests/{second['id']}/content/page/{welcome['id']}",
            params={"format": "markdown"},
        )
    assert r.json()["markdown"] == "Hey.\n\nA reviewer's line."
    # The same commits again, with nothing after them: nothing to refuse, nothing applied.
    git("reset", "--hard", "HEAD~1", cwd=w)
    again = git("push", "origin", "main", cwd=w)
    assert "change request #2 (branch change-requests/2) holds these commits" in again.stderr
    # A change request of a named branch stays that branch's: main holding its commits is a
    # change request of its own.
    git("fetch", cwd=w)
    git("checkout", "-b", "rework", "origin/main", cwd=w)
    (w / "README.md").write_text((w / "README.md").read_text().replace("Hello.", "Howdy."))
    git("commit", "-am", "Rework the greeting", cwd=w)
    assert "opened change request #3" in git("push", "origin", "rework", cwd=w).stderr
    git("checkout", "-B", "main", "rework", cwd=w)
    (w / "README.md").write_text((w / "README.md").read_text().replace("Howdy.", "Howdy all."))
    git("commit", "-am", "On main", cwd=w)
    pushed = git("push", "-f", "origin", "main", cwd=w)
    assert "main is under review: opened change request #4" in pushed.stderr
    # The server's rework is still the commit pushed to it.
    served = git("ls-remote", "origin", "refs/heads/rework", cwd=w).stdout.split()[0]
    assert served == git("rev-parse", "origin/rework", cwd=w).stdout.strip()
    assert served == git("rev-parse", "main~1", cwd=w).stdout.strip()


async def test_the_export_pushed_into_an_empty_space_is_the_space(
    product: Product, tmp_path: Path
) -> None:
    org, source = await _space(product, "Source")
    async with product.client(product.token) as c:
        r = await c.post(f"/v1/orgs/{org}/spaces", json={"title": "Copy", "editMode": "live"})
        assert r.status_code == 201, r.text
        copy = r.json()["id"]
    git("clone", _remote(product, org, source, product.token), "source", cwd=tmp_path)
    git("clone", _remote(product, org, copy, product.token), "copy", cwd=tmp_path)
    src, dst = tmp_path / "source", tmp_path / "copy"
    for path in src.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(src).parts[:1]:
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    git("add", "-A", cwd=dst)
    git("commit", "-m", "Import the handbook", cwd=dst)
    git("push", "origin", "main", cwd=dst)

    def shape(pages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [
            (p["title"], p["slug"], p.get("description"), len(p.get("pages") or [])) for p in pages
        ]

    source_pages, copy_pages = await _pages(product, source), await _pages(product, copy)
    assert shape(copy_pages) == shape(source_pages)
    for a, b in zip(source_pages, copy_pages, strict=True):
        assert await _markdown(product, copy, b["id"]) == await _markdown(product, source, a["id"])


async def test_files_and_reusable_contents_over_git(product: Product, tmp_path: Path) -> None:
    org, space_id = await _space(product, "Assets")
    git("clone", _remote(product, org, space_id, product.token), "w", cwd=tmp_path)
    w = tmp_path / "w"
    (w / ".gitbook/assets").mkdir(parents=True)
    (w / ".gitbook/assets/notes.txt").write_bytes(b"plain notes\n")
    (w / ".gitbook/includes").mkdir(parents=True)
    (w / ".gitbook/includes/warning.md").write_text("# Careful\n\nMind the step.\n")
    git("add", "-A", cwd=w)
    git("commit", "-m", "A file and a reusable content", cwd=w)
    git("push", "origin", "main", cwd=w)
    async with product.client(product.token) as c:
        revision = (await c.get(f"/v1/spaces/{space_id}/content")).json()
    assert [(f["name"], f["contentType"], f["size"]) for f in revision["files"]] == [
        ("notes.txt", "text/plain", 12)
    ]
    [reusable] = revision["reusableContents"]
    assert reusable["title"] == "Careful"
    git("pull", "--ff-only", cwd=w)
    assert (w / ".gitbook/assets/notes.txt").read_bytes() == b"plain notes\n"
    assert (w / ".gitbook/includes/Careful.md").read_text() == (
        f"---\nid: {reusable['id']}\n---\n\n# Careful\n\nMind the step.\n"
    )
    assert not (w / ".gitbook/includes/warning.md").exists()
    assert git("status", "--porcelain", cwd=w).stdout == ""

    # A file changed keeps its id (links to it still lead to it); a file deleted goes.
    [notes] = revision["files"]
    (w / ".gitbook/assets/notes.txt").write_bytes(b"plain notes, longer\n")
    (w / ".gitbook/assets/old.txt").write_bytes(b"old\n")
    git("add", "-A", cwd=w)
    git("commit", "-m", "Change a file, add another", cwd=w)
    git("push", "origin", "main", cwd=w)
    async with product.client(product.token) as c:
        files = (await c.get(f"/v1/spaces/{space_id}/content")).json()["files"]
    assert [(f["id"], f["name"], f["size"]) for f in files if f["name"] == "notes.txt"] == [
        (notes["id"], "notes.txt", 20)
    ]
    assert sorted(f["name"] for f in files) == ["notes.txt", "old.txt"]
    git("rm", "-q", ".gitbook/assets/old.txt", cwd=w)
    git("commit", "-m", "Drop a file", cwd=w)
    git("push", "origin", "main", cwd=w)
    async with product.client(product.token) as c:
        files = (await c.get(f"/v1/spaces/{space_id}/content")).json()["files"]
    assert [(f["id"], f["name"]) for f in files] == [(notes["id"], "notes.txt")]
    git("pull", "--ff-only", cwd=w)
    assert git("status", "--porcelain", cwd=w).stdout == ""
    assert (w / ".gitbook/assets/notes.txt").read_bytes() == b"plain notes, longer\n"
