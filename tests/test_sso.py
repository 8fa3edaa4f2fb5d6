"""Single sign-on: the SAML provider operations under /v1, and real logins through the service
provider (/sso/...) against an identity provider built with pysaml2 in the test process."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from saml2 import BINDING_HTTP_POST
from saml2.md import entity_descriptor_from_string
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.auth.service import create_token
from docshelf.config import Settings
from docshelf.kit.db import unit_of_work
from docshelf.member import repository as member_repository
from docshelf.user import repository as user_repository
from tests import factories
from tests.conftest import BASE
from tests.helpers import TS, cli_env, error, run_cli, second_app, snapshot, team_body
from tests.saml_idp import (
    IdentityProvider,
    KeyPair,
    bare_base64,
    encode,
    forged_sibling,
    key_pair,
    tampered,
    wrapped_in_advice,
)

IDP_ENTITY = "https://idp.example.test/metadata"
SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}


async def begin(
    client: httpx.AsyncClient,
    provider: str,
    next_path: str | None = None,
    link: str | None = None,
) -> httpx.Response:
    """A browser opening a start URL: the page that names the identity provider, then its
    Continue button (a same-origin form post). The post's answer."""
    params = {"next": next_path} if next_path else {}
    if link is not None:
        params["link"] = link
    start = f"/sso/saml/{provider}/start"
    r = await client.get(start, params=params)
    assert r.status_code == 200, r.text
    assert "You are about to leave for" in r.text
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', r.text))
    return await client.post(start, data=form, headers=SAME_ORIGIN)


IDP_SSO = "https://idp.example.test/sso"
KEYS = key_pair()


def provider_body(
    provider_id: str,
    org_id: str,
    *,
    label: str = "Okta",
    sso_url: str = "",
    entity_id: str = "",
    certificate: str = "",
    default_role: str | None = None,
    default_team: dict[str, Any] | None = None,
) -> dict[str, Any]:
    root = f"{BASE}/sso/saml/{provider_id}"
    body: dict[str, Any] = {
        "object": "saml-provider",
        "id": provider_id,
        "label": label,
        "ssoURL": sso_url,
        "entityID": entity_id,
        "certificate": certificate,
        "defaultRole": default_role,
        "createdAt": TS,
        "status": "active" if sso_url and entity_id and certificate else "pending",
        "service": {
            "acsURL": f"{root}/acs",
            "startURL": f"{root}/start",
            "entityID": f"{root}/metadata",
        },
        "urls": {"location": f"{BASE}/v1/orgs/{org_id}/saml/{provider_id}"},
    }
    if default_team is not None:
        body["defaultTeam"] = default_team
    return body


