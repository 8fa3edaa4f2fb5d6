"""The permission model, table-driven: every organization role (and guest, and outsider) by
space visibility by inheritance path (space and collection default levels) by direct and team
grants, checking access (200 or the 404 of a missing space), listings and the `permissions`
object. The oracle below restates the rules independently of authz/content.py."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests import factories
from tests.factories import Who
from tests.helpers import error

ORDER = [None, "read", "comment", "edit", "review", "create", "admin"]
VISIBILITIES = ["private", "in-collection", "unlisted", "public", "share-link", "visitor-auth"]
SPACE_LEVELS = ["inherit", None, "read", "admin"]


def rank(role: str | None) -> int:
    return ORDER.index(role)


def best(*roles: str | None) -> str | None:
    return max(roles, key=rank)


def lower(a: str | None, b: str | None) -> str | None:
    return None if a is None or b is None else min(a, b, key=rank)


@dataclass
class Collection:
    id: str
    level: str | None
    parent: Collection | None = None

    def chain(self) -> list[Collection]:
        out, current = [], self
        while current is not None:
            out.append(current)
            current = current.parent
        return out


@dataclass
class Space:
    id: str
    visibility: str
    level: str | None
    parent: Collection | None
    user_grants: dict[str, str] = field(default_factory=dict)


@dataclass
class Person:
    who: Who | None
    org_role: str | None
    member: bool
    teams: set[str] = field(default_factory=set)


def oracle_space(p: Person, s: Space, team_grants: dict[tuple[str, str], str]) -> str | None:
    """The rules as GitBook's "Permissions and inheritance" states them: visibility is about
    readers outside the organization (`private` = not public), so it never caps members."""
    if p.member and p.org_role == "admin":
        return "admin"
    inherited = None
    if p.member:
        levels = [s.level] if s.level != "inherit" and s.visibility != "in-collection" else []
        levels += [c.level for c in (s.parent.chain() if s.parent else []) if c.level != "inherit"]
        level = levels[0] if levels else p.org_role
        inherited = lower(p.org_role, level)
    grants: list[str | None] = []
    if p.who is not None:
        grants.append(s.user_grants.get(p.who.id))
    for c in s.parent.chain() if s.parent else []:
        grants += [team_grants.get((t, c.id)) for t in p.teams]
    return best(inherited, *grants)


def oracle_collection(
    p: Person, c: Collection, team_grants: dict[tuple[str, str], str]
) -> str | None:
    if p.member and p.org_role == "admin":
        return "admin"
    inherited = None
    if p.member:
        levels = [x.level for x in c.chain() if x.level != "inherit"]
        inherited = lower(p.org_role, levels[0] if levels else p.org_role)
    grants = [team_grants.get((t, x.id)) for x in c.chain() for t in p.teams]
    return best(inherited, *grants)


def space_permissions(role: str | None) -> dict[str, bool]:
    at = lambda r: rank(role) >= rank(r)  # noqa: E731
    return {
        "view": at("read"),
        "access": at("read"),
        "admin": at("admin"),
        "viewInviteLinks": at("admin"),
        "edit": at("edit"),
        "triggerGitSync": at("edit"),
        "comment": at("comment"),
        "merge": at("review"),
        "review": at("review"),
        "installIntegration": at("admin"),
    }


def collection_permissions(role: str | None) -> dict[str, bool]:
    return {
        "view": rank(role) >= rank("read"),
        "admin": role == "admin",
        "viewInviteLinks": role == "admin",
        "create": rank(role) >= rank("create"),
    }


async def _ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json() if r.content else None


async def test_permission_model(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    roles = ["create", "review", "edit", "comment", "read", None]
    org_id, people_list = await factories.org_with_members(db, *roles, "read", None)
    admin = people_list[0]
    direct_user, team_user = people_list[-2], people_list[-1]
    outsider = await factories.user(db)
    await factories.organization(db, owner=outsider, title="Elsewhere")
    h = admin.headers

    async def collection(title: str, level: str | None, parent: Collection | None) -> Collection:
        body: dict[str, Any] = {"title": title}
        if parent:
            body["parent"] = parent.id
        c = await _ok(
            await client.post(f"/v1/orgs/{org_id}/collections", json=body, headers=h), 201
        )
        await _ok(
            await client.patch(
                f"/v1/collections/{c['id']}", json={"defaultLevel": level}, headers=h
            )
        )
        return Collection(c["id"], level, parent)

    c_inherit = await collection("Inherit", "inherit", None)
    c_none = await collection("Closed", None, None)
    c_comment = await collection("Commenters", "comment", None)
    c_nested = await collection("Nested", "inherit", c_comment)
    collections = [c_inherit, c_none, c_comment, c_nested]

    r = await client.put(
        f"/v1/orgs/{org_id}/teams", json={"title": "T", "members": [team_user.id]}, headers=h
    )
    team_id = (await _ok(r, 201))["id"]
    team_grants = {(team_id, c_none.id): "review"}
    await _ok(
        await client.post(
            f"/v1/collections/{c_none.id}/permissions",
            json={"role": "review", "teams": [team_id]},
            headers=h,
        ),
        204,
    )

    spaces: list[Space] = []
    for n, (parent, visibility, level) in enumerate(
        itertools.product([None, *collections], VISIBILITIES, SPACE_LEVELS)
    ):
        if visibility == "in-collection" and parent is None:
            continue
        body: dict[str, Any] = {"title": f"S{n}", "visibility": visibility}
        if parent:
            body["parent"] = parent.id
        s = await _ok(await client.post(f"/v1/orgs/{org_id}/spaces", json=body, headers=h), 201)
        await _ok(
            await client.patch(f"/v1/spaces/{s['id']}", json={"defaultLevel": level}, headers=h)
        )
        space = Space(s["id"], visibility, level, parent)
        if n % 3 == 0:
            await _ok(
                await client.post(
                    f"/v1/spaces/{space.id}/permissions",
                    json={"role": "edit", "users": [direct_user.id]},
                    headers=h,
                ),
                204,
            )
            space.user_grants[direct_user.id] = "edit"
        spaces.append(space)
    assert len(spaces) == 116

    people = [Person(admin, "admin", True)]
    people += [Person(w, role, True) for w, role in zip(people_list[1:7], roles, strict=True)]
    people += [Person(direct_user, "read", True), Person(team_user, None, True, {team_id})]
    people += [Person(outsider, None, False)]

    checked = 0
    for p in people:
        assert p.who is not None
        visible = set()
        for s in spaces:
            expected = oracle_space(p, s, team_grants)
            r = await client.get(f"/v1/spaces/{s.id}", headers=p.who.headers)
            context = (
                p.org_role,
                p.member,
                s.visibility,
                s.level,
                s.parent and s.parent.level,
                expected,
            )
            if expected is None:
                assert (r.status_code, r.json()) == (404, error(404, "Space not found")), context
            else:
                assert r.status_code == 200, context
                assert r.json()["permissions"] == space_permissions(expected), context
                visible.add(s.id)
            checked += 1
        for c in collections:
            expected = oracle_collection(p, c, team_grants)
            r = await client.get(f"/v1/collections/{c.id}", headers=p.who.headers)
            if expected is None:
                assert (r.status_code, r.json()) == (404, error(404, "Collection not found")), (
                    p.org_role,
                    c.level,
                )
            else:
                assert r.json()["permissions"] == collection_permissions(expected), (
                    p.org_role,
                    c.level,
                )
        # Listings agree with GET: what is listed is exactly what can be read.
        r = await client.get(
            f"/v1/orgs/{org_id}/spaces", params={"limit": 1000}, headers=p.who.headers
        )
        if not p.member:
            assert r.status_code == 404
            continue
        listed = {item["id"] for item in r.json()["items"]}
        assert listed == visible, (p.org_role, len(listed), len(visible))
        assert r.json()["count"] == len(visible)
    assert checked == len(people) * len(spaces)


async def test_actions_follow_the_role(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    """View but no right to act is 403; no view is 404."""
    org_id, (admin, editor, reader) = await factories.org_with_members(db, "edit", "read")
    r = await client.post(
        f"/v1/orgs/{org_id}/spaces",
        json={"title": "Docs", "visibility": "unlisted"},
        headers=admin.headers,
    )
    space_id = r.json()["id"]
    r = await client.post(
        f"/v1/orgs/{org_id}/spaces", json={"title": "Secret"}, headers=admin.headers
    )
    secret_id = r.json()["id"]
    r = await client.patch(
        f"/v1/spaces/{secret_id}", json={"defaultLevel": None}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    for who in (editor, reader):
        r = await client.patch(f"/v1/spaces/{space_id}", json={"title": "X"}, headers=who.headers)
        assert (r.status_code, r.json()) == (
            403,
            error(403, "Only admins of the space can do this"),
        )
        r = await client.patch(f"/v1/spaces/{secret_id}", json={"title": "X"}, headers=who.headers)
        assert (r.status_code, r.json()) == (404, error(404, "Space not found"))
    r = await client.post(
        f"/v1/spaces/{secret_id}/permissions",
        json={"role": "admin", "users": [editor.id]},
        headers=admin.headers,
    )
    assert r.status_code == 204
    r = await client.patch(
        f"/v1/spaces/{secret_id}", json={"title": "Shared"}, headers=editor.headers
    )
    assert (r.status_code, r.json()["title"], r.json()["permissions"]["admin"]) == (
        200,
        "Shared",
        True,
    )


def test_oracle_hand_checked_rows() -> None:
    """The oracle itself, on rows worked out by hand."""
    commenters = Collection("c1", "comment")
    closed = Collection("c2", None)
    nested = Collection("c3", "inherit", commenters)
    editor = Person(None, "edit", True)
    team = {("t", "c2"): "review"}
    assert oracle_space(editor, Space("s", "unlisted", "inherit", commenters), {}) == "comment"
    assert oracle_space(editor, Space("s", "unlisted", "inherit", nested), {}) == "comment"
    assert oracle_space(editor, Space("s", "public", "read", None), {}) == "read"
    assert oracle_space(editor, Space("s", "public", "admin", None), {}) == "edit"
    assert oracle_space(editor, Space("s", "private", "admin", None), {}) == "edit"
    assert oracle_space(editor, Space("s", "private", "inherit", None), {}) == "edit"
    assert oracle_space(editor, Space("s", "private", None, None), {}) is None
    assert oracle_space(editor, Space("s", "in-collection", "admin", commenters), {}) == "comment"
    assert (
        oracle_space(Person(None, None, True), Space("s", "unlisted", "inherit", None), {}) is None
    )
    assert (
        oracle_space(Person(None, None, True, {"t"}), Space("s", "private", None, closed), team)
        == "review"
    )
    assert (
        oracle_space(Person(None, "admin", True), Space("s", "private", None, closed), {})
        == "admin"
    )
    assert (
        oracle_space(Person(None, "admin", False), Space("s", "public", "admin", None), {}) is None
    )
