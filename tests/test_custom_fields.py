from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.custom_field import repository
from docshelf.custom_field.values import FIELD_TYPES, MAX_TEXT, validate_value
from docshelf.kit.clock import clock, utcnow
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.models import custom_field_values, spaces
from tests import factories
from tests.conftest import BASE
from tests.helpers import TS, error, snapshot

LATER = "2026-01-02T03:04:15.678Z"


def field_body(
    org_id: str,
    field_id: str,
    name: str,
    type: str,
    *,
    title: str = "",
    description: str = "",
    placeholder: str = "",
    options: list[str] | None = None,
    updated: str = TS,
    edit: bool = True,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": field_id,
        "name": name,
        "type": type,
        "title": title,
        "description": description,
        "placeholder": placeholder,
    }
    if options is not None:
        body["options"] = options
    body.update(
        {
            "createdAt": TS,
            "updatedAt": updated,
            "urls": {"location": f"{BASE}/v1/orgs/{org_id}/custom-fields/{name}"},
            "permissions": {"view": True, "edit": edit},
        }
    )
    return body


async def add_space(db: AsyncEngine, org_id: str) -> str:
    """A bare space row: the spaces domain is not needed to hold custom field values."""
    space_id = new_id()
    async with unit_of_work(db) as conn:
        await conn.execute(
            sa.insert(spaces).values(
                id=space_id,
                organization_id=org_id,
                title="Space",
                visibility="private",
                revision_id=new_id(),
                created_at=utcnow(),
                updated_at=utcnow(),
            )
        )
    return space_id