async def _team(client: httpx.AsyncClient, org: str, admin: factories.Who, title: str) -> str:
    r = await client.put(f"/v1/orgs/{org}/teams", json={"title": title}, headers=admin.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def test_provider_lifecycle(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, reader) = await factories.org_with_members(db, "read")
    r = await client.post(f"/v1/orgs/{org}/saml", json={"label": "Okta"}, headers=admin.headers)
    assert r.status_code == 201, r.text
    pid = r.json()["id"]
    assert r.json() == provider_body(pid, org)
    assert r.headers["location"] == f"{BASE}/v1/orgs/{org}/saml/{pid}"
    # Pending providers offer no login.
    r = await client.get(f"/v1/orgs/{org}/sso", headers=reader.headers)
    assert r.status_code == 200 and r.json() == {"items": []}

    team = await _team(client, org, admin, "Engineering")
    r = await client.patch(
        f"/v1/orgs/{org}/saml/{pid}",
        json={
            "entityID": IDP_ENTITY,
            "ssoURL": IDP_SSO,
            "certificate": KEYS.cert_pem,
            "defaultTeam": team,
            "defaultRole": "edit",
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    expected = provider_body(
        pid,
        org,
        sso_url=IDP_SSO,
        entity_id=IDP_ENTITY,
        certificate=KEYS.cert_pem.strip(),
        default_role="edit",
        default_team=team_body(team, "Engineering"),
    )
    assert r.json() == expected
    r = await client.get(f"/v1/orgs/{org}/saml/{pid}", headers=admin.headers)
    assert r.status_code == 200 and r.json() == expected
    r = await client.get(f"/v1/orgs/{org}/saml", headers=admin.headers)
    assert r.status_code == 200 and r.json() == {"items": [expected], "count": 1}
    # Any member, the least role included, sees the login links and nothing else.
    r = await client.get(f"/v1/orgs/{org}/sso", headers=reader.headers)
    assert r.status_code == 200
    assert r.json() == {
        "items": [{"id": pid, "label": "Okta", "startURL": f"{BASE}/sso/saml/{pid}/start"}]
    }
    # Bare base64 is a certificate too; an empty value unsets (back to pending).
    r = await client.patch(
        f"/v1/orgs/{org}/saml/{pid}",
        json={"certificate": bare_base64(KEYS.cert_pem), "defaultTeam": None, "label": "Corp"},
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "active" and "defaultTeam" not in r.json()
    assert r.json()["label"] == "Corp"
    r = await client.patch(
        f"/v1/orgs/{org}/saml/{pid}", json={"certificate": ""}, headers=admin.headers
    )
    assert r.status_code == 200 and r.json()["status"] == "pending"

    r = await client.delete(f"/v1/orgs/{org}/saml/{pid}", headers=admin.headers)
    assert r.status_code == 204 and r.content == b""
    r = await client.get(f"/v1/orgs/{org}/saml/{pid}", headers=admin.headers)
    assert r.status_code == 404
    assert r.json() == error(404, "SAML provider not found")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"certificate": "hello"}, "Invalid body field 'certificate': not PEM or base64"),
        (
            {"certificate": "aGVsbG8="},
            "Invalid body field 'certificate': not an X.509 certificate",
        ),
        (
            {"certificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"},
            "Invalid body field 'certificate': not an X.509 certificate",
        ),
        (
            {"certificate": "EXPIRED"},
            "Invalid body field 'certificate': certificate expired on 2025-02-01T00:00:00+00:00",
        ),
        (
            {"ssoURL": "http://idp.example.test/sso"},
            "Invalid body field 'ssoURL': must use https (http only for loopback)",
        ),
        ({"ssoURL": "idp.example.test"}, "Invalid body field 'ssoURL': must be an absolute"),
        ({"ssoURL": "ftp://idp.example.test/"}, "Invalid body field 'ssoURL': must be an absolute"),
        ({"defaultTeam": "OTHER"}, "Invalid body field 'defaultTeam': no such team"),
        ({"defaultTeam": "nope"}, "Invalid body field 'defaultTeam': no such team"),
        ({"label": ""}, "Invalid body field 'label'"),
        ({"defaultRole": "owner"}, "Invalid body field 'defaultRole'"),
    ],
)
async def test_provider_bad_input(
    client: httpx.AsyncClient, db: AsyncEngine, body: dict[str, Any], message: str
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    other_org, (other_admin,) = await factories.org_with_members(db)
    other_team = await _team(client, other_org, other_admin, "Theirs")
    r = await client.post(f"/v1/orgs/{org}/saml", json={"label": "Okta"}, headers=admin.headers)
    pid = r.json()["id"]
    if body.get("certificate") == "EXPIRED":
        expired = key_pair(not_before=datetime(2025, 1, 1, tzinfo=UTC), days=31)
        body = {"certificate": expired.cert_pem}
    if body.get("defaultTeam") == "OTHER":
        body = {"defaultTeam": other_team}
    before = await snapshot(db)
    for method, url, payload in (
        ("POST", f"/v1/orgs/{org}/saml", {"label": "Okta", **body}),
        ("PATCH", f"/v1/orgs/{org}/saml/{pid}", body),
    ):
        r = await client.request(method, url, json=payload, headers=admin.headers)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == 400
        assert r.json()["error"]["message"].startswith(message), r.text
    assert await snapshot(db) == before


async def test_http_sso_url_allowed_for_loopback(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    for url in ("http://127.0.0.1:9000/sso", "http://localhost/sso", "http://[::1]/sso"):
        r = await client.post(
            f"/v1/orgs/{org}/saml", json={"label": "Local", "ssoURL": url}, headers=admin.headers
        )
        assert r.status_code == 201 and r.json()["ssoURL"] == url, r.text


async def test_only_admins_manage_providers(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, editor, guest) = await factories.org_with_members(db, "edit", None)
    outsider = await factories.user(db)
    r = await client.post(f"/v1/orgs/{org}/saml", json={"label": "Okta"}, headers=admin.headers)
    pid = r.json()["id"]
    before = await snapshot(db)
    calls: list[tuple[str, str, Any]] = [
        ("GET", f"/v1/orgs/{org}/saml", None),
        ("POST", f"/v1/orgs/{org}/saml", {"label": "Mine"}),
        ("GET", f"/v1/orgs/{org}/saml/{pid}", None),
        ("PATCH", f"/v1/orgs/{org}/saml/{pid}", {"label": "Mine"}),
        ("DELETE", f"/v1/orgs/{org}/saml/{pid}", None),
    ]
    for method, url, body in calls:
        for who in (editor, guest):
            r = await client.request(method, url, json=body, headers=who.headers)
            assert r.status_code == 403, (method, url, r.text)
            assert r.json() == error(403, "Only organization admins can manage SAML providers")
        r = await client.request(method, url, json=body, headers=outsider.headers)
        assert r.status_code == 404 and r.json() == error(404, "Organization not found")
    r = await client.get(f"/v1/orgs/{org}/sso", headers=guest.headers)
    assert r.status_code == 200
    r = await client.get(f"/v1/orgs/{org}/sso", headers=outsider.headers)
    assert r.status_code == 404
    assert await snapshot(db) == before


# -- logins --


class Login:
    """An organization with an active provider, and its identity provider."""

    def __init__(self, client: httpx.AsyncClient, org: str, admin: factories.Who) -> None:
        self.client = client
        self.org = org
        self.admin = admin
        self.provider = ""
        self.idp: IdentityProvider

    async def setup(self, keys: KeyPair = KEYS, **extra: Any) -> None:
        r = await self.client.post(
            f"/v1/orgs/{self.org}/saml",
            json={
                "label": "Okta",
                "entityID": IDP_ENTITY,
                "ssoURL": IDP_SSO,
                "certificate": keys.cert_pem,
                **extra,
            },
            headers=self.admin.headers,
        )
        assert r.status_code == 201 and r.json()["status"] == "active", r.text
        self.provider = r.json()["id"]
        self.idp = IdentityProvider(IDP_ENTITY, IDP_SSO, keys, r.json()["service"])

    async def start(self, next_path: str | None = None, link: str | None = None) -> str:
        """Our AuthnRequest's id, as the identity provider reads it from the redirect: the
        browser opens the start URL, is shown where it leads, and continues."""
        r = await begin(self.client, self.provider, next_path, link)
        assert r.status_code == 303, r.text
        request = self.idp.read_request(r.headers["location"])
        assert request.message.assertion_consumer_service_url in (None, self.acs_url)
        return str(request.message.id)

    @property
    def acs_url(self) -> str:
        return self.idp.sp["acsURL"]

    async def post(self, saml_response: str, relay_state: str | None = None) -> httpx.Response:
        data = {"SAMLResponse": saml_response}
        if relay_state is not None:
            data["RelayState"] = relay_state
        return await self.client.post(f"/sso/saml/{self.provider}/acs", data=data)


async def _login_setup(
    client: httpx.AsyncClient, db: AsyncEngine, **extra: Any
) -> tuple[Login, factories.Who]:
    org, (admin,) = await factories.org_with_members(db)
    login = Login(client, org, admin)
    await login.setup(**extra)
    return login, admin


async def test_login_creates_member_and_session(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    team = await _team(client, org, admin, "Engineering")
    login = Login(client, org, admin)
    await login.setup(defaultRole="comment", defaultTeam=team)

    request_id = await login.start("/docs/intro")
    r = await login.post(login.idp.respond(request_id, "Ada@Example.com"), "/docs/intro")
    assert r.status_code == 303, r.text
    assert r.headers["location"] == f"{BASE}/docs/intro"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("docshelf_session=dss_")
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "path=/", "samesite=lax", "max-age=43200"} <= attributes
    # Secure only when the public URL is https (the tests' is http).
    assert "secure" not in attributes

    # The session gives an API token; the token is the new member's.
    r = await client.post("/sso/token")
    assert r.status_code == 201, r.text
    token = r.json()["token"]
    assert token.startswith("dsk_")
    r = await client.get("/v1/user", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    user = r.json()
    assert (user["email"], user["displayName"]) == ("ada@example.com", "Ada Lovelace")
    r = await client.get(f"/v1/orgs/{org}/members/{user['id']}", headers=admin.headers)
    assert r.status_code == 200, r.text
    assert (r.json()["role"], r.json()["sso"]) == ("comment", True)
    r = await client.get(f"/v1/orgs/{org}/teams/{team}/members", headers=admin.headers)
    assert [m["organization"]["user"]["id"] for m in r.json()["items"]] == [user["id"]]

    # A second login finds the same user and keeps the role an admin gave meanwhile.
    r = await client.patch(
        f"/v1/orgs/{org}/members/{user['id']}", json={"role": "edit"}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    request_id = await login.start()
    r = await login.post(login.idp.respond(request_id, "ada@example.com"))
    assert r.status_code == 303 and r.headers["location"] == f"{BASE}/"
    r = await client.get(f"/v1/orgs/{org}/members/{user['id']}", headers=admin.headers)
    assert (r.json()["role"], r.json()["sso"]) == ("edit", True)

    # Logging out ends the session: no more tokens from it.
    r = await client.post("/sso/logout")
    assert r.status_code == 204
    r = await client.post("/sso/token")
    assert r.status_code == 401
    assert r.json()["error"]["message"].startswith("No live SSO session")


async def test_an_existing_account_is_never_reached_by_its_e_mail(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """The account takeover the audit found: anyone can create an organization and a provider
    with a certificate of their own and assert an existing user's e-mail. Refused: no session,
    no membership, no token; the victim's organizations stay out of reach."""
    victim = await factories.user(db, email="admin@docshelf.local")
    victim_org = await factories.organization(db, owner=victim, title="Victim's docs")
    attacker = await factories.user(db, email=ATTACKER)
    r = await client.post("/v1/orgs", json={"title": "Evil"}, headers=attacker.headers)
    assert r.status_code == 201, r.text
    login = Login(client, r.json()["id"], attacker)
    await login.setup(defaultRole="admin")
    request_id = await login.start()
    before = await snapshot(db)
    r = await login.post(login.idp.respond(request_id, "Admin@Docshelf.local"))
    assert r.status_code == 403, r.text
    assert r.json() == error(
        403,
        "SAML login refused: an account with this e-mail address already exists and is not "
        "linked to Okta. Its owner can link it: with the account's API token, POST "
        f"/v1/user/saml/{login.provider}/link and open the URL it answers",
    )
    assert "set-cookie" not in r.headers
    assert await snapshot(db) == before
    r = await client.post("/sso/token")
    assert r.status_code == 401
    r = await client.get(f"/v1/orgs/{login.org}/members/{victim.id}", headers=attacker.headers)
    assert r.status_code == 404
    r = await client.get(f"/v1/orgs/{victim_org}", headers=victim.headers)
    assert r.status_code == 200


async def test_the_owner_links_an_existing_account(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    login, admin = await _login_setup(client, db)
    someone = await factories.user(db, email="grace@example.com")
    r = await client.post(f"/v1/user/saml/{login.provider}/link", headers=someone.headers)
    assert r.status_code == 201, r.text
    body = r.json()
    code = body["url"].split("?link=", 1)[1]
    assert body == {
        "object": "saml-link",
        "url": f"{BASE}/sso/saml/{login.provider}/start?link={code}",
        "expiresAt": "2026-01-02T03:14:05.678Z",
    }
    # The page before the identity provider names the account the login links.
    r = await client.get(f"/sso/saml/{login.provider}/start", params={"link": code})
    assert "<h1>Link the account grace@example.com to Acme Docs</h1>" in r.text
    r = await login.post(login.idp.respond(await login.start(link=code), "Grace@Example.com"))
    assert r.status_code == 303, r.text
    r = await client.get(f"/v1/orgs/{login.org}/members/{someone.id}", headers=admin.headers)
    assert r.status_code == 200
    assert (r.json()["role"], r.json()["sso"]) == (None, True)
    # From then on the identity logs in to that account, without a link.
    client.cookies.clear()
    r = await login.post(login.idp.respond(await login.start(), "grace@example.com"))
    assert r.status_code == 303, r.text
    r = await client.post("/sso/token")
    assert r.status_code == 201, r.text
    r = await client.get("/v1/user", headers={"Authorization": f"Bearer {r.json()['token']}"})
    assert r.json()["id"] == someone.id
    # A code is good once.
    before = await snapshot(db)
    r = await client.get(f"/sso/saml/{login.provider}/start", params={"link": code})
    assert r.status_code == 400
    assert r.json() == error(
        400,
        "This link is unknown, already used or expired: ask for a new one "
        f"(POST /v1/user/saml/{login.provider}/link)",
    )
    assert await snapshot(db) == before


async def test_a_link_takes_only_its_owners_own_identity(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Anyone may ask for a link URL of their own account and get someone else to open it: the
    identity provider then signs in that someone, whose identity must not land in the asker's
    account (nor make the asker a member of the organization)."""
    login, admin = await _login_setup(client, db)
    asker = await factories.user(db, email="mallory@example.com")
    r = await client.post(f"/v1/user/saml/{login.provider}/link", headers=asker.headers)
    code = r.json()["url"].split("?link=", 1)[1]
    request_id = await login.start(link=code)
    response = login.idp.respond(request_id, VICTIM)
    before = await snapshot(db)
    r = await login.post(response)
    assert r.status_code == 403, r.text
    assert r.json() == error(
        403,
        f"SAML login refused: the identity provider signed in {VICTIM}, not the account that "
        "asked to link it: sign in there as that account",
    )
    assert "set-cookie" not in r.headers
    assert await snapshot(db) == before
    r = await client.get(f"/v1/orgs/{login.org}/members/{asker.id}", headers=admin.headers)
    assert r.status_code == 404


async def test_a_verified_domain_links_its_accounts(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    """The operator vouches for an organization's e-mail domain: its provider then reaches
    existing accounts at that domain, and no other organization's provider creates any."""
    login, admin = await _login_setup(client, db)
    someone = await factories.user(db, email="grace@corp.test")
    env = cli_env(settings, tmp_path)
    r = await client.patch(
        f"/v1/orgs/{login.org}", json={"emailDomains": ["corp.test"]}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    done = run_cli(env, "org", "verify-domain", login.org, "Corp.Test")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"corp.test is verified for organization {login.org}.\n"
    r = await login.post(login.idp.respond(await login.start(), "grace@corp.test"))
    assert r.status_code == 303, r.text
    r = await client.get(f"/v1/orgs/{login.org}/members/{someone.id}", headers=admin.headers)
    assert r.status_code == 200 and r.json()["sso"] is True

    other, _ = await _login_setup(client, db)
    response = other.idp.respond(await other.start(), "newcomer@corp.test")
    before = await snapshot(db)
    r = await other.post(response)
    assert r.status_code == 403
    assert r.json() == error(
        403, "SAML login refused: the e-mail domain corp.test belongs to another organization"
    )
    assert await snapshot(db) == before
    # The same domain cannot be verified for a second organization, nor one it does not list.
    r = await client.patch(
        f"/v1/orgs/{other.org}", json={"emailDomains": ["corp.test"]}, headers=other.admin.headers
    )
    refused = run_cli(env, "org", "verify-domain", other.org, "corp.test")
    assert refused.returncode == 1
    assert f"corp.test is verified for another organization ({login.org})" in refused.stderr
    unlisted = run_cli(env, "org", "verify-domain", other.org, "else.test")
    assert unlisted.returncode == 1 and "does not list else.test" in unlisted.stderr
    done = run_cli(env, "org", "unverify-domain", login.org, "corp.test")
    assert done.returncode == 0, done.stderr


async def test_a_sso_token_acts_only_in_its_organization(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    login, _ = await _login_setup(client, db)
    r = await login.post(login.idp.respond(await login.start(), VICTIM))
    assert r.status_code == 303, r.text
    r = await client.post("/sso/token")
    assert r.status_code == 201, r.text
    scoped = {"Authorization": f"Bearer {r.json()['token']}"}
    r = await client.get(f"/v1/orgs/{login.org}", headers=scoped)
    assert r.status_code == 200
    # It cannot widen its own reach: no new organization, no joining another one.
    before = await snapshot(db)
    r = await client.post("/v1/orgs", json={"title": "Elsewhere"}, headers=scoped)
    assert r.status_code == 403
    scoped_only = (
        "A token made from an organization's single sign-on acts only in that organization"
    )
    assert r.json() == error(403, scoped_only)
    other_org, (other_admin,) = await factories.org_with_members(db)
    r = await client.post(
        f"/v1/orgs/{other_org}/link-invites", json={"role": "read"}, headers=other_admin.headers
    )
    assert r.status_code == 201, r.text
    invite = r.json()["id"]
    before = await snapshot(db)
    r = await client.post(f"/v1/orgs/{other_org}/invites/{invite}", headers=scoped)
    assert r.status_code == 403 and r.json() == error(403, scoped_only)
    assert await snapshot(db) == before
    # Once the account belongs to another organization (its owner joined with a token of its
    # own), the SSO token acts no more, and the session makes no new one.
    async with unit_of_work(db) as conn:
        user = await user_repository.get_by_email(conn, VICTIM)
        assert user is not None
        own = await create_token(conn, user["id"])
    r = await client.post(
        f"/v1/orgs/{other_org}/invites/{invite}", headers={"Authorization": f"Bearer {own}"}
    )
    assert r.status_code == 200, r.text
    r = await client.get(f"/v1/orgs/{login.org}", headers=scoped)
    assert r.status_code == 401
    assert r.json() == error(
        401,
        "This token was made from an organization's single sign-on, and its account now "
        "belongs to other organizations too: it acts no more. Use an API token of the "
        "account's own",
    )
    r = await client.post("/sso/token")
    assert r.status_code == 403
    assert r.json()["error"]["message"].startswith("This account belongs to other organizations")


async def test_login_csrf_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine, app: FastAPI
) -> None:
    """A response is taken only from the browser that started its login: an attacker's own
    response, posted by a victim's browser, logs nobody in."""
    login, _ = await _login_setup(client, db)
    request_id = await login.start()
    response = login.idp.respond(request_id, ATTACKER)
    before = await snapshot(db)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as victim:
        # No login cookie at all: refused before any XML is read.
        r = await victim.post(f"/sso/saml/{login.provider}/acs", data={"SAMLResponse": response})
        assert r.status_code == 400
        assert r.json() == error(
            400,
            "SAML response refused: this browser did not start a login here (its login "
            "cookie is missing); start again from the organization's login link",
        )
        assert await snapshot(db) == before
        # Its own login cookie, from a login of its own: not the one this response answers.
        r = await begin(victim, login.provider)
        assert r.status_code == 303
        before = await snapshot(db)
        r = await victim.post(f"/sso/saml/{login.provider}/acs", data={"SAMLResponse": response})
        assert r.status_code == 400
        assert r.json() == error(
            400, "SAML response refused: it answers a login started in another browser"
        )
        assert "docshelf_session" not in victim.cookies
        assert await snapshot(db) == before
    # The browser that started it still can.
    r = await login.post(response)
    assert r.status_code == 303, r.text


async def test_login_links_never_redirect_off_site_unasked(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Any user can create an organization and point its SSO URL anywhere, and published pages
    any organization writes share the origin, so a start URL, however it is reached, shows
    where it leads and waits for a click; `next` stays a path of ours, kept with the request
    (RelayState is not trusted)."""
    login, _ = await _login_setup(client, db)
    start = f"/sso/saml/{login.provider}/start"
    before = await snapshot(db)
    for headers in ({}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "none"}, SAME_ORIGIN):
        r = await client.get(start, params={"next": "//evil.test/x"}, headers=headers)
        assert r.status_code == 200, r.text
        assert "location" not in r.headers
        assert r.headers["cache-control"] == "no-store"
        assert "You are about to leave for <strong>idp.example.test</strong>" in r.text
        assert f'<form method="post" action="{start}">' in r.text
        assert '<input type="hidden" name="next" value="/">' in r.text
    # The form's post must come from our own page.
    for headers in ({}, {"Origin": "https://evil.test"}, {"Sec-Fetch-Site": "cross-site"}):
        r = await client.post(start, data={"next": "/docs"}, headers=headers)
        assert r.status_code == 403
        assert r.json() == error(403, "A login continues only from this site's own page")
    assert await snapshot(db) == before
    r = await client.post(start, data={"next": "/docs"}, headers={"Origin": BASE})
    assert r.status_code == 303
    assert r.headers["location"].startswith(IDP_SSO)
    request_id = str(login.idp.read_request(r.headers["location"]).message.id)
    r = await login.post(login.idp.respond(request_id, VICTIM), relay_state="//evil.test/x")
    assert r.status_code == 303, r.text
    assert r.headers["location"] == f"{BASE}/docs"
    for path in ("//evil.test/x", "/\\evil.test", "https://evil.test/", "evil.test"):
        request_id = await login.start(path)
        r = await login.post(login.idp.respond(request_id, VICTIM))
        assert r.status_code == 303 and r.headers["location"] == f"{BASE}/", path


async def test_an_oversized_saml_post_is_refused_before_any_xml(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    login, _ = await _login_setup(client, db)
    await login.start()
    before = await snapshot(db)
    huge = "PD94" + "A" * (300 * 1024)
    r = await login.post(huge)
    assert r.status_code == 413
    assert r.json() == error(413, "The form is larger than 256 KiB")
    assert await snapshot(db) == before


async def test_session_cookie_is_secure_on_https(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings
) -> None:
    base = "https://docs.example.test"
    org, (admin,) = await factories.org_with_members(db)
    async with second_app(settings, base_url=base) as https:
        login = Login(https, org, admin)
        await login.setup()
        assert login.idp.sp["acsURL"] == f"{base}/sso/saml/{login.provider}/acs"
        start = await begin(https, login.provider)
        request_id = str(login.idp.read_request(start.headers["location"]).message.id)
        # The test client talks plain http, where a Secure cookie is not sent back.
        https.cookies.set("docshelf_sso_browser", start.cookies["docshelf_sso_browser"])
        r = await login.post(login.idp.respond(request_id, VICTIM))
        assert r.status_code == 303, r.text
        assert r.headers["location"] == f"{base}/"
        attributes = {p.strip().lower() for p in r.headers["set-cookie"].split(";")[1:]}
        assert {"httponly", "secure", "samesite=lax", "path=/"} <= attributes
        # The login cookie must come back with the identity provider's cross-site POST.
        cookie = start.headers["set-cookie"]
        assert cookie.startswith("docshelf_sso_browser=")
        attributes = {p.strip().lower() for p in cookie.split(";")[1:]}
        assert {"httponly", "secure", "samesite=none", "path=/sso/saml/"} <= attributes


async def test_service_provider_metadata(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    r = await client.post(f"/v1/orgs/{org}/saml", json={"label": "Okta"}, headers=admin.headers)
    service = r.json()["service"]
    r = await client.get(service["entityID"].removeprefix(BASE))
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/samlmetadata+xml"
    # Read back with pysaml2 itself: an identity provider can load it as it is.
    descriptor = entity_descriptor_from_string(r.text)
    assert descriptor.entity_id == service["entityID"]
    acs = descriptor.spsso_descriptor[0].assertion_consumer_service
    assert [(a.binding, a.location) for a in acs] == [(BINDING_HTTP_POST, service["acsURL"])]
    r = await client.get("/sso/saml/nope/metadata")
    assert r.status_code == 404 and r.json() == error(404, "SAML provider not found")


async def test_deleted_default_team_is_dropped(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    team = await _team(client, org, admin, "Engineering")
    r = await client.post(
        f"/v1/orgs/{org}/saml", json={"label": "Okta", "defaultTeam": team}, headers=admin.headers
    )
    pid = r.json()["id"]
    assert r.json()["defaultTeam"]["id"] == team
    r = await client.delete(f"/v1/orgs/{org}/teams/{team}", headers=admin.headers)
    assert r.status_code in (204, 205), r.text
    r = await client.get(f"/v1/orgs/{org}/saml/{pid}", headers=admin.headers)
    assert r.status_code == 200 and "defaultTeam" not in r.json()


async def test_token_needs_a_session(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    before = await snapshot(db)
    r = await client.post("/sso/token")
    assert r.status_code == 401
    client.cookies.set("docshelf_session", "dss_forged")
    r = await client.post("/sso/token")
    assert r.status_code == 401
    assert r.json()["error"]["code"] == 401
    assert await snapshot(db) == before


async def test_start_of_unknown_or_pending_provider(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    r = await client.post(f"/v1/orgs/{org}/saml", json={"label": "Okta"}, headers=admin.headers)
    pending = r.json()["id"]
    before = await snapshot(db)
    for pid in (pending, "nope"):
        r = await client.get(f"/sso/saml/{pid}/start")
        assert r.status_code == 404 and r.json() == error(404, "SAML provider not found")
        r = await client.post(f"/sso/saml/{pid}/start", headers=SAME_ORIGIN)
        assert r.status_code == 404 and r.json() == error(404, "SAML provider not found")
        r = await client.post(f"/sso/saml/{pid}/acs", data={"SAMLResponse": "PHg+"})
        assert r.status_code == 404
    assert await snapshot(db) == before


Attack = Callable[[Login, str], str]
_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    + ']><samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&j;</samlp:Response>'
)
_XXE = (
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&x;</samlp:Response>'
)
VICTIM = "ada@example.com"
ATTACKER = "mallory@example.com"
OTHER_KEYS = key_pair("other-idp.test")


def _other_provider(login: Login, request_id: str) -> str:
    forger = IdentityProvider(IDP_ENTITY, IDP_SSO, OTHER_KEYS, login.idp.sp)
    return forger.respond(request_id, VICTIM)


ATTACKS: dict[str, tuple[Attack, str]] = {
    "unsigned": (
        lambda lg, rid: lg.idp.respond(rid, VICTIM, sign_assertion=False),
        "signature missing or invalid",
    ),
    "response signed, assertion unsigned": (
        lambda lg, rid: lg.idp.respond(rid, VICTIM, sign_assertion=False, sign_response=True),
        "signature missing or invalid",
    ),
    "tampered after signing": (
        lambda lg, rid: tampered(lg.idp.respond(rid, VICTIM), VICTIM, ATTACKER),
        "signature missing or invalid",
    ),
    "wrapping: genuine assertion in the forged one's Advice": (
        lambda lg, rid: wrapped_in_advice(lg.idp.respond(rid, VICTIM), VICTIM, ATTACKER),
        "signature missing or invalid",
    ),
    "wrapping: unsigned forged assertion beside the genuine one": (
        lambda lg, rid: forged_sibling(lg.idp.respond(rid, VICTIM), VICTIM, ATTACKER),
        "the response must hold exactly one assertion",
    ),
    "wrong audience": (
        lambda lg, rid: lg.idp.respond(rid, VICTIM, audience="https://other-sp.test/metadata"),
        "the assertion is not addressed to this service provider (audience)",
    ),
    "wrong destination": (
        lambda lg, rid: lg.idp.respond(rid, VICTIM, destination="https://other-sp.test/acs"),
        "the response did not verify",
    ),
    "expired": (
        lambda lg, rid: lg.idp.respond(rid, VICTIM, lifetime_minutes=-5),
        "the assertion did not verify",
    ),
    "another provider's certificate": (_other_provider, "signature missing or invalid"),
    # Validly signed, but with SHA-1, whose collisions make the signature worthless.
    "signed with RSA-SHA1": (
        lambda lg, rid: lg.idp.respond(rid, VICTIM, sha1=True),
        "signature algorithm 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' refused",
    ),
    "unknown InResponseTo": (
        lambda lg, rid: lg.idp.respond("id-never-issued", VICTIM),
        "it answers no pending request of ours",
    ),
    "not XML": (lambda lg, rid: "bm90IHhtbA==", "not a valid SAML response"),
    # pysaml2 parses through defusedxml: no entity is ever expanded or fetched.
    "entity expansion (billion laughs)": (lambda lg, rid: encode(_LAUGHS), "not a valid SAML"),
    "external entity": (lambda lg, rid: encode(_XXE), "not a valid SAML response"),
    "not base64": (lambda lg, rid: "%%%", "not a valid SAML response"),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_forged_responses_are_refused(
    client: httpx.AsyncClient, db: AsyncEngine, attack: str
) -> None:
    login, _ = await _login_setup(client, db)
    request_id = await login.start()
    forge, message = ATTACKS[attack]
    forged = forge(login, request_id)
    before = await snapshot(db)
    r = await login.post(forged)
    assert r.status_code == 400, (attack, r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == 400
    assert body["error"]["message"].startswith("SAML response refused: " + message), body
    assert "set-cookie" not in r.headers
    assert await snapshot(db) == before
    # The genuine answer to the same request still works: the refusal consumed nothing.
    r = await login.post(login.idp.respond(request_id, VICTIM))
    assert r.status_code == 303, r.text


async def test_replayed_response_is_refused(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    login, _ = await _login_setup(client, db)
    response = login.idp.respond(await login.start(), VICTIM)
    r = await login.post(response)
    assert r.status_code == 303, r.text
    await login.start()  # a pending request exists, but not the one the response answers
    before = await snapshot(db)
    r = await login.post(response)
    assert r.status_code == 400
    assert r.json() == error(400, "SAML response refused: this assertion was already used")
    assert await snapshot(db) == before


async def test_response_for_another_provider_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """The same identity provider configured in two organizations: a response addressed to
    one is refused by the other (audience, destination)."""
    first, _ = await _login_setup(client, db)
    second, _ = await _login_setup(client, db)
    response = first.idp.respond(await first.start(), VICTIM)
    await second.start()
    before = await snapshot(db)
    r = await second.post(response)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"].startswith("SAML response refused: ")
    assert await snapshot(db) == before


async def test_disabled_member_cannot_log_in(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    login, _ = await _login_setup(client, db)
    r = await login.post(login.idp.respond(await login.start(), VICTIM))
    assert r.status_code == 303

    async with unit_of_work(db) as conn:
        user = await user_repository.get_by_email(conn, VICTIM)
        assert user is not None
        await member_repository.update(conn, login.org, user["id"], {"disabled": True})
    response = login.idp.respond(await login.start(), VICTIM)
    before = await snapshot(db)
    r = await login.post(response)
    assert r.status_code == 403
    assert r.json() == error(403, "Your membership of this organization is disabled")
    assert await snapshot(db) == before


def test_the_spelled_out_saml_names_are_pysaml2s() -> None:
    # sso/saml.py spells these out so that API processes need not import pysaml2.
    import saml2
    import saml2.saml

    from docshelf.sso import saml

    assert saml.BINDING_HTTP_POST == saml2.BINDING_HTTP_POST
    assert saml.BINDING_HTTP_REDIRECT == saml2.BINDING_HTTP_REDIRECT
    assert saml.NAMEID_FORMAT_EMAILADDRESS == saml2.saml.NAMEID_FORMAT_EMAILADDRESS
    assert saml.SCM_BEARER == saml2.saml.SCM_BEARER
