"""No request can hurt another, at the edge: one reading of the Authorization header for the
rate limiter and authentication, control characters refused in every path, query and body
field, signed cursors, and users visible exactly as the member routes show them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.models import instance_settings
from docshelf.worker.registry import JobEnv
from tests import factories
from tests.conftest import BASE
from tests.helpers import error, second_app, snapshot, user_body
from tests.world import VALID_QUERIES, build_world, fill, operations, path_params

MALFORMED = error(401, "Malformed Authorization header: expected 'Bearer <token>'")
DUPLICATE = error(400, "Duplicate Authorization header: send exactly one")
BAD_CURSOR = error(400, "Invalid query parameter 'page': not a cursor returned by this listing")
REFUSED = "control characters are not allowed"
# Every C0 control character and DEL.
CONTROLS = [chr(c) for c in range(0x20)] + ["\x7f"]


# -- cursor helpers (the wire format: base64url of the JSON payload followed by its MAC) ----


def cursor_payload(page: str) -> dict[str, Any]:
    raw = base64.urlsafe_b64decode(page + "=" * (-len(page) % 4))[:-16]
    payload: dict[str, Any] = json.loads(raw)
    return payload


async def install_cursor_key(db: AsyncEngine) -> bytes:
    async with db.connect() as conn:
        stmt = sa.select(instance_settings.c.value).where(
            instance_settings.c.key == "cursor_hmac_key"
        )
        value: str = (await conn.execute(stmt)).scalar_one()
    return value.encode()


def sign_raw(key: bytes, raw: bytes) -> str:
    mac = hmac.digest(key, raw, "sha256")[:16]
    return base64.urlsafe_b64encode(raw + mac).rstrip(b"=").decode()


def sign(key: bytes, payload: Any) -> str:
    # json, not orjson: orjson refuses integers beyond 64 bits, which a forger would send.
    return sign_raw(key, json.dumps(payload).encode())


# -- the Authorization header --------------------------------------------------------------


@pytest.fixture(params=["memory", "redis"])
async def limited(
    request: pytest.FixtureRequest, settings: Settings, db: AsyncEngine
) -> AsyncIterator[httpx.AsyncClient]:
    redis_url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    async with second_app(
        settings, rate_limit=3, rate_limit_window=60, rate_limit_redis_url=redis_url
    ) as c:
        yield c


def _raw(value: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", value)]


async def test_non_ascii_whitespace_around_the_token_is_refused_and_never_counted(
    limited: httpx.AsyncClient, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    token = me.token.encode()
    odd = [b"\xa0", b"\xc2\xa0", b"\x85", b"\xc2\x85", b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x00"]
    shapes = [b"Bearer " + w + token for w in odd]
    shapes += [b"Bearer " + token + w for w in odd]
    shapes += [b"Bearer" + w + token for w in odd]
    shapes += [b"Bearer " + token + b"\xc3\xa9", b"Bearer", b"Bearer ", b"", b"Basic " + token]
    shapes += [b"Bearer " + token + b" extra", b"Token " + token, b"Bearer:" + token]
    for value in shapes:
        r = await limited.get("/v1/user", headers=_raw(value))
        assert (r.status_code, r.json()) == (401, MALFORMED), value
        assert r.headers["www-authenticate"] == "Bearer"
        assert "x-ratelimit-remaining" not in r.headers, value
    # Nothing above touched the token's budget, nor opened a bucket for anything else.
    r = await limited.get("/v1/user", headers=me.headers)
    assert (r.status_code, r.headers["x-ratelimit-remaining"]) == (200, "2")


async def test_a_token_that_is_not_an_api_token_is_refused_at_the_edge(
    limited: httpx.AsyncClient, db: AsyncEngine
) -> None:
    for value in (b"Bearer not-a-token", b"Bearer dsk_short", b"Bearer dsk_" + b"\xc3" * 43):
        r = await limited.get("/v1/user", headers=_raw(value))
        assert r.status_code == 401, value
        assert r.headers["www-authenticate"] == "Bearer"
        assert "x-ratelimit-remaining" not in r.headers


async def test_every_accepted_spelling_counts_against_the_same_token(
    limited: httpx.AsyncClient, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    token = me.token.encode()
    spellings = [b"bearer " + token, b"BEARER   " + token + b"  ", b"  Bearer " + token]
    for remaining, value in zip(("2", "1", "0"), spellings, strict=True):
        r = await limited.get("/v1/user", headers=_raw(value))
        assert r.status_code == 200, value
        assert r.json() == user_body(me)
        assert r.headers["x-ratelimit-limit"] == "3"
        assert r.headers["x-ratelimit-remaining"] == remaining
        assert "x-ratelimit-reset" in r.headers
    r = await limited.get("/v1/user", headers=_raw(b"Bearer " + token))
    assert r.status_code == 429


async def test_two_authorization_headers_are_400_and_never_counted(
    limited: httpx.AsyncClient, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    other = await factories.user(db)
    good, second = f"Bearer {me.token}".encode(), f"Bearer {other.token}".encode()
    for pair in ((good, second), (good, good), (good, b""), (b"Basic x", good)):
        headers = [(b"authorization", pair[0]), (b"Authorization", pair[1])]
        r = await limited.get("/v1/user", headers=headers)
        assert (r.status_code, r.json()) == (400, DUPLICATE), pair
        assert "x-ratelimit-remaining" not in r.headers
    for who in (me, other):
        r = await limited.get("/v1/user", headers=who.headers)
        assert (r.status_code, r.headers["x-ratelimit-remaining"]) == (200, "2")


async def test_a_refused_header_changes_nothing_on_any_route(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    token = world.admin_a.token.encode()
    before = await snapshot(db)
    for method, path, _op in operations(app):
        for headers, expected in (
            (_raw(b"Bearer \xa0" + token), MALFORMED),
            ([(b"authorization", b"Bearer " + token)] * 2, DUPLICATE),
        ):
            r = await client.request(
                method, fill(path, world.ids()), headers=headers, **world.request_body(method, path)
            )
            assert r.json() == expected, (method, path)
    assert await snapshot(db) == before


# -- control characters in paths, queries and bodies -----------------------------------------


async def test_control_characters_in_every_path_parameter_are_400(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    ids = world.ids()
    before = await snapshot(db)
    checked = 0
    for method, path, _op in operations(app):
        for name in path_params(path):
            for c in CONTROLS:
                bad = {**ids, name: quote(ids[name] + c, safe="")}
                r = await client.request(
                    method,
                    fill(path, bad),
                    headers=world.admin_a.headers,
                    **world.request_body(method, path),
                )
                expected = error(400, f"Invalid path parameter '{name}': {REFUSED}")
                assert (r.status_code, r.json()) == (400, expected), (method, path, name, c)
                checked += 1
    assert await snapshot(db) == before
    assert checked >= 100 * len(CONTROLS)


async def test_control_characters_in_every_query_parameter_are_400(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    before = await snapshot(db)
    checked = 0
    for method, path, op in operations(app):
        for param in op.get("parameters", []):
            if param["in"] != "query":
                continue
            for c in CONTROLS:
                params = {**VALID_QUERIES.get((method, path), {}), param["name"]: f"a{c}b"}
                r = await client.request(
                    method,
                    fill(path, world.ids()),
                    headers=world.admin_a.headers,
                    params=params,
                    **{k: v for k, v in world.request_body(method, path).items() if k != "params"},
                )
                expected = error(400, f"Invalid query parameter '{param['name']}': {REFUSED}")
                assert (r.status_code, r.json()) == (400, expected), (method, path, param, c)
                checked += 1
    assert await snapshot(db) == before
    assert checked >= 20 * len(CONTROLS)


async def test_control_characters_anywhere_else_in_the_request_line(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    r = await client.get("/v1/no-such%00route", headers=me.headers)
    assert (r.status_code, r.json()) == (400, error(400, f"Invalid path: {REFUSED}"))
    r = await client.get("/v1/user?a%00b=1", headers=me.headers)
    assert (r.status_code, r.json()) == (400, error(400, f"Invalid query string: {REFUSED}"))
    # Ordinary percent-encoded text passes.
    r = await client.get("/v1/user?x=%C3%A9+%20", headers=me.headers)
    assert r.status_code == 200


async def test_body_text_takes_no_controls_but_multiline_text_keeps_its_lines(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = (await factories.api_space(client, org_id, admin, title="Notes", editMode="live"))["id"]
    before = await snapshot(db)
    for c in CONTROLS:
        r = await client.put(
            f"/v1/orgs/{org_id}/teams", json={"title": f"Team{c}A"}, headers=admin.headers
        )
        assert (r.status_code, r.json()) == (
            400,
            error(400, f"Invalid body field 'title': {REFUSED}"),
        ), c
    r = await client.put(
        f"/v1/orgs/{org_id}/teams",
        json={"title": "Team", "members": [admin.id, "x\x00"]},
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Invalid body field 'members': {REFUSED}"),
    )
    r = await client.post(
        f"/v1/spaces/{space}/content",
        json={
            "changes": [
                {"operation": "insert_page", "title": "A\nB", "document": {"markdown": "x"}}
            ]
        },
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Invalid body field 'changes.0.insert_page.title': {REFUSED}"),
    )
    for c in ("\x00", "\x1b", "\x7f"):
        r = await client.post(
            f"/v1/spaces/{space}/content",
            json={
                "changes": [
                    {"operation": "insert_page", "title": "A", "document": {"markdown": f"x{c}"}}
                ]
            },
            headers=admin.headers,
        )
        assert (r.status_code, r.json()) == (
            400,
            error(400, f"Invalid body field 'changes.0.insert_page.document.markdown': {REFUSED}"),
        ), c
    assert await snapshot(db) == before
    r = await client.post(
        f"/v1/spaces/{space}/content",
        json={
            "changes": [
                {
                    "operation": "insert_page",
                    "title": "Lines",
                    "description": "one\ntwo\tthree",
                    "document": {"markdown": "# Lines\r\n\n\tindented\n"},
                }
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text


# -- cursors -----------------------------------------------------------------------------------


async def _two_pages(client: httpx.AsyncClient, url: str, who: factories.Who) -> str:
    r = await client.get(url, params={"limit": 1}, headers=who.headers)
    assert r.status_code == 200, r.text
    page: str = r.json()["next"]["page"]
    return page


def _forged_values(size: int) -> list[list[Any]]:
    pad = ["x"] * (size - 1)
    return [
        [2**63, *pad],
        [-(2**63) - 1, *pad],
        [2**64, *pad],
        [10**30, *pad],
        [1.5, *pad],
        [True, *pad],
        [[1, [2, [3]]], *pad],
        [{"a": 1}, *pad],
        ["a\x00b", *pad],
        ["a" * 1100, *pad],
        [{"t": "2026-01-01T00:00:00+05:00"}, *pad],
        [{"t": "2026-01-01T00:00:00"}, *pad],
        [{"t": "not a date"}, *pad],
        [{"t": "0001-01-01T00:00:00-05:00"}, *pad],
        [*pad],
        [*pad, "x", "x"],
    ]


def _unsigned_forgeries(real: str, fingerprint: str, key: bytes) -> list[str]:
    raw = base64.urlsafe_b64decode(real + "=" * (-len(real) % 4))
    flipped = raw[:-1] + bytes([raw[-1] ^ 1])
    payload = json.dumps({"f": fingerprint, "v": cursor_payload(real)["v"]}).encode()
    return [
        "",
        "=",
        "!!!!",
        "a",
        real[:-2],
        base64.urlsafe_b64encode(flipped).decode(),
        base64.urlsafe_b64encode(b"\x00\xff garbage \x80" * 4).decode(),
        base64.urlsafe_b64encode(payload).decode(),  # the old, unsigned format
        sign(b"another install's key", {"f": fingerprint, "v": cursor_payload(real)["v"]}),
        sign(key, {"f": "deadbeef", "v": cursor_payload(real)["v"]}),  # another listing
        sign(key, [1, 2]),
        sign(key, "text"),
        sign(key, {"f": fingerprint}),
        sign(key, {"f": fingerprint, "v": "not a list"}),
        sign_raw(key, b"\xff\xfe not json"),
        sign_raw(key, b""),
    ]


async def test_forged_cursors_of_every_kind_are_400(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    # A second space, so the organization's space listing (an integer position key) pages.
    r = await client.post(
        f"/v1/orgs/{world.org_a}/spaces", json={"title": "Second"}, headers=world.admin_a.headers
    )
    assert r.status_code == 201
    key = await install_cursor_key(db)
    checked = 0
    for url, size in (
        (f"/v1/orgs/{world.org_a}/members", 2),
        (f"/v1/orgs/{world.org_a}/spaces", 3),
    ):
        real = await _two_pages(client, url, world.admin_a)
        fingerprint = cursor_payload(real)["f"]
        forged = [sign(key, {"f": fingerprint, "v": v}) for v in _forged_values(size)]
        # The same values at every position of the key, not only the first.
        forged += [sign(key, {"f": fingerprint, "v": ["x"] * i + [2**63]}) for i in range(size)]
        for page in forged + _unsigned_forgeries(real, fingerprint, key):
            r = await client.get(url, params={"page": page}, headers=world.admin_a.headers)
            assert (r.status_code, r.json()) == (400, BAD_CURSOR), (url, page)
            checked += 1
        r = await client.get(url, params={"page": real}, headers=world.admin_a.headers)
        assert r.status_code == 200
    # Listings computed in Python and the search offset read cursors through the same code.
    space_id = world.extra["spaceId"]
    for url, listing, extra in (
        (f"/v1/spaces/{space_id}/permissions/aggregate", "aggregate:space", {}),
        (f"/v1/spaces/{space_id}/search", "search:space", {"query": "intro"}),
        (f"/v1/orgs/{world.org_a}/search", "search:org", {"query": "intro"}),
    ):
        for values in _forged_values(1):
            page = sign(key, {"f": listing, "v": values})
            r = await client.get(url, params={**extra, "page": page}, headers=world.admin_a.headers)
            assert (r.status_code, r.json()) == (400, BAD_CURSOR), (url, values)
            checked += 1
        # Signed and well-typed, yet absurd: still an answer, never a 500.
        page = sign(key, {"f": listing, "v": [2**63 - 1]})
        r = await client.get(url, params={**extra, "page": page}, headers=world.admin_a.headers)
        assert r.status_code in (200, 400), (url, r.text)
    assert checked >= 80


async def test_a_cursor_is_good_in_every_process_of_the_install(
    settings: Settings, client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """The key is install-wide (instance_settings): a second API process accepts the first's."""
    org_id, (admin, *_rest) = await factories.org_with_members(db, "read", "edit")
    url = f"/v1/orgs/{org_id}/members"
    page = await _two_pages(client, url, admin)
    expected = (await client.get(url, params={"page": page}, headers=admin.headers)).json()
    other = create_app(settings)
    transport = httpx.ASGITransport(app=other, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
            r = await c.get(url, params={"page": page}, headers=admin.headers)
    finally:
        await other.state.engine.dispose()
    assert (r.status_code, r.json()) == (200, expected)


# -- users: the member routes' visibility --------------------------------------------------


async def test_users_are_visible_exactly_as_the_member_routes_show_them(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_a, (admin_a, editor_a, guest_a) = await factories.org_with_members(db, "edit", None)
    org_b, (admin_b, guest_b) = await factories.org_with_members(db, None)
    # The guest of A is a full member of B; B's guest is also A's guest.
    await factories.member(db, org=org_b, who=guest_a, role="read")
    await factories.member(db, org=org_a, who=guest_b, role=None)
    loner = await factories.user(db)
    people = [admin_a, editor_a, guest_a, admin_b, guest_b, loner]
    seen = 0
    for viewer in people:
        for target in people:
            via_members = False
            for org in (org_a, org_b):
                r = await client.get(f"/v1/orgs/{org}/members/{target.id}", headers=viewer.headers)
                via_members = via_members or r.status_code == 200
            r = await client.get(f"/v1/users/{target.id}", headers=viewer.headers)
            if target == viewer or via_members:
                assert (r.status_code, r.json()) == (200, user_body(target)), (viewer, target)
                seen += 1
            else:
                assert (r.status_code, r.json()) == (404, error(404, "User not found"))
    # A guest reads no one's e-mail but their own: guest_b is a guest everywhere.
    r = await client.get(f"/v1/users/{admin_a.id}", headers=guest_b.headers)
    assert (r.status_code, r.json()) == (404, error(404, "User not found"))
    r = await client.get(f"/v1/users/{guest_b.id}", headers=guest_b.headers)
    assert (r.status_code, r.json()) == (200, user_body(guest_b))
    # guest_a, a full member of B, sees B's people (and, through B, itself and guest_b).
    r = await client.get(f"/v1/users/{admin_b.id}", headers=guest_a.headers)
    assert r.status_code == 200
    r = await client.get(f"/v1/users/{editor_a.id}", headers=guest_a.headers)
    assert r.status_code == 404
    assert seen >= 12


def test_cursor_helpers_match_the_format() -> None:
    """The forging helpers above speak the format the app writes."""
    from docshelf.kit.pagination import encode_cursor, use_cursor_key

    key = hashlib.sha256(b"k").hexdigest().encode()
    use_cursor_key(key)
    real = encode_cursor(["a", 1], "ffff0000")
    assert cursor_payload(real) == {"f": "ffff0000", "v": ["a", 1]}
    assert sign_raw(key, b'{"f":"ffff0000","v":["a",1]}') == real


async def test_a_refused_request_line_still_counts_and_carries_the_rate_limit_headers(
    limited: httpx.AsyncClient, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    r = await limited.get("/v1/user?x=%00", headers=me.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Invalid query parameter 'x': {REFUSED}"),
    )
    assert (r.headers["x-ratelimit-limit"], r.headers["x-ratelimit-remaining"]) == ("3", "2")
    r = await limited.get("/v1/users/a%0Ab", headers=me.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, f"Invalid path parameter 'userId': {REFUSED}"),
    )
    assert r.headers["x-ratelimit-remaining"] == "1"
