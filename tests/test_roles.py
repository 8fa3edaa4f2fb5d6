"""The pure permission resolver: table-driven cases and properties."""

from __future__ import annotations

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
