"""The pure permission resolver: table-driven cases and properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.authz.roles import (
    INHERIT,
    ROLES,
    at_least,
    effective_role,
    highest,
    rank,
    resolve_default_level,
)

roles_or_none = st.sampled_from([None, *ROLES])
levels = st.sampled_from([None, INHERIT, *ROLES])


@pytest.mark.parametrize(
    ("org_role", "chain", "expected"),
    [
        ("edit", [], "edit"),
        ("edit", [INHERIT, INHERIT], "edit"),
        ("edit", ["read"], "read"),
        ("read", ["edit"], "read"),
        ("edit", [None], None),
        ("edit", [INHERIT, "comment"], "comment"),
        ("edit", ["review", "read"], "edit"),
        ("admin", [None], "admin"),
        (None, ["admin"], None),
    ],
)
def test_inherited_role(
    org_role: str | None, chain: list[str | None], expected: str | None
) -> None:
    assert effective_role(org_role=org_role, is_member=True, default_levels=chain) == expected


def test_grants_raise_the_role() -> None:
    assert effective_role(org_role="read", is_member=True, user_grants=["edit"]) == "edit"
    assert (
        effective_role(org_role="read", is_member=True, team_grants=["review", "comment"])
        == "review"
    )
    assert (
        effective_role(
            org_role=None, is_member=True, default_levels=[None], user_grants=["comment"]
        )
        == "comment"
    )
    assert effective_role(org_role=None, is_member=False, team_grants=["read"]) == "read"


def test_order() -> None:
    assert [r for r in ROLES] == ["read", "comment", "edit", "review", "create", "admin"]
    assert (
        at_least("review", "edit") and not at_least("edit", "review") and not at_least(None, "read")
    )


@given(
    roles_or_none,
    st.lists(levels, max_size=4),
    st.lists(roles_or_none, max_size=3),
    st.lists(roles_or_none, max_size=3),
)
def test_effective_role_properties(
    org_role: str | None, chain: list[str | None], users: list[str | None], teams: list[str | None]
) -> None:
    role = effective_role(
        org_role=org_role,
        is_member=True,
        default_levels=chain,
        user_grants=users,
        team_grants=teams,
    )
    # Never below any grant, never above the best of what could give it.
    assert all(rank(role) >= rank(g) for g in [*users, *teams])
    assert rank(role) <= max(rank(org_role), *(rank(g) for g in [*users, *teams]), 0)
    # Organization admins are admins everywhere.
    if org_role == "admin":
        assert role == "admin"
    # Without grants, what flows down is capped by the resolved default level.
    if not users and not teams and org_role != "admin":
        assert rank(role) <= rank(resolve_default_level(chain, org_role))


@given(st.lists(roles_or_none))
def test_highest_is_max_by_rank(roles: list[str | None]) -> None:
    assert rank(highest(roles)) == max((rank(r) for r in roles), default=0)


@given(roles_or_none, st.lists(levels, max_size=3), st.lists(roles_or_none, max_size=3))
def test_outsiders_get_only_grants(
    org_role: str | None, chain: list[str | None], grants: list[str | None]
) -> None:
    assert effective_role(
        org_role=org_role, is_member=False, default_levels=chain, user_grants=grants
    ) == highest(grants)


# -- ContentScope: an organization admin's grants are never read ---------------------------------

_Org = tuple[dict[str, tuple[str, Any]], list[dict[str, Any]], dict[tuple[str, str], Any]]
_COLLECTIONS = ["c0", "c1", "c2", "c3"]
_SPACES = ["s0", "s1", "s2", "s3"]


@st.composite
def _organizations(draw: st.DrawFn) -> _Org:
    """A collection tree (each collection under ROOT or an earlier one), spaces in it, and the
    grants one member holds (directly or through teams, already merged)."""
    from docshelf.authz.content import ROOT

    tree = {
        c: (draw(st.sampled_from([ROOT, *_COLLECTIONS[:i]])), draw(levels))
        for i, c in enumerate(_COLLECTIONS)
    }
    spaces = [
        {
            "id": s,
            "parent_id": draw(st.sampled_from([None, *_COLLECTIONS])),
            "visibility": draw(st.sampled_from(["private", "in-collection", "public"])),
            "default_level": draw(levels),
        }
        for s in _SPACES
    ]
    targets = [("collection", c) for c in _COLLECTIONS] + [("space", s) for s in _SPACES]
    grants = draw(st.dictionaries(st.sampled_from(targets), st.sampled_from(ROLES), max_size=6))
    return tree, spaces, grants


@given(_organizations())
def test_no_grant_changes_what_an_organization_admin_may_do(org: _Org) -> None:
    # ContentScope does not read an admin's grants (caller_grants skips its subqueries): sound only
    # if every answer it gives an admin is the same with and without them.
    from docshelf.authz.content import ContentScope

    tree, spaces, grants = org

    def scope(with_grants: dict[tuple[str, str], str]) -> ContentScope:
        return ContentScope(
            org_id="o",
            user_id="u",
            is_member=True,
            org_role="admin",
            tree=dict(tree),
            grants=dict(with_grants),
        )

    granted, bare = scope(grants), scope({})
    for space in spaces:
        assert granted.space_role(space) == bare.space_role(space) == "admin"
    for c in _COLLECTIONS:
        assert granted.collection_role(c) == bare.collection_role(c) == "admin"
    assert granted.administered_collections() == bare.administered_collections()
    for clauses in (
        (granted.visible_spaces(), bare.visible_spaces()),
        (granted.visible_collections(), bare.visible_collections()),
    ):
        (a, a_values), (b, b_values) = clauses
        assert a is b and a_values == b_values
    assert granted.administered_spaces_clause() is bare.administered_spaces_clause()


@pytest.mark.parametrize(
    ("org_role", "is_member", "read", "expected"),
    [
        ("read", True, None, {}),
        ("read", True, ",", {}),
        ("read", True, "space:s1:edit,", {("space", "s1"): "edit"}),
        (
            None,
            True,
            ",space:s1:read,collection:c1:review",
            {("space", "s1"): "read", ("collection", "c1"): "review"},
        ),
        # The same target directly and through a team, either way round: the highest counts.
        ("read", True, "space:s1:comment,space:s1:admin", {("space", "s1"): "admin"}),
        ("read", True, "space:s1:admin,space:s1:comment", {("space", "s1"): "admin"}),
        # Refused even if given: an outsider's grants would give access, an admin's nothing.
        ("read", False, "space:s1:edit", {}),
        ("admin", True, "space:s1:edit", {}),
    ],
)
def test_grants_read_back(
    org_role: str | None, is_member: bool, read: str | None, expected: dict[Any, str]
) -> None:
    """What `caller_grants` read (direct grants, a separator, the teams' grants)."""
    from docshelf.authz.content import ContentScope

    scope = ContentScope(org_id="o", user_id="u", is_member=is_member, org_role=org_role)
    scope._take_grants(read)
    assert scope.grants == expected
