"""Property tests of the site structure's invariants under random create / move / default /
delete sequences: first against the pure ordering and default rules (site/ordering.py), then,
smaller, through HTTP against the database."""

from __future__ import annotations

from typing import Any

import httpx
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.errors import BadRequest
from docshelf.models import site_sections, site_spaces
from docshelf.site import ordering
from tests import factories


class Siblings(RuleBasedStateMachine):
    """One parent's siblings as the services keep them: stored positions, one default. The
    model is a plain list in the intended order."""

    def __init__(self) -> None:
        super().__init__()
        self.positions: dict[str, int] = {}
        self.default: str | None = None
        self.model: list[str] = []
        self.paths: dict[str, str] = {}
        self.serial = 0
        self.writes = 0
        self.moves = 0

    def stored_order(self) -> list[str]:
        return sorted(self.positions, key=lambda i: (self.positions[i], i))

    @rule(title=st.text(max_size=12))
    def create(self, title: str) -> None:
        self.serial += 1
        item = f"i{self.serial:04d}"
        end = max(self.positions.values()) + ordering.GAP if self.positions else 0
        self.positions[item] = end
        self.paths[item] = ordering.path_from(title, set(self.paths.values()), "item")
        if self.default is None:
            self.default = item
        self.model.append(item)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), where=st.sampled_from(["before", "after", "end"]))
    def move(self, data: st.DataObject, where: str) -> None:
        item = data.draw(st.sampled_from(self.model))
        anchor = None if where == "end" else data.draw(st.sampled_from(self.model))
        before = anchor if where == "before" else None
        after = anchor if where == "after" else None
        try:
            order = ordering.place(self.stored_order(), item, before=before, after=after)
        except BadRequest:
            assert anchor == item
            return
        new = ordering.positions_for(order, item, self.positions)
        # One row unless the gap between the neighbours closed.
        assert len(new) == 1 or len(new) == len(order)
        self.writes += len(new)
        self.moves += 1
        self.positions.update(new)
        self.model = order

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def make_default(self, data: st.DataObject) -> None:
        self.default = data.draw(st.sampled_from(self.model))

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(self.model))
        self.default = ordering.next_default(self.stored_order(), item, self.default)
        del self.positions[item]
        del self.paths[item]
        self.model.remove(item)

    @invariant()
    def order_is_the_model(self) -> None:
        assert self.stored_order() == self.model

    @invariant()
    def one_default(self) -> None:
        assert (self.default is None) == (not self.model)
        assert self.default is None or self.default in self.model

    @invariant()
    def paths_unique_and_safe(self) -> None:
        paths = list(self.paths.values())
        assert len(set(paths)) == len(paths)
        assert all(ordering.is_url_safe(p) for p in paths)


TestSiblings = Siblings.TestCase
TestSiblings.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


def test_a_closed_gap_renumbers_once_then_moves_write_one_row() -> None:
    positions = {"a": 0, "b": 1}
    order = ordering.place(["a", "b"], "c", before="b", after=None)
    new = ordering.positions_for(order, "c", positions)
    assert new == {"a": 0, "c": ordering.GAP, "b": 2 * ordering.GAP}
    positions = {"a": 0, "b": 1024, "c": 2048}
    assert ordering.positions_for(["a", "c", "b"], "c", positions) == {"c": 512}


# -- through HTTP --

operation = st.one_of(
    st.tuples(st.just("section"), st.integers(0, 3)),
    st.tuples(st.just("site-space"), st.integers(0, 3), st.integers(0, 5)),
    st.tuples(st.just("move-section"), st.integers(0, 5), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("move-site-space"), st.integers(0, 9), st.integers(0, 9), st.booleans()),
    st.tuples(st.just("default-section"), st.integers(0, 5)),
    st.tuples(st.just("default-site-space"), st.integers(0, 9)),
    st.tuples(st.just("delete-section"), st.integers(0, 5)),
    st.tuples(st.just("delete-site-space"), st.integers(0, 9)),
    st.tuples(st.just("delete-space"), st.integers(0, 3)),
)