async def test_custom_field_lifecycle(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    url = f"/v1/orgs/{org_id}/custom-fields"
    r = await client.post(
        url,
        json={
            "name": "audience",
            "type": "select:single",
            "title": "Audience",
            "description": "Who reads this",
            "placeholder": "Pick one",
            "options": ["internal", "public"],
        },
        headers=admin.headers,
    )
    assert r.status_code == 201
    field_id = r.json()["id"]
    created = field_body(
        org_id,
        field_id,
        "audience",
        "select:single",
        title="Audience",
        description="Who reads this",
        placeholder="Pick one",
        options=["internal", "public"],
    )
    assert r.json() == created
    assert r.headers["location"] == f"{BASE}{url}/audience"

    r = await client.get(f"{url}/audience", headers=editor.headers)
    assert (r.status_code, r.json()) == (
        200,
        {**created, "permissions": {"view": True, "edit": False}},
    )
    r = await client.get(url, headers=admin.headers)
    assert r.json() == {"items": [created], "count": 1}

    clock.advance(timedelta(seconds=10))
    r = await client.patch(
        f"{url}/audience",
        json={"title": "Readers", "description": None, "options": ["internal", "public", "x"]},
        headers=admin.headers,
    )
    patched = {
        **created,
        "title": "Readers",
        "description": "",
        "options": ["internal", "public", "x"],
        "updatedAt": LATER,
    }
    assert (r.status_code, r.json()) == (200, patched)
    # An empty patch changes nothing, not even updatedAt.
    clock.advance(timedelta(seconds=10))
    r = await client.patch(f"{url}/audience", json={}, headers=admin.headers)
    assert (r.status_code, r.json()) == (200, patched)
    r = await client.patch(
        f"{url}/audience", json={"title": None, "placeholder": None}, headers=admin.headers
    )
    cleared = {**patched, "title": "", "placeholder": "", "updatedAt": "2026-01-02T03:04:25.678Z"}
    assert r.json() == cleared

    r = await client.delete(f"{url}/audience", headers=admin.headers)
    assert (r.status_code, r.content) == (204, b"")
    r = await client.get(f"{url}/audience", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Custom field not found"))
    r = await client.get(url, headers=admin.headers)
    assert r.json() == {"items": [], "count": 0}


@pytest.mark.parametrize("type", ["text", "number", "boolean", "tags"])
async def test_create_field_without_options(
    client: httpx.AsyncClient, db: AsyncEngine, type: str
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    r = await client.post(
        f"/v1/orgs/{org_id}/custom-fields",
        json={"name": "f-1_x", "type": type},
        headers=admin.headers,
    )
    assert r.status_code == 201
    assert r.json() == field_body(org_id, r.json()["id"], "f-1_x", type)


async def test_duplicate_name(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    other_org, (other_admin,) = await factories.org_with_members(db)
    body = {"name": "owner", "type": "text"}
    r = await client.post(f"/v1/orgs/{org_id}/custom-fields", json=body, headers=admin.headers)
    assert r.status_code == 201
    before = await snapshot(db)
    r = await client.post(
        f"/v1/orgs/{org_id}/custom-fields",
        json={"name": "owner", "type": "number"},
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        409,
        error(409, "A custom field named 'owner' already exists"),
    )
    assert await snapshot(db) == before
    # Names are unique per organization only.
    r = await client.post(
        f"/v1/orgs/{other_org}/custom-fields", json=body, headers=other_admin.headers
    )
    assert r.status_code == 201


async def test_option_rules(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    url = f"/v1/orgs/{org_id}/custom-fields"
    for body in (
        {"name": "area", "type": "select:multi", "options": ["a"]},
        {"name": "note", "type": "text"},
    ):
        assert (await client.post(url, json=body, headers=admin.headers)).status_code == 201
    before = await snapshot(db)
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        (
            "POST",
            url,
            {"name": "x", "type": "select:single"},
            "Invalid body field 'options': required for select:single fields",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "select:multi"},
            "Invalid body field 'options': required for select:multi fields",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "boolean", "options": ["a"]},
            "Invalid body field 'options': only select:single and select:multi fields have "
            "options, not boolean",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "select:single", "options": ["b", "a", "b", "a"]},
            "Invalid body field 'options': repeated options: a, b",
        ),
        (
            "PATCH",
            f"{url}/note",
            {"options": ["a"]},
            "Invalid body field 'options': only select:single and select:multi fields have "
            "options, not text",
        ),
        (
            "PATCH",
            f"{url}/area",
            {"options": None},
            "Invalid body field 'options': must not be null",
        ),
        (
            "PATCH",
            f"{url}/area",
            {"options": ["a", "a"]},
            "Invalid body field 'options': repeated options: a",
        ),
    ]
    for method, target, body, message in cases:
        r = await client.request(method, target, json=body, headers=admin.headers)
        assert (r.status_code, r.json()) == (400, error(400, message)), body
    assert await snapshot(db) == before


async def test_who_may_do_what(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor, guest) = await factories.org_with_members(db, "create", None)
    outsider = await factories.user(db)
    url = f"/v1/orgs/{org_id}/custom-fields"
    r = await client.post(url, json={"name": "owner", "type": "text"}, headers=admin.headers)
    field = r.json()
    before = await snapshot(db)

    r = await client.get(url, headers=editor.headers)
    assert r.json() == {
        "items": [{**field, "permissions": {"view": True, "edit": False}}],
        "count": 1,
    }
    refusals = [
        (editor, "POST", url, {"name": "x", "type": "text"}, 403,
         "Only organization admins can create custom fields"),
        (editor, "PATCH", f"{url}/owner", {"title": "T"}, 403,
         "Only organization admins can change custom fields"),
        (editor, "DELETE", f"{url}/owner", None, 403,
         "Only organization admins can delete custom fields"),
        (guest, "GET", url, None, 403, "Guests cannot view custom fields"),
        (guest, "GET", f"{url}/owner", None, 403, "Guests cannot view custom fields"),
        (guest, "POST", url, {"name": "x", "type": "text"}, 403,
         "Only organization admins can create custom fields"),
        (guest, "PATCH", f"{url}/owner", {"title": "T"}, 403, "Guests cannot view custom fields"),
        (guest, "DELETE", f"{url}/owner", None, 403, "Guests cannot view custom fields"),
        # An unknown field is a 404 even to a member who could not change it.
        (editor, "PATCH", f"{url}/nope", {"title": "T"}, 404, "Custom field not found"),
        (editor, "DELETE", f"{url}/nope", None, 404, "Custom field not found"),
        (outsider, "GET", url, None, 404, "Organization not found"),
        (outsider, "GET", f"{url}/owner", None, 404, "Organization not found"),
        (outsider, "POST", url, {"name": "x", "type": "text"}, 404, "Organization not found"),
    ]  # fmt: skip
    for who, method, target, body, status, message in refusals:
        r = await client.request(method, target, headers=who.headers, json=body)
        assert (r.status_code, r.json()) == (status, error(status, message)), (method, target)
    assert await snapshot(db) == before


async def test_pagination(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    url = f"/v1/orgs/{org_id}/custom-fields"
    # Created out of name order: the listing is by creation.
    names = ["zeta", "alpha", "mid", "beta", "omega"]
    for name in names:
        r = await client.post(url, json={"name": name, "type": "text"}, headers=admin.headers)
        assert r.status_code == 201
        clock.advance(timedelta(seconds=1))
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        r = await client.get(url, params=params, headers=admin.headers)
        assert r.json()["count"] == 5
        seen += [f["name"] for f in r.json()["items"]]
        if "next" not in r.json():
            break
        params["page"] = r.json()["next"]["page"]
    assert seen == names
    r = await client.get(url, params={"limit": 0}, headers=admin.headers)
    assert r.json() == {"items": [], "count": 5}


async def test_bad_input_changes_nothing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    url = f"/v1/orgs/{org_id}/custom-fields"
    r = await client.post(
        url, json={"name": "area", "type": "select:single", "options": ["a"]}, headers=admin.headers
    )
    assert r.status_code == 201
    before = await snapshot(db)
    pattern = "String should match pattern '^[a-z_\\-0-9]+$'"
    cases: list[tuple[str, str, Any, str]] = [
        ("POST", url, {"type": "text"}, "Missing required body field 'name'"),
        ("POST", url, {"name": "x"}, "Missing required body field 'type'"),
        ("POST", url, {"name": "Big", "type": "text"}, f"Invalid body field 'name': {pattern}"),
        ("POST", url, {"name": "a b", "type": "text"}, f"Invalid body field 'name': {pattern}"),
        ("POST", url, {"name": "ab\n", "type": "text"}, f"Invalid body field 'name': {pattern}"),
        (
            "POST",
            url,
            {"name": "", "type": "text"},
            "Invalid body field 'name': String should have at least 1 character",
        ),
        (
            "POST",
            url,
            {"name": "a" * 51, "type": "text"},
            "Invalid body field 'name': String should have at most 50 characters",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "date"},
            "Invalid body field 'type': Input should be 'text', 'number', 'boolean', 'tags', "
            "'select:multi' or 'select:single'",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "text", "title": "t" * 101},
            "Invalid body field 'title': String should have at most 100 characters",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "text", "description": "d" * 201},
            "Invalid body field 'description': String should have at most 200 characters",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "text", "placeholder": "p" * 101},
            "Invalid body field 'placeholder': String should have at most 100 characters",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "select:single", "options": []},
            "Invalid body field 'options': List should have at least 1 item after validation, "
            "not 0",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "select:single", "options": [str(i) for i in range(51)]},
            "Invalid body field 'options': List should have at most 50 items after validation, "
            "not 51",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "select:single", "options": ["o" * 41]},
            "Invalid body field 'options.0': String should have at most 40 characters",
        ),
        (
            "POST",
            url,
            {"name": "x", "type": "select:single", "options": [""]},
            "Invalid body field 'options.0': String should have at least 1 character",
        ),
        ("POST", url, {"name": "x", "type": "text", "object": "x"}, "Unknown body field 'object'"),
        ("PATCH", f"{url}/area", {"name": "renamed"}, "Unknown body field 'name'"),
        ("PATCH", f"{url}/area", {"type": "text"}, "Unknown body field 'type'"),
        (
            "PATCH",
            f"{url}/area",
            {"title": 5},
            "Invalid body field 'title': Input should be a valid string",
        ),
    ]
    for method, target, body, message in cases:
        r = await client.request(method, target, json=body, headers=admin.headers)
        assert (r.status_code, r.json()) == (400, error(400, message)), body
    assert await snapshot(db) == before


