"""Effective roles on collections and spaces for one user in one organization.

`ContentScope.load` reads, in three small queries, everything the resolution needs: the caller's
organization role, the organization's collection tree (ids, parents, default levels) and every
grant the caller holds directly or through a team. Roles are then resolved in memory with
`authz.roles`, and `visible_spaces_clause` turns the same rules into SQL so lists, counts and
cursors never include what GET would answer 404 for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.roles import INHERIT, Role, highest, rank, resolve_default_level
from docshelf.models import collections, content_grants, members, spaces, team_members

ROOT = ""  # parent key of top-level content


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
        role_row = (
            await conn.execute(
                sa.select(members.c.role).where(
                    members.c.organization_id == org_id, members.c.user_id == user_id
                )
            )
        ).first()
        scope = cls(
            org_id=org_id,
            user_id=user_id,
            is_member=role_row is not None,
            org_role=role_row.role if role_row is not None else None,
        )
        rows = await conn.execute(
            sa.select(collections.c.id, collections.c.parent_id, collections.c.default_level).where(
                collections.c.organization_id == org_id
            )
        )
        scope.tree = {r.id: (r.parent_id or ROOT, r.default_level) for r in rows}
        my_teams = sa.select(team_members.c.team_id).where(
            team_members.c.organization_id == org_id, team_members.c.user_id == user_id
        )
        grant_rows = await conn.execute(
            sa.select(
                content_grants.c.target_type, content_grants.c.target_id, content_grants.c.role
            ).where(
                content_grants.c.organization_id == org_id,
                sa.or_(
                    sa.and_(
                        content_grants.c.principal_type == "user",
                        content_grants.c.principal_id == user_id,
                    ),
                    sa.and_(
                        content_grants.c.principal_type == "team",
                        content_grants.c.principal_id.in_(my_teams),
                    ),
                ),
            )
        )
        # Access to content is for members (guests included); grants never outlive membership.
        for g in grant_rows if scope.is_member else ():
            key = (g.target_type, g.target_id)
            scope.grants[key] = highest([scope.grants.get(key), g.role]) or g.role
        return scope

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
        if self.is_admin:
            return "admin"
        parent, own_level = self.tree.get(collection_id, (ROOT, INHERIT))
        if own_level == INHERIT:
            inherited = self.parent_inherited(parent or None)
        else:
            inherited = cap(self.org_role, own_level) if self.is_member else None
        return highest([inherited, self._chain_grant(collection_id)])

    def space_role(self, space: Any) -> Role | None:
        """`space` is a row mapping with id, parent_id, visibility and default_level."""
        if self.is_admin:
            return "admin"
        parent = space["parent_id"]
        visibility = space["visibility"]
        level = space["default_level"]
        if visibility == "private":
            inherited = None
        elif level == INHERIT or visibility == "in-collection":
            inherited = self.parent_inherited(parent)
        else:
            inherited = cap(self.org_role, level) if self.is_member else None
        from_parent = self._chain_grant(parent) if parent else None
        return highest([inherited, from_parent, self.grants.get(("space", space["id"]))])

    # -- the same rules as SQL -------------------------------------------------------------

    def visible_collections_clause(self) -> sa.ColumnElement[bool]:
        if self.is_admin:
            return sa.true()
        visible = [c for c in self.tree if self.collection_role(c) is not None]
        return collections.c.id.in_(visible) if visible else sa.false()

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
        return sa.or_(spaces.c.id.in_(direct), spaces.c.parent_id.in_(parents))

    def visible_spaces_clause(self) -> sa.ColumnElement[bool]:
        if self.is_admin:
            return sa.true()
        parents = [*self.tree, None]
        granted_parents = [p for p in self.tree if self._chain_grant(p) is not None]
        inheriting = [p for p in parents if self.parent_inherited(p) is not None]
        direct = [tid for (kind, tid) in self.grants if kind == "space"]
        ors: list[sa.ColumnElement[bool]] = []
        if direct:
            ors.append(spaces.c.id.in_(direct))
        if granted_parents:
            ors.append(spaces.c.parent_id.in_(granted_parents))
        not_private = spaces.c.visibility != "private"
        inherits = sa.or_(spaces.c.default_level == INHERIT, spaces.c.visibility == "in-collection")
        if inheriting:
            in_parent = sa.or_(
                spaces.c.parent_id.in_([p for p in inheriting if p is not None]),
                spaces.c.parent_id.is_(None) if None in inheriting else sa.false(),
            )
            ors.append(sa.and_(not_private, inherits, in_parent))
        if self.is_member and self.org_role is not None:
            ors.append(
                sa.and_(
                    not_private,
                    sa.not_(inherits),
                    spaces.c.default_level.is_not(None),
                )
            )
        return sa.or_(*ors) if ors else sa.false()


@dataclass(frozen=True, slots=True)
class ContentAccess:
    """A space or collection row as one caller sees it, with their effective role."""

    row: sa.RowMapping
    scope: ContentScope
    role: str | None

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def org_id(self) -> str:
        return str(self.row["organization_id"])