async def _check(
    db: AsyncEngine, site_id: str, client: httpx.AsyncClient, site_url: str, headers: dict[str, str]
) -> None:
    async with db.connect() as conn:
        sections = (
            (await conn.execute(sa.select(site_sections).where(site_sections.c.site_id == site_id)))
            .mappings()
            .all()
        )
        rows = (
            (await conn.execute(sa.select(site_spaces).where(site_spaces.c.site_id == site_id)))
            .mappings()
            .all()
        )
    if sections:
        assert sum(s["is_default"] for s in sections) == 1
        assert len({s["path"] for s in sections}) == len(sections)
        # Every section shows a site space; no site space sits at the root beside sections.
        assert {r["section_key"] for r in rows} == {s["id"] for s in sections}
    for key in {r["section_key"] for r in rows}:
        siblings = [r for r in rows if r["section_key"] == key]
        assert sum(r["is_default"] for r in siblings) == 1
        assert len({r["path"] for r in siblings}) == len(siblings)
        assert all(ordering.is_url_safe(r["path"]) for r in siblings)
    r = await client.get(site_url, headers=headers)
    assert r.json()["siteSpaces"] == len(rows)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(operation, min_size=1, max_size=12))
async def test_invariants_hold_through_http(
    client: httpx.AsyncClient, db: AsyncEngine, ops: list[tuple[Any, ...]]
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    space_ids = [(await factories.api_space(client, org, admin, title=t))["id"] for t in "ABCA"]
    r = await client.post(f"/v1/orgs/{org}/sites", json={"spaces": space_ids[:1]}, headers=h)
    site_id = r.json()["id"]
    url = f"/v1/orgs/{org}/sites/{site_id}"

    async def items() -> tuple[list[str], list[str]]:
        structure = (await client.get(f"{url}/structure", headers=h)).json()
        ss = (await client.get(f"{url}/site-spaces", headers=h)).json()["items"]
        sections = (
            [s["id"] for s in structure["structure"]] if structure["type"] == "sections" else []
        )
        return sections, [s["id"] for s in ss]

    for op in ops:
        sections, site_space_ids = await items()

        def pick(pool: list[str], i: int) -> str:
            return pool[i % len(pool)] if pool else "missing"

        kind = op[0]
        if kind == "section":
            r = await client.post(f"{url}/sections", json={"spaceId": space_ids[op[1]]}, headers=h)
        elif kind == "site-space":
            body = {"spaceId": space_ids[op[1]]}
            if sections and op[2] % 2:
                body["sectionId"] = pick(sections, op[2])
            r = await client.post(f"{url}/site-spaces", json=body, headers=h)
        elif kind == "move-section":
            position = {
                "before" if op[3] else "after": {
                    "type": "site-section",
                    "siteSection": pick(sections, op[2]),
                }
            }
            r = await client.post(
                f"{url}/sections/{pick(sections, op[1])}/move",
                json={"position": position},
                headers=h,
            )
        elif kind == "move-site-space":
            position = {
                "before" if op[3] else "after": {
                    "type": "site-space",
                    "siteSpace": pick(site_space_ids, op[2]),
                }
            }
            r = await client.post(
                f"{url}/site-spaces/{pick(site_space_ids, op[1])}/move",
                json={"position": position},
                headers=h,
            )
        elif kind == "default-section":
            r = await client.patch(
                url, json={"defaultSiteSection": pick(sections, op[1])}, headers=h
            )
        elif kind == "default-site-space":
            r = await client.patch(
                url, json={"defaultSiteSpace": pick(site_space_ids, op[1])}, headers=h
            )
        elif kind == "delete-section":
            r = await client.delete(f"{url}/sections/{pick(sections, op[1])}", headers=h)
        elif kind == "delete-site-space":
            r = await client.delete(f"{url}/site-spaces/{pick(site_space_ids, op[1])}", headers=h)
        else:
            r = await client.delete(f"/v1/spaces/{space_ids[op[1]]}", headers=h)
        # Every refusal is a clean 4xx (a sibling that is not one, a space gone, a section's
        # last site space); never a 5xx.
        assert r.status_code < 500, (op, r.text)
        await _check(db, site_id, client, url, h)
