"""Bad input for every endpoint, generated from the app's own OpenAPI description: each case
answers 400 with the error body naming the field, and changes nothing."""

from __future__ import annotations

import copy
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.worker.registry import JobEnv
from tests.helpers import snapshot
from tests.world import VALID_QUERIES, build_world, fill, operations


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return _resolve(components[schema["$ref"].rsplit("/", 1)[-1]], components)
    if "anyOf" in schema:
        concrete = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return _resolve(concrete[0], components)
    return schema


def invalid_values(prop: dict[str, Any]) -> list[tuple[str, Any]]:
    """(what, value) pairs that break the property's declared rules."""
    cases: list[tuple[str, Any]] = []
    kind = prop.get("type")
    if kind == "string":
        cases.append(("wrong type", 12345))
        # NUL: PostgreSQL text cannot hold it (a 500 once); BEL: no text field takes it.
        cases.append(("control character NUL", "a\x00b"))
        cases.append(("control character BEL", "a\x07b"))
        if "maxLength" in prop:
            cases.append(("too long", "a" * (prop["maxLength"] + 1)))
        if prop.get("minLength", 0) >= 1:
            cases.append(("too short", "a" * (prop["minLength"] - 1)))
        if "enum" in prop:
            cases.append(("unknown enum value", "no-such-value"))
        if "pattern" in prop:
            cases.append(("pattern", "  !bad value!  "))
    elif kind == "boolean":
        cases.append(("wrong type", "yes"))
    elif kind in ("integer", "number"):
        cases.append(("wrong type", "many"))
    elif kind == "array":
        cases.append(("wrong type", "not-a-list"))
        items = prop.get("items", {})
        if items.get("type") == "string":
            cases.append(("item wrong type", [42]))
            cases.append(("item control character", ["a\x00b"]))
        if "maxItems" in prop:
            cases.append(("too many items", ["x"] * (prop["maxItems"] + 1)))
    elif kind == "object":
        cases.append(("wrong type", 5))
        if "properties" not in prop:
            # Free-form: walked by the body's checks, which once recursed and answered 500.
            cases.append(("nested too deeply", _nested(300)))
    return cases


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"a": "b"}
    for _ in range(depth):
        value = {"a": [value]}
    return value


def body_cases(
    op: dict[str, Any], components: dict[str, Any], valid: Any
) -> list[tuple[str, str, Any]]:
    schema = _resolve(op["requestBody"]["content"]["application/json"]["schema"], components)
    cases: list[tuple[str, str, Any]] = [
        ("zzUnknownField", "unknown field", {**(valid or {}), "zzUnknownField": 1}),
        ("", "array instead of object", []),
    ]
    for name, raw in schema.get("properties", {}).items():
        prop = _resolve(raw, components)
        for what, value in invalid_values(prop):
            body = copy.deepcopy(valid) if isinstance(valid, dict) else {}
            body[name] = value
            cases.append((name, what, body))
    for name in schema.get("required", []):
        if isinstance(valid, dict) and name in valid:
            body = {k: v for k, v in valid.items() if k != name}
            cases.append((name, "missing required", body))
    return cases


