"""Effective roles on collections and spaces for one user in one organization.

`ContentScope.load` reads, in two small queries, everything the resolution needs: the caller's
organization role with every grant they hold directly or through a team (`caller_grants`: none
for an organization admin, as none changes what an admin may do), and the organization's
collection tree (ids, parents, default levels). The statements that read a space or an
organization with the caller's membership carry `caller_grants` too (`near_known`,
`load_known`), so a space's role takes one query (two in a collection) and an organization's
listing two.
`ContentScope.near` reads only the collections above one place (one recursive query), which
is all a space's or a collection's own role needs. Roles are then resolved in memory with
`authz.roles`, and `visible_spaces` turns the same rules into SQL so lists, counts and cursors
never include what GET would answer 404 for: a clause built once per shape, whose ids travel as
one JSON array parameter each, whatever their number.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal

from docshelf.authz.roles import (
    INHERIT,
    DefaultLevel,
    Role,
    effective_role,
    highest,
    rank,
    resolve_default_level,
)
from docshelf.kit.sql import Row
from docshelf.models import collections, content_grants, members, spaces, team_members

ROOT = ""  # parent key of top-level content


class _InIds(sa.ColumnElement[bool]):
    """`column IN (the strings of one JSON array parameter)`: one bind parameter however many
    ids, so a large organization never meets the drivers' parameter limits (32767 on
    PostgreSQL) and the statement's cache key does not depend on the number of ids."""

    __visit_name__ = "in_ids"
    inherit_cache = True
    type = sa.Boolean()
    # A comparison already: SQLite must not get a trailing "= 1", which would hide the index.
    _is_implicitly_boolean = True
    _traverse_internals = [
        ("column", InternalTraversal.dp_clauseelement),
        ("ids", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, column: sa.ColumnElement[Any], ids: Collection[str] | str) -> None:
        """`ids`: the ids, or the name of the parameter that holds them (ids_value's)."""
        self.column = column
        if isinstance(ids, str):
            self.ids = sa.bindparam(ids, type_=sa.Text())
        else:
            self.ids = sa.bindparam(None, ids_value(ids), type_=sa.Text(), unique=True)


def ids_value(ids: Collection[str]) -> str:
    return orjson.dumps(sorted(ids)).decode()


@compiles(_InIds)
def _in_ids_sqlite(element: _InIds, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    return f"{column} IN (SELECT value FROM json_each({compiler.process(element.ids, **kw)}))"


@compiles(_InIds, "postgresql")
def _in_ids_postgresql(element: _InIds, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    ids = compiler.process(element.ids, **kw)
    return f"{column} IN (SELECT jsonb_array_elements_text(CAST({ids} AS JSONB)))"


def in_ids(column: sa.ColumnElement[Any], ids: Collection[str]) -> sa.ColumnElement[bool]:
    return _InIds(column, ids) if ids else sa.false()


# Built once, its cache key with it: every listing across an organization runs it.
_TREE = sa.select(collections.c.id, collections.c.parent_id, collections.c.default_level).where(
    collections.c.organization_id == sa.bindparam("oid")
)

# Ids, target types and roles hold neither separator. The field separators and the empty string
# are written into the SQL, so each read binds only what varies (aggregate_strings binds its own
# separator).
_ENTRY_SEP, _FIELD_SEP = ",", ":"
_ENTRY_SQL, _FIELD_SQL, _EMPTY_SQL = (
    sa.literal_column(f"'{text}'", sa.String()) for text in (_ENTRY_SEP, _FIELD_SEP, "")
)


def caller_grants(
    org_id: sa.Column[str], member: sa.ColumnElement[Any], org_role: sa.ColumnElement[Any]
) -> sa.ColumnElement[str | None]:
    """The caller's (bind parameter `uid`) grants in `org_id` as one column of the statement
    that reads the content and the caller's membership (`member`, `org_role`), so that
    resolving a role on it takes no second round trip: NULL for a non-member, and for an
    organization admin, who is admin on everything: no grant can change a role, a visible set
    or an administered set of theirs. Two indexed look-ups, direct and through the caller's
    teams, however large the organization. `ContentScope._take_grants` reads it back."""
    entry = (
        content_grants.c.target_type
        + _FIELD_SQL
        + content_grants.c.target_id
        + _FIELD_SQL
        + content_grants.c.role
    )

    def held(principal_type: str, principal: sa.ColumnElement[bool]) -> sa.ColumnElement[str]:
        found = sa.select(sa.func.aggregate_strings(entry, _ENTRY_SEP)).where(
            content_grants.c.organization_id == org_id,
            content_grants.c.principal_type == principal_type,
            principal,
        )
        return sa.func.coalesce(found.correlate(org_id.table).scalar_subquery(), _EMPTY_SQL)

    # The teams first, then each team's grants by the index: written as a join, SQLite (which
    # keeps no statistics) walks every team grant in the organization instead.
    teams = sa.select(team_members.c.team_id).where(
        team_members.c.organization_id == org_id, team_members.c.user_id == sa.bindparam("uid")
    )
    both = (
        held("user", content_grants.c.principal_id == sa.bindparam("uid"))
        + _ENTRY_SQL
        + held("team", content_grants.c.principal_id.in_(teams.correlate(org_id.table)))
    )
    return sa.case((member.is_(None), sa.null()), (org_role == "admin", sa.null()), else_=both)


# The caller's role in an organization, and their grants in it: every content read that did not
# read them with the content runs it.
_ROLE = sa.select(
    members.c.role,
    caller_grants(members.c.organization_id, members.c.user_id, members.c.role).label("grants"),
).where(members.c.organization_id == sa.bindparam("oid"), members.c.user_id == sa.bindparam("uid"))


def cap(org_role: str | None, level: str | None) -> str | None:
    """What an organization role gives under a resolved default level."""
    if org_role is None or level is None:
        return None
    return level if rank(level) < rank(org_role) else org_role


@dataclass
class ContentScope:
    org_id: str
    user_id: str
    is_member: bool
    org_role: str | None
    # collection id -> (parent id or ROOT, default level)
    tree: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # (target type, target id) -> best role granted to the user or one of their teams
    grants: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def is_admin(self) -> bool:
        return self.is_member and self.org_role == "admin"

    @classmethod
    async def load(cls, conn: AsyncConnection, org_id: str, user_id: str) -> ContentScope:
        """With the organization's whole collection tree: for listings across it."""
        scope = await cls._for(conn, org_id, user_id)
        await scope._load_tree(conn)
        return scope

    @classmethod
    async def load_known(
        cls,
        conn: AsyncConnection,
        org_id: str,
        user_id: str,
        *,
        is_member: bool,
        org_role: str | None,
        grants: str | None,
    ) -> ContentScope:
        """`load` for a caller whose membership and grants (`caller_grants`) were read with the
        organization (org_policy.load): one query fewer."""
        scope = cls(org_id=org_id, user_id=user_id, is_member=is_member, org_role=org_role)
        scope._take_grants(grants)
        await scope._load_tree(conn)
        return scope

    @classmethod
    async def near(
        cls, conn: AsyncConnection, org_id: str, user_id: str, collection_id: str | None
    ) -> ContentScope:
        """With only `collection_id` and the collections above it: enough to resolve roles on
        that collection and on what it directly holds."""
        scope = await cls._for(conn, org_id, user_id)
        if collection_id is not None:
            scope.tree = await ancestors_of(conn, org_id, collection_id)
        return scope

    @classmethod
    async def near_known(
        cls,
        conn: AsyncConnection,
        org_id: str,
        user_id: str,
        collection_id: str | None,
        *,
        is_member: bool,
        org_role: str | None,
        grants: str | None,
        role_only: bool = False,
    ) -> ContentScope:
        """`near` for a caller whose membership and grants (`caller_grants`) were read together
        with the content: one query fewer. A non-member needs nothing more (grants never
        outlive membership, and the tree only shapes what membership gives); with `role_only`
        (the caller will only ask for the role on this content) neither does an organization
        admin, who is admin everywhere."""
        scope = cls(org_id=org_id, user_id=user_id, is_member=is_member, org_role=org_role)
        if not is_member or (role_only and scope.is_admin):
            return scope
        scope._take_grants(grants)
        if collection_id is not None:
            scope.tree = await ancestors_of(conn, org_id, collection_id)
        return scope

    @classmethod
    async def near_members(
        cls,
        conn: AsyncConnection,
        org_id: str,
        roles: dict[str, str],
        collection_id: str | None,
    ) -> dict[str, ContentScope]:
        """`near` for several members at once (user id -> organization role, already read):
        one read of the collections above `collection_id` and one of all their grants, whatever
        their number."""
        tree = await ancestors_of(conn, org_id, collection_id) if collection_id else {}
        scopes = {
            uid: cls(org_id=org_id, user_id=uid, is_member=True, org_role=role, tree=dict(tree))
            for uid, role in roles.items()
        }
        if not scopes:
            return scopes
        uids = list(scopes)
        direct = sa.select(
            content_grants.c.principal_id.label("user_id"),
            content_grants.c.target_type,
            content_grants.c.target_id,
            content_grants.c.role,
        ).where(
            content_grants.c.organization_id == org_id,
            content_grants.c.principal_type == "user",
            in_ids(content_grants.c.principal_id, uids),
        )
        through_teams = (
            sa.select(
                team_members.c.user_id,
                content_grants.c.target_type,
                content_grants.c.target_id,
                content_grants.c.role,
            )
            .join(
                content_grants,
                sa.and_(
                    content_grants.c.organization_id == team_members.c.organization_id,
                    content_grants.c.principal_type == "team",
                    content_grants.c.principal_id == team_members.c.team_id,
                ),
            )
            .where(team_members.c.organization_id == org_id, in_ids(team_members.c.user_id, uids))
        )
        for g in await conn.execute(sa.union_all(direct, through_teams)):
            scopes[g.user_id]._grant(g.target_type, g.target_id, g.role)
        return scopes

    @classmethod
    async def _for(cls, conn: AsyncConnection, org_id: str, user_id: str) -> ContentScope:
        role_row = (await conn.execute(_ROLE, {"oid": org_id, "uid": user_id})).first()
        # Access to content is for members (guests included); grants never outlive membership.
        if role_row is None:
            return cls(org_id=org_id, user_id=user_id, is_member=False, org_role=None)
        scope = cls(org_id=org_id, user_id=user_id, is_member=True, org_role=role_row.role)
        scope._take_grants(role_row.grants)
        return scope

    async def _load_tree(self, conn: AsyncConnection) -> None:
        rows = await conn.execute(_TREE, {"oid": self.org_id})
        self.tree = {r.id: (r.parent_id or ROOT, r.default_level) for r in rows}

    def _take_grants(self, grants: str | None) -> None:
        """The grants `caller_grants` read (None for a non-member or an organization admin).
        Refused here too for those: an outsider's grants would give them access
        (roles.effective_role), and an admin's change nothing."""
        if not self.is_member or self.is_admin:
            return
        for entry in filter(None, (grants or "").split(_ENTRY_SEP)):
            target_type, rest = entry.split(_FIELD_SEP, 1)
            target_id, role = rest.rsplit(_FIELD_SEP, 1)
            self._grant(target_type, target_id, role)

    def _grant(self, target_type: str, target_id: str, role: str) -> None:
        """Several grants on one target (direct, through teams): the highest counts."""
        key = (target_type, target_id)
        self.grants[key] = highest([self.grants.get(key), role]) or role

    # -- the collection tree ---------------------------------------------------------------

    def ancestors(self, collection_id: str) -> list[str]:
        """The collection and its ancestors, nearest first (cycle-safe)."""
        chain: list[str] = []
        current = collection_id
        while current and current in self.tree and current not in chain:
            chain.append(current)
            current = self.tree[current][0]
        return chain

    def _chain_levels(self, collection_id: str) -> list[Any]:
        return [self.tree[c][1] for c in self.ancestors(collection_id)]

    def _chain_grant(self, collection_id: str) -> str | None:
        return highest(self.grants.get(("collection", c)) for c in self.ancestors(collection_id))

    def parent_inherited(self, parent_id: str | None) -> str | None:
        """What the organization role gives to content that inherits from this parent."""
        if not self.is_member:
            return None
        levels = self._chain_levels(parent_id) if parent_id else []
        return cap(self.org_role, resolve_default_level(levels, self.org_role))

    # -- roles -----------------------------------------------------------------------------

    def collection_role(self, collection_id: str) -> Role | None:
        return effective_role(
            org_role=self.org_role,
            is_member=self.is_member,
            default_levels=self._chain_levels(collection_id),
            user_grants=[self._chain_grant(collection_id)],
        )

    def space_role(self, space: Any) -> Role | None:
        """`space` is a row mapping with id, parent_id, visibility and default_level."""
        parent = space["parent_id"]
        # Visibility says who reads the space outside the organization; members' access comes
        # from the default level alone (GitBook: `private` is "not public", and `inherit`
        # gives members their organization role, capped by the collections above).
        own: DefaultLevel = (
            INHERIT if space["visibility"] == "in-collection" else space["default_level"]
        )
        return effective_role(
            org_role=self.org_role,
            is_member=self.is_member,
            default_levels=[own, *(self._chain_levels(parent) if parent else [])],
            user_grants=[
                self._chain_grant(parent) if parent else None,
                self.grants.get(("space", space["id"])),
            ],
        )

    # -- the same rules as SQL -------------------------------------------------------------

    def visible_collections(self) -> tuple[sa.ColumnElement[bool], dict[str, Any]]:
        """The collections the caller sees, as a clause built once per shape (a statement
        that holds it is then built once too) and the values of its parameters."""
        if self.is_admin:
            return sa.true(), {}
        visible = [c for c in self.tree if self.collection_role(c) is not None]
        if not visible:
            return sa.false(), {}
        return _VISIBLE_COLLECTIONS, {"vis_collections": ids_value(visible)}

    def administered_collections(self) -> list[str]:
        return [c for c in self.tree if self.collection_role(c) == "admin"]

    def administered_spaces_clause(self) -> sa.ColumnElement[bool]:
        """Spaces the caller administers. Below organization admin, admin only ever comes from
        a grant (an organization role is capped by it), on the space or an ancestor."""
        if self.is_admin:
            return sa.true()
        direct = [
            tid for (kind, tid), role in self.grants.items() if kind == "space" and role == "admin"
        ]
        parents = [c for c in self.tree if self._chain_grant(c) == "admin"]
        return sa.or_(in_ids(spaces.c.id, direct), in_ids(spaces.c.parent_id, parents))

    def visible_spaces(self) -> tuple[sa.ColumnElement[bool], dict[str, Any]]:
        """The spaces the caller sees, as a clause built once per shape (a statement that
        holds it is then built once too) and the values of its parameters."""
        if self.is_admin:
            return sa.true(), {}
        granted_parents = [p for p in self.tree if self._chain_grant(p) is not None]
        inheriting = [p for p in [*self.tree, None] if self.parent_inherited(p) is not None]
        named = [p for p in inheriting if p is not None]
        direct = [tid for (kind, tid) in self.grants if kind == "space"]
        shape = (
            bool(direct),
            bool(granted_parents),
            bool(named),
            None in inheriting,
            self.is_member and self.org_role is not None,
        )
        if not any(shape):
            return sa.false(), {}  # nothing to bind (and no parameter to bind it to)
        values = {
            "vis_direct": ids_value(direct),
            "vis_granted": ids_value(granted_parents),
            "vis_inheriting": ids_value(named),
        }
        return _visible_spaces(*shape), values

    def visible_spaces_clause(self) -> sa.ColumnElement[bool]:
        """visible_spaces with its values bound: parameters of their own, so that one statement
        may hold the clauses of two callers (a member's spaces as another member sees them)."""
        clause, values = self.visible_spaces()
        return clause.unique_params(values) if values else clause


_VISIBLE_COLLECTIONS = _InIds(collections.c.id, "vis_collections")


@functools.lru_cache(maxsize=64)
def _visible_spaces(
    direct: bool, granted: bool, inheriting: bool, at_root: bool, members_level: bool
) -> sa.ColumnElement[bool]:
    ors: list[sa.ColumnElement[bool]] = []
    if direct:
        ors.append(_InIds(spaces.c.id, "vis_direct"))
    if granted:
        ors.append(_InIds(spaces.c.parent_id, "vis_granted"))
    inherits = sa.or_(spaces.c.default_level == INHERIT, spaces.c.visibility == "in-collection")
    if inheriting or at_root:
        in_parent = sa.or_(
            _InIds(spaces.c.parent_id, "vis_inheriting") if inheriting else sa.false(),
            spaces.c.parent_id.is_(None) if at_root else sa.false(),
        )
        ors.append(sa.and_(inherits, in_parent))
    if members_level:
        ors.append(sa.and_(sa.not_(inherits), spaces.c.default_level.is_not(None)))
    return sa.or_(*ors) if ors else sa.false()


def _ancestors() -> sa.Select[Any]:
    c = collections.c
    start = sa.select(c.id, c.parent_id, c.default_level).where(
        c.id == sa.bindparam("collection_id"), c.organization_id == sa.bindparam("org_id")
    )
    chain = start.cte("chain", recursive=True)
    up = collections.alias("up")
    chain = chain.union(
        sa.select(up.c.id, up.c.parent_id, up.c.default_level).join(
            chain, up.c.id == chain.c.parent_id
        )
    )
    return sa.select(chain)


def _descendants() -> sa.Select[Any]:
    start = sa.select(collections.c.id).where(collections.c.id == sa.bindparam("collection_id"))
    tree = start.cte("tree", recursive=True)
    down = collections.alias("down")
    tree = tree.union(sa.select(down.c.id).join(tree, down.c.parent_id == tree.c.id))
    return sa.select(tree.c.id)


# Every read in a collection runs one of them: built once, with their cache keys.
_ANCESTORS = _ancestors()
_DESCENDANTS = _descendants()


async def ancestors_of(
    conn: AsyncConnection, org_id: str, collection_id: str
) -> dict[str, tuple[str, str | None]]:
    """The collection and those above it, as tree entries, in one recursive query (a cycle
    cannot be stored: moves refuse one; UNION stops one anyway)."""
    rows = await conn.execute(_ANCESTORS, {"collection_id": collection_id, "org_id": org_id})
    return {r.id: (r.parent_id or ROOT, r.default_level) for r in rows}


async def descendants_of(conn: AsyncConnection, collection_id: str) -> list[str]:
    """The collection and every collection below it, in one recursive query."""
    return list((await conn.execute(_DESCENDANTS, {"collection_id": collection_id})).scalars())


@dataclass(frozen=True, slots=True)
class ContentAccess:
    """A space or collection row as one caller sees it, with their effective role."""

    row: Row
    scope: ContentScope
    role: str | None

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def org_id(self) -> str:
        return str(self.row["organization_id"])
