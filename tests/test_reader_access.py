"""What the published reader shows a signed-in member, a visitor and a browser with another
organization's session: exactly what the API's one permission resolver allows (issue: the
reader served a `read` member a private space the API refused them)."""

from __future__ import annotations

import base64
import time
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit import expressions
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error
from tests.reader_site import pages
from tests.test_sso import Login

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    )
).decode()


async def _space_with_file(
    client: httpx.AsyncClient, org: str, admin: Who, title: str, words: str
) -> tuple[dict[str, Any], str, str]:
    """A space created the way GitBook's client creates one (no visibility), a page that shows
    an image file, and the file's id."""
    r = await client.post(
        f"/v1/orgs/{org}/spaces", json={"title": title, "editMode": "live"}, headers=admin.headers
    )
    assert r.status_code == 201, r.text
    space = r.json()
    assert (space["visibility"], space["defaultLevel"]) == ("private", "inherit")
    r = await client.post(
        f"/v1/spaces/{space['id']}/content?compat=false",
        json={
            "changes": [
                {
                    "operation": "insert_files",
                    "files": [{"name": "pic.png", "base64": PNG, "contentType": "image/png"}],
                }
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    file_id = r.json()["insertedFiles"][0]["id"]
    (page,) = await pages(
        client, space["id"], admin, (f"{title} page", f"{words}\n\n![pic](pic.png)\n")
    )
    return space, page, file_id


async def _published(
    client: httpx.AsyncClient, org: str, admin: Who, title: str, visibility: str, space: str
) -> tuple[str, str]:
    """A site of `visibility` showing `space`, published: (its API URL, its reader address)."""
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": title, "visibility": visibility, "spaces": [space]},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    site = r.json()["id"]
    url = f"/v1/orgs/{org}/sites/{site}"
    r = await client.post(f"{url}/publish", headers=admin.headers)
    assert r.status_code == 200, r.text
    return url, f"/{org}/{site}/"


async def test_a_member_reads_only_what_the_api_lets_them(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    open_space, _, open_file = await _space_with_file(
        client, org, admin, "Handbook", "The zanzibar handbook."
    )
    secret, _, secret_file = await _space_with_file(
        client, org, admin, "Secrets", "The zanzibar launch codes."
    )
    # Nobody gets a role on it from the organization: only grants open it.
    r = await client.patch(
        f"/v1/spaces/{secret['id']}", json={"defaultLevel": None}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    # A site no visitor can open (share links only), publishing both spaces, the secret one as
    # its default content.
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": "Internal", "visibility": "share-link", "spaces": [secret["id"]]},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    site = r.json()
    url = f"/v1/orgs/{org}/sites/{site['id']}"
    r = await client.post(
        f"{url}/site-spaces", json={"spaceId": open_space["id"]}, headers=admin.headers
    )
    assert r.status_code == 201, r.text
    handbook_path = r.json()["path"]
    assert (await client.post(f"{url}/publish", headers=admin.headers)).status_code == 200
    address = f"/{org}/{site['id']}/"

    login = Login(client, org, admin)
    await login.setup(defaultRole="read")
    r = await login.post(login.idp.respond(await login.start(), "reader@example.com"))
    assert r.status_code == 303, r.text
    r = await client.post("/sso/token")
    assert r.status_code == 201, r.text
    member = {"Authorization": f"Bearer {r.json()['token']}"}

    # The API: the secret space is a 404, the other one reads.
    r = await client.get(f"/v1/spaces/{secret['id']}", headers=member)
    assert r.status_code == 404 and r.json() == error(404, "Space not found")
    r = await client.get(f"/v1/spaces/{open_space['id']}", headers=member)
    assert r.status_code == 200

    # The reader, with the member's session: the same.
    r = await client.get(f"{address}{handbook_path}/")
    assert r.status_code == 200, r.text
    assert "The zanzibar handbook." in r.text and "launch codes" not in r.text
    assert r.headers["cache-control"] == "private, no-cache"
    assert r.headers["vary"] == "Cookie"
    r = await client.get(f"{address}{handbook_path}/handbook-page/~files/{open_file}")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    # The site's address shows the first variant they may read, not the default they may not.
    r = await client.get(address)
    assert r.status_code == 200, r.text
    assert "The zanzibar handbook." in r.text and "launch codes" not in r.text
    for path in (
        f"{address}secrets-page",
        f"{address}secrets-page/~files/{secret_file}",
        f"{address}{handbook_path}/handbook-page/~files/{secret_file}",
    ):
        r = await client.get(path)
        assert r.status_code == 404, (path, r.text)
        assert "launch codes" not in r.text
    r = await client.get(f"{address}~search", params={"q": "zanzibar"})
    assert r.status_code == 200, r.text
    assert (r.headers["cache-control"], r.headers["vary"]) == ("private, no-cache", "Cookie")
    assert "handbook" in r.text and "launch codes" not in r.text and "Secrets" not in r.text

    # The published site through the API: neither the space nor its id.
    r = await client.get(f"{url}/published", headers=member)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["site"]["defaultSpace"] == open_space["id"]
    assert secret["id"] not in r.text

    # An organization admin, signed in the same way, reads both.
    r = await client.post(f"/v1/user/saml/{login.provider}/link", headers=admin.headers)
    code = r.json()["url"].split("?link=", 1)[1]
    r = await login.post(login.idp.respond(await login.start(link=code), admin.email))
    assert r.status_code == 303, r.text
    r = await client.get(f"{address}secrets-page")
    assert r.status_code == 200 and "launch codes" in r.text


async def test_a_session_counts_only_in_its_own_organization(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A user who is a member of two organizations and signs in through one of them is a
    visitor on the other's sites."""
    home, (home_admin,) = await factories.org_with_members(db)
    other, (other_admin, someone) = await factories.org_with_members(db, "admin")
    space, _, _ = await _space_with_file(client, other, other_admin, "Plans", "Roadmap notes.")
    _, address = await _published(client, other, other_admin, "Plans", "share-link", space["id"])
    await factories.member(db, org=home, who=someone, role="read")
    login = Login(client, home, home_admin)
    await login.setup()
    r = await client.post(f"/v1/user/saml/{login.provider}/link", headers=someone.headers)
    code = r.json()["url"].split("?link=", 1)[1]
    r = await login.post(login.idp.respond(await login.start(link=code), someone.email))
    assert r.status_code == 303, r.text
    assert "docshelf_session" in client.cookies
    r = await client.get(address)
    assert r.status_code == 404
    # With a session of their own organization's SSO, the same page reads.
    their = Login(client, other, other_admin)
    await their.setup()
    r = await client.post(f"/v1/user/saml/{their.provider}/link", headers=someone.headers)
    code = r.json()["url"].split("?link=", 1)[1]
    r = await their.post(their.idp.respond(await their.start(link=code), someone.email))
    assert r.status_code == 303, r.text
    r = await client.get(address)
    assert r.status_code == 200 and "Roadmap notes." in r.text


async def test_a_public_site_is_shared_only_without_claims(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """What a visitor's claims choose must never land in a shared cache."""
    org, (admin,) = await factories.org_with_members(db)
    space, _, _ = await _space_with_file(client, org, admin, "Guide", "Hello.")
    url, address = await _published(client, org, admin, "Guide", "public", space["id"])
    r = await client.get(address)
    assert r.status_code == 200, r.text
    assert (r.headers["cache-control"], r.headers["vary"]) == ("public, no-cache", "Cookie")
    # A visitor token signed with the site's key brings claims: the answer is theirs alone.
    key = (await client.get(f"{url}/publishing/auth", headers=admin.headers)).json()["privateKey"]
    claims = jwt.encode({"plan": "pro", "exp": time.time() + 3600}, key, algorithm="HS256")
    r = await client.get(address, params={"jwt_token": claims})
    assert r.status_code == 303, r.text  # the token moves into a cookie, out of the URL
    r = await client.get(address)
    assert r.status_code == 200, r.text
    assert (r.headers["cache-control"], r.headers["vary"]) == ("private, no-cache", "Cookie")


async def test_conditions_are_parsed_once_and_evaluated_once_per_visitor_kind(
    client: httpx.AsyncClient, db: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site of pages with long conditions cost seconds of the event loop per anonymous
    search, every condition parsed again for every page on every request. Now each text is
    parsed once per process and each revision's conditions are evaluated once per kind of
    visitor, however many pages and requests."""
    org, (admin,) = await factories.org_with_members(db)
    r = await client.post(
        f"/v1/orgs/{org}/spaces", json={"title": "Guide", "editMode": "live"}, headers=admin.headers
    )
    space = r.json()
    count = 40
    padding = "x" * 900
    changes = [
        {
            "operation": "insert_page",
            "title": f"Page {n}",
            "document": {"markdown": f"Zanzibar fact number {n}.\n"},
            "condition": f'visitor.claims.plan == "{padding}{n}" || !visitor.claims.plan',
        }
        for n in range(count)
    ]
    r = await client.post(
        f"/v1/spaces/{space['id']}/content", json={"changes": changes}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    _, address = await _published(client, org, admin, "Guide", "public", space["id"])

    parsed: list[str] = []
    evaluated: list[str] = []
    real_parse, real_holds = expressions.parse, expressions.holds

    def counting_parse(text: str, *args: Any) -> Any:
        parsed.append(text)
        return real_parse(text, *args)

    def counting_holds(node: Any, scope: Any) -> bool:
        evaluated.append(repr(node)[:40])
        return real_holds(node, scope)

    expressions._parsed.cache_clear()
    monkeypatch.setattr(expressions, "parse", counting_parse)
    monkeypatch.setattr(expressions, "holds", counting_holds)
    for _ in range(3):
        r = await client.get(f"{address}~search", params={"q": "zanzibar fact"})
        assert r.status_code == 200, r.text
        assert r.text.count("Zanzibar fact number") >= 10
        r = await client.get(f"{address}page-7")
        assert r.status_code == 200 and "Zanzibar fact number 7." in r.text
    assert len(parsed) == count, len(parsed)
    assert len(evaluated) <= count, len(evaluated)


async def test_user_files_never_run_as_script_or_page(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """SVG with a parameter on its type was served inline, and uploaded JavaScript as
    JavaScript from our own origin: both are now bytes to download."""
    org, (admin,) = await factories.org_with_members(db)
    space, _, png = await _space_with_file(client, org, admin, "Files", "Some files.")
    svg = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg"><script>1</script></svg>')
    files = [
        {"name": "x.svg", "base64": svg.decode(), "contentType": "image/svg+xml; charset=utf-8"},
        {
            "name": "app.js",
            "base64": base64.b64encode(b"alert(1)").decode(),
            "contentType": "text/javascript",
        },
        {"name": "p.png", "base64": PNG, "contentType": "image/PNG; charset=binary"},
    ]
    r = await client.post(
        f"/v1/spaces/{space['id']}/content?compat=false",
        json={"changes": [{"operation": "insert_files", "files": files}]},
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    ids = {f["name"]: f["id"] for f in r.json()["insertedFiles"]}
    _, address = await _published(client, org, admin, "Files", "public", space["id"])
    page = f"{address}files-page"
    r = await client.get(f"/v1/spaces/{space['id']}/content/files", headers=admin.headers)
    downloads = {f["name"]: f["downloadURL"].removeprefix(BASE) for f in r.json()["items"]}
    for name, inline in (("x.svg", False), ("app.js", False), ("p.png", True), ("pic.png", True)):
        for url in (downloads[name], f"{page}/~files/{ids.get(name, png)}"):
            r = await client.get(url)
            assert r.status_code == 200, (name, url, r.text)
            kind = "image/png" if inline else "application/octet-stream"
            assert r.headers["content-type"] == kind, (name, url)
            assert r.headers["content-disposition"].startswith(
                "inline" if inline else "attachment"
            ), (name, url)
            assert r.headers["x-content-type-options"] == "nosniff"
            assert "sandbox" in r.headers["content-security-policy"]
