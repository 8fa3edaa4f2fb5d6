"""A cursor continues only the listing it came from: the listing's identity (kit.pagination)
tells apart statements that differ in what they select, and reads the same for the same one
built again (in any process: an anonymous alias's object id never counts)."""

from __future__ import annotations

import sqlalchemy as sa

from docshelf.kit.pagination import _listing_identity
from docshelf.models import spaces, users


def _base() -> sa.Select[tuple[str]]:
    return sa.select(spaces.c.id)


def test_what_binds_nothing_still_counts() -> None:
    built = [
        _base(),
        _base().where(spaces.c.deleted_at.is_(None)),
        _base().where(spaces.c.deleted_at.is_not(None)),
        _base().where(spaces.c.parent_id.is_(None)),
        _base().where(sa.func.lower(spaces.c.title) == "a"),
        _base().where(sa.func.upper(spaces.c.title) == "a"),
        _base().where(sa.text("1 = 1")),
        _base().where(users.alias("author").c.id.is_(None)),
        _base().where(users.alias("merger").c.id.is_(None)),
    ]
    identities = [_listing_identity(stmt, None) for stmt in built]
    assert len(set(identities)) == len(built)


def test_the_same_listing_built_again_is_the_same() -> None:
    def build() -> sa.Select[tuple[str]]:
        anonymous = users.alias()
        return _base().where(spaces.c.id == "x", anonymous.c.id.is_(None))

    assert _listing_identity(build(), None) == _listing_identity(build(), None)
    assert _listing_identity(build(), {"a": 1}) != _listing_identity(build(), {"a": 2})
