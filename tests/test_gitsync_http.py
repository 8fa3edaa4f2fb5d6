"""Git Sync over HTTP in-process (the protocol's first step, the ref advertisement): access
rules and the trees built from a parent's tree against trees built whole."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.gitsync import service
from docshelf.kit.lru import counted
from tests import factories


def _main(advertisement: bytes) -> str:
    for line in advertisement.split(b"\n"):
        if line.rstrip().endswith(b"refs/heads/main") or b"refs/heads/main\x00" in line:
            return line[4:44].decode()
    raise AssertionError(advertisement)


async def _refs(client: httpx.AsyncClient, org: str, space: str, token: str) -> httpx.Response:
    return await client.get(
        f"/git/{org}/{space}.git/info/refs",
        params={"service": "git-upload-pack"},
        auth=("anyone", token),
    )


async def test_a_tree_built_from_its_parents_is_the_tree_built_whole(
    client: httpx.AsyncClient, db: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = await factories.user(db)
    org = await factories.organization(db, owner=owner)
    space = await factories.api_space(client, org, owner, title="Docs", editMode="live")
    changes = [
        {"operation": "insert_page", "ref": "a", "title": "A", "document": {"markdown": "a"}},
        {
            "operation": "insert_page",
            "ref": "b",
            "into": "a",
            "title": "B",
            "document": {"markdown": "b"},
        },
    ]
    r = await client.post(
        f"/v1/spaces/{space['id']}/content", json={"changes": changes}, headers=owner.headers
    )
    assert r.status_code == 200, r.text
    b = r.json()["changes"][1]["page"]["id"]
    first = await _refs(client, org, space["id"], owner.token)
    assert first.status_code == 200, first.text
    edits = [
        # In place: the next tree is made from this one's.
        {
            "operation": "update_page",
            "page": b,
            "document": {"markdown": "b, again"},
            "description": "Bee",
        },
        # The structure: made whole.
        {"operation": "update_page", "page": b, "title": "Bee"},
    ]
    heads = []
    for edit in edits:
        r = await client.post(
            f"/v1/spaces/{space['id']}/content", json={"changes": [edit]}, headers=owner.headers
        )
        assert r.status_code == 200, r.text
        incremental = await _refs(client, org, space["id"], owner.token)
        with monkeypatch.context() as m:
            # Nothing kept: every tree is laid out whole, from its own revision alone.
            m.setattr(service, "_TREES", counted(0))
            service._BLOBS.clear()
            service._HISTORIES.clear()
            whole = await _refs(client, org, space["id"], owner.token)
            service._HISTORIES.clear()
        assert _main(incremental.content) == _main(whole.content)
        heads.append(_main(whole.content))
    assert len({_main(first.content), *heads}) == 3


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (None, 401),
        ("Basic !!!", 401),
        ("Basic " + "YW55b25lOg==", 401),  # anyone: (no password)
        ("Digest abc", 401),
    ],
)
async def test_credentials_git_is_asked_for(
    client: httpx.AsyncClient, db: AsyncEngine, authorization: str | None, status: int
) -> None:
    owner = await factories.user(db)
    org = await factories.organization(db, owner=owner)
    space = await factories.api_space(client, org, owner, title="Docs")
    headers = {"Authorization": authorization} if authorization else {}
    r = await client.get(
        f"/git/{org}/{space['id']}.git/info/refs",
        params={"service": "git-upload-pack"},
        headers=headers,
    )
    assert r.status_code == status
    assert r.headers["www-authenticate"] == 'Basic realm="Docshelf", charset="UTF-8"'


async def test_reading_is_cloning_and_editing_is_pushing(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    owner, reader, stranger = [await factories.user(db) for _ in range(3)]
    org = await factories.organization(db, owner=owner)
    await factories.member(db, org=org, who=reader, role="read")
    space = await factories.api_space(client, org, owner, title="Docs")
    url = f"/git/{org}/{space['id']}.git/info/refs"

    async def status(who: factories.Who, wanted: str, at: str = url) -> tuple[int, str]:
        r = await client.get(at, params={"service": wanted}, auth=("x", who.token))
        return r.status_code, r.headers["content-type"]

    assert await status(owner, "git-receive-pack") == (
        200,
        "application/x-git-receive-pack-advertisement",
    )
    assert await status(reader, "git-upload-pack") == (
        200,
        "application/x-git-upload-pack-advertisement",
    )
    assert (await status(reader, "git-receive-pack"))[0] == 403
    # No view right: exactly a missing space, or a space of another organization.
    missing = await client.get(
        f"/git/{org}/nope.git/info/refs",
        params={"service": "git-upload-pack"},
        auth=("x", stranger.token),
    )
    hidden = await client.get(
        url, params={"service": "git-upload-pack"}, auth=("x", stranger.token)
    )
    assert (hidden.status_code, hidden.text) == (404, missing.text) == (404, "Space not found\n")
    elsewhere = await factories.organization(db, owner=owner, title="Other")
    assert (await status(owner, "git-upload-pack", url.replace(org, elsewhere)))[0] == 404
    # The dumb protocol is not served.
    r = await client.get(url, auth=("x", owner.token))
    assert r.status_code == 403


async def test_a_gzip_body_is_inflated_within_the_bound(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Bodies are read before the caller is known: a few KiB of gzip that inflate past the
    push's bound are refused unread (413), broken gzip is a 400, and good gzip goes on to the
    credentials check."""
    import gzip

    owner = await factories.user(db)
    org = await factories.organization(db, owner=owner)
    space = await factories.api_space(client, org, owner, title="Docs")
    url = f"/git/{org}/{space['id']}.git/git-receive-pack"
    bound = 32 * 1024 * 1024
    bomb = gzip.compress(b"\0" * (bound + 1))
    assert len(bomb) < 64 * 1024
    for body, status, said in (
        (bomb, 413, f"Request body exceeds {bound} bytes once inflated\n"),
        (gzip.compress(b"0000")[:-8], 400, "The request body is not valid gzip\n"),
        (b"not gzip", 400, "The request body is not valid gzip\n"),
        (
            gzip.compress(b"0000"),
            401,
            "Authentication required: use an API token as the password\n",
        ),
    ):
        r = await client.post(url, content=body, headers={"Content-Encoding": "gzip"})
        assert (r.status_code, r.text) == (status, said)
