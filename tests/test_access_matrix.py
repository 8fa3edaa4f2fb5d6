"""Access matrices generated from the app's route table: a new route joins them by existing."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.api import PUBLIC_PATHS
from docshelf.worker.registry import JobEnv
from tests import factories
from tests.helpers import snapshot
from tests.world import VALID_BODIES, VALID_QUERIES, build_world, fill, operations, path_params

# Routes that deliberately answer callers outside the organization, and why.
CROSS_ORG_EXEMPT = {
    # Holding an invite id is exactly what lets someone outside the organization join it.
    ("POST", "/v1/orgs/{organizationId}/invites/{inviteId}"),
    # Resolves a published hostname to its organization; public content is public.
    ("GET", "/v1/subdomains/{subdomain}"),
    # Answers only for the caller's own e-mail domain: an empty list for any other.
    ("GET", "/v1/email-domains/{emailDomain}/orgs"),
    # A signed download link is the credential itself: whoever holds it gets the bytes.
    ("GET", "/v1/downloads/{token}"),
    # Published content is for visitors: a published public site answers anyone with a token.
    ("GET", "/v1/orgs/{organizationId}/sites/{siteId}/published"),
    # Searching a published site reads what that site shows its visitors, like the above.
    ("POST", "/v1/orgs/{organizationId}/sites/{siteId}/search"),
}
RANDOM_ID = "zzRandomId0000000000"


def test_every_body_route_has_a_valid_body(app: FastAPI) -> None:
    needing = {(m, p) for m, p, op in operations(app) if "requestBody" in op}
    assert needing == set(VALID_BODIES)


def test_every_required_query_has_a_valid_value(app: FastAPI) -> None:
    needing = {
        (m, p)
        for m, p, op in operations(app)
        if any(q["in"] == "query" and q.get("required") for q in op.get("parameters", []))
    }
    assert needing == set(VALID_QUERIES)


def test_every_v1_route_is_in_the_matrices(app: FastAPI) -> None:
    # Guards the generator itself: if operations() found nothing the matrices would pass empty.
    assert len(operations(app)) >= 30


async def test_cross_organization_matrix(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    checked = 0
    for method, path, _op in operations(app):
        if not path_params(path) or (method, path) in CROSS_ORG_EXEMPT:
            continue
        before = await snapshot(db)
        real = await client.request(
            method,
            fill(path, world.ids()),
            headers=world.admin_b.headers,
            **world.request_body(method, path),
        )
        random_ids = {name: RANDOM_ID for name in path_params(path)}
        missing = await client.request(
            method,
            fill(path, random_ids),
            headers=world.admin_b.headers,
            **world.request_body(method, path),
        )
        assert real.status_code == 404, (method, path, real.text)
        assert real.json() == missing.json(), (method, path)
        assert await snapshot(db) == before, (method, path)
        checked += 1
    assert checked >= 25


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer not-a-token",
        "Bearer dsk_" + "A" * 43,
    ],
    ids=["missing", "empty-bearer", "basic", "malformed", "unknown"],
)
async def test_unauthenticated_matrix(
    app: FastAPI,
    client: httpx.AsyncClient,
    db: AsyncEngine,
    authorization: str | None,
    job_env: JobEnv,
) -> None:
    world = await build_world(client, db, job_env=job_env)
    headers = {"Authorization": authorization} if authorization else {}
    before = await snapshot(db)
    checked = 0
    for method, path, _op in operations(app):
        if (method, path) in PUBLIC_PATHS:
            continue
        r = await client.request(
            method, fill(path, world.ids()), headers=headers, **world.request_body(method, path)
        )
        assert r.status_code == 401, (method, path, r.text)
        assert r.headers["www-authenticate"] == "Bearer"
        assert set(r.json()) == {"error"} and r.json()["error"]["code"] == 401
        checked += 1
    assert await snapshot(db) == before
    assert checked >= 30


async def test_revoked_token_is_refused_everywhere(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    from docshelf.auth.service import revoke_token
    from docshelf.kit.db import unit_of_work

    world = await build_world(client, db, job_env=job_env)
    async with unit_of_work(db) as conn:
        await revoke_token(conn, world.admin_a.token)
    for method, path, _op in operations(app):
        if (method, path) in PUBLIC_PATHS:
            continue
        r = await client.request(
            method,
            fill(path, world.ids()),
            headers=world.admin_a.headers,
            **world.request_body(method, path),
        )
        assert r.status_code == 401, (method, path)
        assert r.json() == {"error": {"code": 401, "message": "Invalid or revoked API token"}}


async def test_removed_member_loses_access_at_once(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    assert (await client.get(f"/v1/orgs/{org_id}", headers=editor.headers)).status_code == 200
    r = await client.delete(f"/v1/orgs/{org_id}/members/{editor.id}", headers=admin.headers)
    assert r.status_code == 204
    r = await client.get(f"/v1/orgs/{org_id}", headers=editor.headers)
    assert r.status_code == 404
    assert r.json() == {"error": {"code": 404, "message": "Organization not found"}}