async def test_bodies(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    components = app.openapi()["components"]["schemas"]
    before = await snapshot(db)
    checked = 0
    for method, path, op in operations(app):
        if "requestBody" not in op:
            continue
        url = fill(path, world.ids())
        for field, what, body in body_cases(
            op, components, world.request_body(method, path)["json"]
        ):
            r = await client.request(method, url, json=body, headers=world.admin_a.headers)
            context = (method, path, field, what, r.text)
            assert r.status_code == 400, context
            error = r.json()["error"]
            assert set(r.json()) == {"error"} and error["code"] == 400, context
            assert field in error["message"], context
            checked += 1
        malformed = await client.request(
            method,
            url,
            content=b'{"title": ',
            headers={**world.admin_a.headers, "Content-Type": "application/json"},
        )
        assert malformed.status_code == 400, (method, path)
        assert malformed.json()["error"]["message"].startswith("Malformed JSON body"), (
            method,
            path,
        )
    assert await snapshot(db) == before
    assert checked >= 60


async def test_limits(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    checked = 0
    for method, path, op in operations(app):
        names = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
        if "limit" not in names:
            continue
        url = fill(path, world.ids())
        base = VALID_QUERIES.get((method, path), {})
        # A listing answered to a POST (a site's search) takes its body too.
        body = world.request_body(method, path).get("json")
        for bad in ("1001", "-1", "abc", "12345678901234567890", "1.5"):
            r = await client.request(
                method, url, params={**base, "limit": bad}, json=body, headers=world.admin_a.headers
            )
            assert r.status_code == 400, (path, bad, r.text)
            assert r.json()["error"]["code"] == 400
            assert "'limit'" in r.json()["error"]["message"], (path, bad)
        # GitBook's `changes` answers are bounded by `limit` alone (with a `more` count).
        if "page" in names:
            r = await client.request(
                method,
                url,
                params={**base, "page": "not-a-cursor"},
                json=body,
                headers=world.admin_a.headers,
            )
            assert r.status_code == 400, (path, r.text)
            assert r.json() == {
                "error": {
                    "code": 400,
                    "message": (
                        "Invalid query parameter 'page': not a cursor returned by this listing"
                    ),
                }
            }
        for good in ("0", "1000"):
            r = await client.request(
                method,
                url,
                params={**base, "limit": good},
                json=body,
                headers=world.admin_a.headers,
            )
            assert r.status_code == 200, (path, good, r.text)
        checked += 1
    assert checked >= 7


async def test_query_enums_and_bounds(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    world = await build_world(client, db, job_env=job_env)
    components = app.openapi()["components"]["schemas"]
    checked = 0
    for method, path, op in operations(app):
        url = fill(path, world.ids())
        for param in op.get("parameters", []):
            if param["in"] != "query" or param["name"] in ("limit", "page"):
                continue
            schema = _resolve(param["schema"], components)
            bad: list[str] = []
            if "enum" in schema:
                bad.append("no-such-value")
            if "maxLength" in schema:
                bad.append("a" * (schema["maxLength"] + 1))
            for value in bad:
                # The route's other required queries given, so that this one is what is refused.
                params = {**VALID_QUERIES.get((method, path), {}), param["name"]: value}
                r = await client.request(method, url, params=params, headers=world.admin_a.headers)
                assert r.status_code == 400, (path, param["name"], value, r.text)
                assert f"'{param['name']}'" in r.json()["error"]["message"]
                checked += 1
    assert checked >= 8


async def test_forged_cursors_are_400(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    """A cursor decoding to values the listing never issued is refused, never a 500, even when
    signed with the install's key (tests/test_hardening_edge.py forges every other kind)."""
    from tests.test_hardening_edge import cursor_payload, install_cursor_key, sign

    world = await build_world(client, db, job_env=job_env)
    url = f"/v1/orgs/{world.org_a}/members"
    r = await client.get(url, params={"limit": 1}, headers=world.admin_a.headers)
    fingerprint = cursor_payload(r.json()["next"]["page"])["f"]
    key = await install_cursor_key(db)
    for values in (["abc", "x"], [5, 6], [None, "x"], [{"t": "not a date"}, "x"]):
        page = sign(key, {"f": fingerprint, "v": values})
        r = await client.get(url, params={"page": page}, headers=world.admin_a.headers)
        assert r.status_code == 400, (values, r.text)
        assert r.json()["error"]["code"] == 400


async def test_deep_nesting_is_400(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    """Bodies nested hundreds of levels deep (a tester's 500s): refused with the error body,
    whether the document's own check or the body's walk sees it first, and nothing changes."""
    world = await build_world(client, db, job_env=job_env)
    ids, headers = world.ids(), {**world.admin_a.headers, "Content-Type": "application/json"}
    leaf = '{"object": "block", "type": "paragraph", "nodes": [{"object": "text", "leaves": []}]}'
    before = await snapshot(db)
    for depth in (180, 300):
        quoted = '{"object": "block", "type": "blockquote", "nodes": [' * depth + leaf
        document = '{"object": "document", "nodes": [' + quoted + "]}" * depth + "]}"
        body = (
            '{"changes": [{"operation": "insert_page", "title": "Deep", '
            f'"document": {{"document": {document}}}}}]}}'
        )
        r = await client.post(f"/v1/spaces/{ids['spaceId']}/content", content=body, headers=headers)
        assert r.status_code == 400, (depth, r.text)
        assert r.json()["error"]["code"] == 400
        schema = '{"type": "object", "properties": {"a": ' * depth + '{"type": "string"}'
        r = await client.put(
            f"/v1/orgs/{ids['organizationId']}/sites/{ids['siteId']}/adaptive-schema",
            content='{"jsonSchema": ' + schema + "}}" * depth + "}",
            headers=headers,
        )
        assert r.json() == {
            "error": {
                "code": 400,
                "message": "Invalid body field 'jsonSchema': "
                "lists and objects nest at most 200 levels deep",
            }
        }, depth
    assert await snapshot(db) == before