async def test_options_in_use_and_cascade(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    url = f"/v1/orgs/{org_id}/custom-fields"
    ids: dict[str, str] = {}
    bodies: list[dict[str, Any]] = [
        {"name": "area", "type": "select:multi", "options": ["api", "sdk", "cli", "web"]},
        {"name": "audience", "type": "select:single", "options": ["internal", "public"]},
        {"name": "owner", "type": "text"},
    ]
    for body in bodies:
        r = await client.post(url, json=body, headers=admin.headers)
        ids[body["name"]] = r.json()["id"]
        clock.advance(timedelta(seconds=1))
    one, two = await add_space(db, org_id), await add_space(db, org_id)
    async with unit_of_work(db) as conn:
        await repository.set_values(
            conn, one, {ids["area"]: ["api", "sdk"], ids["audience"]: "public"}
        )
        await repository.set_values(conn, two, {ids["area"]: ["cli"], ids["owner"]: "Ann"})
        # Setting again replaces; None removes.
        await repository.set_values(conn, two, {ids["area"]: ["api"], ids["owner"]: None})
    async with db.connect() as conn:
        rows = await repository.values_for_space(conn, org_id, two, lock=True)
        assert [(r["name"], r["value"]) for r in rows] == [
            ("area", ["api"]),
            ("audience", None),
            ("owner", None),
        ]
        rows = await repository.values_for_space(conn, org_id, one)
        assert [(r["name"], r["value"]) for r in rows] == [
            ("area", ["api", "sdk"]),
            ("audience", "public"),
            ("owner", None),
        ]

    before = await snapshot(db)
    for name, options, in_use in (
        ("area", ["web"], "api, sdk"),
        ("area", ["cli", "sdk", "web"], "api"),
        ("audience", ["internal"], "public"),
    ):
        r = await client.patch(f"{url}/{name}", json={"options": options}, headers=admin.headers)
        assert (r.status_code, r.json()) == (
            409,
            error(409, f"Options in use by spaces: {in_use}"),
        )
    assert await snapshot(db) == before
    # Options no space uses may go, and reordering is free.
    r = await client.patch(
        f"{url}/area", json={"options": ["sdk", "api", "new"]}, headers=admin.headers
    )
    assert (r.status_code, r.json()["options"]) == (200, ["sdk", "api", "new"])

    r = await client.delete(f"{url}/area", headers=admin.headers)
    assert r.status_code == 204
    async with db.connect() as conn:
        stmt = sa.select(custom_field_values.c.field_id, custom_field_values.c.value)
        assert [tuple(row) for row in await conn.execute(stmt)] == [(ids["audience"], "public")]
        rows = await repository.values_for_space(conn, org_id, one)
        assert [(r["name"], r["value"]) for r in rows] == [("audience", "public"), ("owner", None)]


# -- validate_value --

OPTIONS = ["red", "green", "blue"]


@pytest.mark.parametrize(
    ("field_type", "value", "expected"),
    [
        ("text", "", ""),
        ("text", "x" * MAX_TEXT, "x" * MAX_TEXT),
        ("number", 0, 0),
        ("number", -2.5, -2.5),
        ("number", 10**30, 10**30),
        ("boolean", True, True),
        ("boolean", False, False),
        ("tags", [], []),
        ("tags", ["a", "b", "a"], ["a", "b"]),
        ("tags", ["t" * MAX_TEXT], ["t" * MAX_TEXT]),
        ("select:single", "green", "green"),
        ("select:multi", [], []),
        ("select:multi", ["blue", "red"], ["blue", "red"]),
    ],
)
def test_validate_value_accepts(field_type: str, value: object, expected: object) -> None:
    assert validate_value(field_type, OPTIONS, value) == expected


@pytest.mark.parametrize(
    ("field_type", "value", "rule"),
    [
        ("text", "x" * (MAX_TEXT + 1), "must be a string of at most 256 characters"),
        ("text", 5, "must be a string of at most 256 characters"),
        ("text", None, "must be a string of at most 256 characters"),
        ("number", True, "must be a number"),
        ("number", "5", "must be a number"),
        ("number", float("nan"), "must be a finite number"),
        ("number", float("inf"), "must be a finite number"),
        ("boolean", 1, "must be a boolean"),
        ("boolean", "true", "must be a boolean"),
        ("tags", "a", "must be a list of strings of at most 256 characters"),
        ("tags", ["a", 1], "must be a list of strings of at most 256 characters"),
        ("tags", ["t" * (MAX_TEXT + 1)], "must be a list of strings of at most 256 characters"),
        ("select:single", "purple", "must be one of the options: red, green, blue"),
        ("select:single", ["red"], "must be one of the options: red, green, blue"),
        ("select:multi", "red", "must be a list of options"),
        ("select:multi", ["red", 2], "must be a list of options"),
        ("select:multi", ["red", "pink", "pink", "gold"], "not among the options: pink, gold"),
        ("select:multi", ["red", "blue", "red"], "options chosen more than once: red"),
    ],
)
def test_validate_value_refuses(field_type: str, value: object, rule: str) -> None:
    with pytest.raises(BadRequest) as caught:
        validate_value(field_type, OPTIONS, value, field="values.colour.value")
    assert caught.value.message == f"Invalid body field 'values.colour.value': {rule}"


def test_validate_value_default_field_name_and_unknown_type() -> None:
    with pytest.raises(BadRequest, match=r"^Invalid body field 'value': must be a boolean$"):
        validate_value("boolean", None, "no")
    with pytest.raises(ValueError, match="unknown custom field type 'date'"):
        validate_value("date", None, "2026-01-01")


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=300)
    | st.sampled_from(OPTIONS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


def is_gitbook_value(value: object) -> bool:
    """GitBook's CustomFieldValue: a string (max 256), a number, a boolean or a list of strings."""
    if isinstance(value, str):
        return len(value) <= MAX_TEXT
    if isinstance(value, list):
        return all(isinstance(v, str) and len(v) <= MAX_TEXT for v in value)
    return isinstance(value, int | float | bool)


@given(st.sampled_from(FIELD_TYPES), st.lists(st.sampled_from(OPTIONS), unique=True), json_values)
def test_validate_value_properties(field_type: str, options: list[str], value: object) -> None:
    try:
        result = validate_value(field_type, options, value)
    except BadRequest as exc:
        assert exc.message.startswith("Invalid body field 'value': ")
        return
    # What is accepted is storable on GitBook's wire and is its own normal form.
    assert is_gitbook_value(result)
    assert validate_value(field_type, options, result) == result
    if field_type == "select:single":
        assert result in options
    if field_type in ("select:multi", "tags"):
        assert isinstance(result, list) and len(set(result)) == len(result)
    if field_type == "select:multi":
        assert isinstance(result, list) and set(result) <= set(options)


def values_of(field_type: str, options: list[str]) -> st.SearchStrategy[object]:
    text = st.text(max_size=MAX_TEXT)
    return {
        "text": text,
        "number": st.integers() | st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(),
        "tags": st.lists(text, unique=True, max_size=5),
        "select:single": st.sampled_from(options),
        "select:multi": st.lists(st.sampled_from(options), unique=True),
    }[field_type]


@given(st.data())
def test_every_well_formed_value_is_accepted_unchanged(data: st.DataObject) -> None:
    field_type = data.draw(st.sampled_from(FIELD_TYPES))
    options = data.draw(st.lists(st.text(min_size=1, max_size=40), min_size=1, unique=True))
    value = data.draw(values_of(field_type, options))
    assert validate_value(field_type, options, value) == value
