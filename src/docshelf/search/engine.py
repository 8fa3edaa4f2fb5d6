"""The full-text index of main content and its queries: one interface, two engines.

The unit indexed is a section of a page (document.markdown.split_sections), each row carrying its
page's title so that a query may match across the title and the text. SQLite searches an FTS5
table ranked by bm25; PostgreSQL a weighted tsvector ranked by ts_rank. Both score a section
alike:

    2 x the share of the query's words found in the page title
  + 1 x the share found in the section title
  + the engine's relevance, squashed into [0, 1) (itself weighting page title > section title >
    body)

and a page as its best section. The shares are what makes a title match rank first on both
engines whatever their relevance functions make of the text: bm25 saturates term frequencies
(a word said ten times in a body all but ties with the page title) and gives a word found in
most rows next to no weight at all, wherever it was found.

A query is its whitespace-separated words, each one quoted for the engine (never read as query
syntax, so nothing a user types can raise), all of them required, the last one also matching as
a prefix so that a query typed as you go finds its word (unless the query is broad: see search).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import re
import unicodedata
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import reduce
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY
from sqlalchemy.dialects.postgresql.base import PGDialect
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import is_postgres, started
from docshelf.kit.lru import SizedLRU, counted
from docshelf.models.search import SEARCH_CONFIG, search_sections

MAX_SECTIONS = 5
SNIPPET_CHARS = 200

# Enough words for any real query; bounds the size of the statement a 512-character query makes.
_MAX_WORDS = 32
# A shorter last word would match as a prefix of a good part of the vocabulary.
_PREFIX_MIN = 3
# Ids per statement when deleting or fetching by page.
_BATCH = 200

# Sections ranked at most for one query (per tier, see search); past this a query is "broad".
CANDIDATES = 200
# A broad query's count estimate counts the matching sections up to this many.
COUNT_SECTIONS = 100_000

_TITLE_WEIGHT = 2.0
_SECTION_WEIGHT = 1.0

# A PostgreSQL snippet is cut from this much of its section's body (see _Postgres.snippet).
_MARKED_CHARS = 10_000
# Total length of the lexemes searched with one regular expression (see _Postgres._lexemes).
_REGEX_LEXEMES = 64

# Snippets come back from the engines with the matches between these, so that they can be cut
# around the first match; they cannot occur in indexed text, which is stripped of them.
_OPEN = "\x02"
_CLOSE = "\x03"
_UNINDEXABLE = str.maketrans("", "", "\x00\x02\x03")  # and PostgreSQL refuses NUL in text
# Text past this in a section is not indexed: PostgreSQL refuses a tsvector over 1 MB, which a
# huge section of varied words could reach, and the write that moved main would then fail.
_MAX_INDEXED = 100_000

_WORD = re.compile(r"[^\W_]")
_TOKEN = re.compile(r"[^\W_]+")

_t = search_sections
_S = TypeVar("_S")


@dataclass(frozen=True)
class IndexedSection:
    anchor: str | None
    title: str | None
    body: str


@dataclass(frozen=True)
class IndexedPage:
    title: str
    sections: tuple[IndexedSection, ...]


@dataclass(frozen=True)
class SectionHit:
    anchor: str | None
    title: str | None
    # A plain-text excerpt of about SNIPPET_CHARS characters around the first match.
    body: str


@dataclass(frozen=True)
class Hit:
    space_id: str
    page_id: str
    # Higher is better; comparable within one search only.
    score: float
    # Sections whose title or text holds a word of the query, best first, at most MAX_SECTIONS;
    # none when only the page title matched.
    sections: tuple[SectionHit, ...]


# -- writing ---------------------------------------------------------------------------------------


async def reindex(
    conn: AsyncConnection, space_id: str, pages: Mapping[str, IndexedPage | None]
) -> None:
    """Replaces the rows of each page (None: the page is gone)."""
    if not pages:
        return
    fts = not is_postgres(conn)
    ids = list(pages)
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start : start + _BATCH]
        stmt = sa.delete(_t).where(_t.c.space_id == space_id, _t.c.page_id.in_(chunk))
        if fts:
            stmt = stmt.where(*_fts_ids(space_id=[space_id], page_id=chunk))
        await conn.execute(stmt)
    rows = [
        {
            "space_id": space_id,
            "page_id": page_id,
            "position": position,
            "anchor": section.anchor,
            "page_title": _indexable(page.title),
            "section_title": None if section.title is None else _indexable(section.title),
            "body": _indexable(section.body),
        }
        for page_id, page in pages.items()
        if page is not None
        # A page without text still has a row, or its title could not be found.
        for position, section in enumerate(page.sections or (IndexedSection(None, None, ""),))
    ]
    for start in range(0, len(rows), 500):
        await conn.execute(sa.insert(_t), rows[start : start + 500])


def _indexable(text: str) -> str:
    return text[:_MAX_INDEXED].translate(_UNINDEXABLE)


async def copy_space(conn: AsyncConnection, source: str, target: str) -> None:
    """A duplicated space's index: the source's rows under the new id, in one statement (the
    copy's main is the source's main, so its pages index alike)."""
    names = ["page_id", "position", "anchor", "page_title", "section_title", "body"]
    select = sa.select(sa.literal(target), *[_t.c[n] for n in names]).where(_t.c.space_id == source)
    if not is_postgres(conn):
        select = select.where(*_fts_ids(space_id=[source]))
    await conn.execute(sa.insert(_t).from_select(["space_id", *names], select))


async def drop_space(conn: AsyncConnection, space_id: str) -> None:
    """Removes a space's rows. Needed on SQLite when a space is purged: the FTS5 table has no
    foreign key to cascade from (PostgreSQL's has, and this is then a no-op)."""
    stmt = sa.delete(_t).where(_t.c.space_id == space_id)
    if not is_postgres(conn):
        stmt = stmt.where(*_fts_ids(space_id=[space_id]))
    await conn.execute(stmt)


# -- searching -------------------------------------------------------------------------------------


# A statement is built once for a query's shape (its engine, its words' number and kinds, how
# its spaces are found) and run with the query's values as parameters (_Plan.values): building
# one and walking it for its cache key cost ~2.4 ms of a space search's ~12. Bounded: shapes
# are few (at most _MAX_WORDS words), but nothing here trusts that.
_BUILT: SizedLRU[tuple[Any, ...], Any] = counted(1024)
_IN_SPACES = _t.c.space_id.in_(sa.bindparam("spaces", expanding=True))
_LIMIT = sa.bindparam("limit", type_=sa.BigInteger)
_OFFSET = sa.bindparam("offset", type_=sa.BigInteger)


def _built(
    plan: _Plan,
    key: tuple[Any, ...],
    build: Callable[[], _S],
    in_scope: sa.ColumnElement[bool] | None = None,
) -> _S:
    """The statement `build` makes for `plan`'s shape, built once. A plan without a shape
    (its spaces a SELECT, part of the statement), or a statement scoped otherwise than by the
    spaces parameter, has its own."""
    if plan.shape is None or (in_scope is not None and in_scope is not _IN_SPACES):
        return build()
    full = (*plan.shape, *key)
    stmt = _BUILT.get(full)
    if stmt is None:
        stmt = build()
        _BUILT.put(full, stmt)
    return stmt


@dataclass(frozen=True)
class Results:
    hits: list[Hit]
    # Pages matching the query: exact when `exact`, otherwise an estimate (see search).
    count: int
    # Whether every matching page was ranked. If not (a broad query), only the pages of the
    # candidate sections were, and paging ends after `ranked` pages.
    exact: bool
    ranked: int
    # How the hits' sections are found (see with_sections).
    _plan: _Plan | None = None


async def search(
    conn: AsyncConnection,
    query: str,
    *,
    space_ids: sa.Select[Any] | list[str],
    limit: int,
    offset: int,
    count: bool = True,
    sections: bool = True,
) -> Results:
    """Pages of the given spaces that match `query`, best first (ties by page id, then space
    id), from `offset`, at most `limit`. `space_ids` is a list or a SELECT of one column, so
    that what the caller may see can be decided in the same statement.

    A query matching at most CANDIDATES sections is ranked whole, and its count is exact. A
    broader one ranks only a bounded set of candidate sections, so that its cost does not grow
    with the number of matches: the CANDIDATES sections the engine finds first (SQLite: the
    most recently indexed; PostgreSQL: the first in (space, page, position) order) and as many
    of those whose page title holds every word, found the same way. Within that set the order
    is the usual one (a title match above a section title match above the body); pages
    outside it are not served, and `count` is then an estimate (the matching sections, counted
    up to COUNT_SECTIONS on SQLite, the planner's estimate on PostgreSQL, times the share of
    distinct pages among the first candidates; never below `ranked`); `count=False` skips it.
    The ranking of a broad query's candidates leaves the engine's relevance out (FTS5's bm25
    reads every match to weigh the words), so that pages alike in where the words are (page
    title, section title) are in page id order; so are their sections.

    `sections=False` leaves the hits' sections empty, for with_sections to fill in.
    """
    terms = _terms(query)
    if not terms or (isinstance(space_ids, list) and not space_ids):
        return Results([], 0, True, 0)
    if not is_postgres(conn) and not isinstance(space_ids, list):
        # FTS5 finds a list of spaces through its index; a SELECT would be a filter applied
        # to every match of the whole table.
        space_ids = [r[0] for r in await conn.execute(space_ids)]
        if not space_ids:
            return Results([], 0, True, 0)
    async with custom_plans(conn):
        return await _search(conn, terms, space_ids, limit, offset, count, sections)


@asynccontextmanager
async def custom_plans(conn: AsyncConnection) -> AsyncIterator[None]:
    """PostgreSQL plans the statements inside for their words. A generic plan (asyncpg
    prepares statements; PostgreSQL switches to one after five runs) cannot see them, so it
    guesses their matches: a rare word read through the primary key and filtered row by row
    cost 15 ms where the GIN index takes 1, and a common one read through the GIN index 30 ms
    where the primary key's order stops after 201 rows. Set for the session, not the
    transaction: reads run without one (SET LOCAL would do nothing), and it is reset after.
    Nested uses set it once (a caller running several searches wraps them all)."""
    if not is_postgres(conn) or (await started(conn)).info.get(_CUSTOM_PLANS):
        yield
        return
    await conn.execute(sa.text("SET plan_cache_mode = force_custom_plan"))
    conn.info[_CUSTOM_PLANS] = True
    try:
        yield
    except BaseException:
        # A failed transaction's rollback undoes the SET; after a failed read the connection
        # keeps it, which only costs its later statements a plan each.
        conn.info.pop(_CUSTOM_PLANS, None)
        raise
    conn.info.pop(_CUSTOM_PLANS, None)
    await conn.execute(sa.text("RESET plan_cache_mode"))


_CUSTOM_PLANS = "docshelf.search.custom_plans"


async def _search(
    conn: AsyncConnection,
    terms: list[_Term],
    space_ids: sa.Select[Any] | list[str],
    limit: int,
    offset: int,
    count: bool,
    sections: bool,
) -> Results:
    in_scope = _IN_SPACES if isinstance(space_ids, list) else _t.c.space_id.in_(space_ids)
    # PostgreSQL, a broad query's title tier over a SELECT of spaces: `IN (SELECT ...)` left
    # the planner knowing neither which spaces nor their order, and it joined the spaces with
    # every title match of the table (all organizations': 13 ms for `chapter` in the
    # benchmark's organization); an array is read in primary-key order from the titles btree,
    # stopping at the LIMIT (1.4 ms). Only there: for a word rare in the text, the array's
    # guessed size made it intersect the matches with the primary key's entries of every
    # space (5 ms for `section 7`, which the join answers in 1).
    title_scope = (
        in_scope
        if isinstance(space_ids, list)
        else _t.c.space_id == sa.any_(sa.func.array(space_ids.scalar_subquery()))
    )

    def plan_of(terms: list[_Term]) -> _Plan:
        return _Postgres(terms, space_ids) if is_postgres(conn) else _Fts5(terms, space_ids)

    # Broad or not is decided with the last word as typed first: as a prefix, a common word
    # would cost the whole of its matches (FTS5 merges every term it prefixes before reading
    # one row), and a broad query then does without the prefix.
    plan = plan_of([_Term(t.word, False) for t in terms])
    # Counted, not read: only a broad query's candidates are read (below).
    matching = await plan.count_candidates(conn, in_scope)
    if matching <= CANDIDATES and terms[-1].prefix:
        plan = plan_of(terms)
        # Ranked at once from the first CANDIDATES + 1 matches, which are all of them unless
        # the prefix made the query broad: one statement, where finding the candidates first
        # was two (~2 of a space search's ~15 ms).
        found = await _search_all(conn, plan, in_scope, limit, offset, bounded=True)
        if found is not None:
            return await with_sections(conn, found, found.hits) if sections else found
        matching = await plan.count_candidates(conn, in_scope)
    if not matching:
        return Results([], 0, True, 0)
    if matching <= CANDIDATES:
        found = await _search_all(conn, plan, in_scope, limit, offset)
        assert found is not None
        return await with_sections(conn, found, found.hits) if sections else found
    plan.broad = True
    first = (await conn.execute(plan.candidates(in_scope, title=False), plan.values)).all()
    first = first[:CANDIDATES]
    if not first:
        return Results([], 0, True, 0)  # counted through the index's scope alone (see _Fts5)
    titled = (await conn.execute(plan.candidates(title_scope, title=True), plan.values)).all()
    best: dict[tuple[str, str], float] = {}
    # A row found by both tiers scores the same twice: no need to tell them apart.
    for space_id, page_id, _, page_title, section_title in (*first, *titled):
        key = (space_id, page_id)
        score = plan.rescore(page_title, section_title)
        if score > best.get(key, -1.0):
            best[key] = score
    ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0][1], kv[0][0]))
    chosen = ranked[max(offset, 0) : max(offset, 0) + max(limit, 0)]
    estimate = 0
    if count:
        matched = await plan.count_sections(conn, in_scope)
        sampled = len({(r[0], r[1]) for r in first})
        estimate = max(len(ranked), round(matched * sampled / len(first)))
    hits = [Hit(s, p, score, ()) for (s, p), score in chosen]
    found = Results(hits, estimate, False, len(ranked), plan)
    return await with_sections(conn, found, hits) if sections else found


async def with_sections(conn: AsyncConnection, found: Results, hits: Sequence[Hit]) -> Results:
    """`found` with the sections of `hits` (some of its hits) filled in; the others as they
    were."""
    if found._plan is None or not hits:
        return found
    async with custom_plans(conn):
        sections = await _sections(conn, found._plan, [(h.space_id, h.page_id) for h in hits])
    wanted = {(h.space_id, h.page_id) for h in hits}
    return dataclasses.replace(
        found,
        hits=[
            dataclasses.replace(h, sections=sections.get((h.space_id, h.page_id), ()))
            if (h.space_id, h.page_id) in wanted
            else h
            for h in found.hits
        ],
    )


async def _search_all(
    conn: AsyncConnection,
    plan: _Plan,
    in_scope: sa.ColumnElement[bool],
    limit: int,
    offset: int,
    *,
    bounded: bool = False,
) -> Results | None:
    """Every match ranked. `bounded`: only the first CANDIDATES + 1 matches in the order
    `candidates` reads them, and None when there are more (a broad query) or when this page
    of the results is empty and so cannot tell."""

    def build() -> sa.Select[Any]:
        scored = sa.select(_t.c.space_id, _t.c.page_id, plan.score().label("score")).where(
            plan.matches(), in_scope
        )
        if bounded:
            scored = scored.order_by(*plan.scan_order()).limit(CANDIDATES + 1)
        rows = scored.cte("matches")
        if plan.materialized:
            rows = rows.prefix_with("MATERIALIZED")
        score = sa.func.max(rows.c.score).label("score")
        stmt = (
            sa.select(rows.c.space_id, rows.c.page_id, score, sa.func.count().over().label("total"))
            .group_by(rows.c.space_id, rows.c.page_id)
            .order_by(score.desc(), plan.in_order(rows.c.page_id), plan.in_order(rows.c.space_id))
            .limit(_LIMIT)
            .offset(_OFFSET)
        )
        if bounded:
            sections = sa.select(sa.func.count()).select_from(rows).scalar_subquery()
            stmt = stmt.add_columns(sections.label("sections"))
        return stmt

    stmt = _built(plan, ("ranked", bounded), build, in_scope)
    values = {**plan.values, "limit": max(limit, 0), "offset": max(offset, 0)}
    pages = (await conn.execute(stmt, values)).all() if limit > 0 else []
    if bounded and (not pages or pages[0].sections > CANDIDATES):
        return Results([], 0, True, 0) if limit > 0 and offset <= 0 and not pages else None
    hits = [Hit(r.space_id, r.page_id, float(r.score), ()) for r in pages]
    if pages:
        total = int(pages[0].total)
    else:
        matching = (
            sa.select(_t.c.space_id, _t.c.page_id).where(plan.matches(), in_scope).distinct()
        ).subquery()
        count = sa.select(sa.func.count()).select_from(matching)
        total = int((await conn.execute(count, plan.values)).one()[0])
    return Results(hits, total, True, total, plan)


async def _sections(
    conn: AsyncConnection, plan: _Plan, pages: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], tuple[SectionHit, ...]]:
    found: dict[tuple[str, str], list[Any]] = {}

    def build() -> sa.Select[Any]:
        return sa.select(
            _t.c.space_id,
            _t.c.page_id,
            _t.c.position,
            _t.c.anchor,
            _t.c.section_title,
            # A broad query's sections are scored here, as its candidates were (see rescore):
            # in SQL, the section title's share is a second MATCH of these pages' rows.
            (sa.literal(0.0) if plan.broad else plan.section_score()).label("score"),
            plan.snippet().label("snippet"),
        ).where(plan.section_matches(), plan.of_pages())

    stmt = _built(plan, ("sections", plan.broad), build)
    for start in range(0, len(pages), _BATCH):
        batch = pages[start : start + _BATCH]
        values = {**plan.values, **plan.of_pages_values(batch)}
        for row in await conn.execute(stmt, values):
            found.setdefault((row.space_id, row.page_id), []).append(row)

    def score(row: Any) -> float:
        return plan.section_share(row.section_title) if plan.broad else float(row.score)

    return {
        key: tuple(
            SectionHit(r.anchor, r.section_title, _snippet(plan.marked(r.snippet or "")))
            for r in sorted(rows, key=lambda r: (-score(r), r.position))[:MAX_SECTIONS]
        )
        for key, rows in found.items()
    }


@dataclass(frozen=True)
class _Term:
    word: str
    prefix: bool


def _terms(query: str) -> list[_Term]:
    # Words without a letter or digit index nothing on either engine and would only make
    # FTS5 match nothing at all ("" is a phrase no row holds).
    words = query.translate(_UNINDEXABLE).split()
    words = list(dict.fromkeys(w for w in words if _WORD.search(w)))[:_MAX_WORDS]
    return [_Term(w, i == len(words) - 1 and len(w) >= _PREFIX_MIN) for i, w in enumerate(words)]


def _snippet(marked: str) -> str:
    text = " ".join(marked.split())
    # No marker before the first opening one, so its index is also the match's in the plain text.
    at = text.find(_OPEN)
    plain = text.replace(_OPEN, "").replace(_CLOSE, "")
    if len(plain) <= SNIPPET_CHARS:
        return plain
    at = max(at, 0)  # no match in the body (the section title held it): its beginning
    start = max(0, min(at - SNIPPET_CHARS // 3, len(plain) - SNIPPET_CHARS))
    if start > 0:
        space = plain.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    end = start + SNIPPET_CHARS
    if end < len(plain):
        space = plain.rfind(" ", at, end)
        end = space if space > at else end
    return plain[start:end]


def _mark(text: str, start: int, end: int) -> str:
    """`text` with the match at `start:end` between _OPEN and _CLOSE, as the engines mark it."""
    return f"{text[:start]}{_OPEN}{text[start:end]}{_CLOSE}{text[end:]}"


def _tokens(text: str | None, strip_diacritics: bool) -> list[str]:
    """Roughly what the engines' tokenizers make of a text: lower-cased runs of letters and
    digits (and on SQLite without diacritics). Only used to rank a broad query's candidates,
    whose matching the engine has already decided."""
    text = (text or "").lower()
    if strip_diacritics and not text.isascii():
        text = "".join(
            c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)
        )
    return _TOKEN.findall(text)


class _Plan:
    """How one engine expresses a query's parts; `search` composes them."""

    # Whether the score must be computed in a query of its own, not merged into the grouping
    # one (FTS5's ranking functions are only available next to their MATCH).
    materialized = False
    # Whether a word of several tokens ("a:b") is a phrase (FTS5) or each token alone (tsquery).
    phrases = False
    strip_diacritics = False

    def __init__(self, terms: list[_Term], space_ids: sa.Select[Any] | list[str]) -> None:
        # Set for a broad query: sections are then ranked without the engine's relevance.
        self.broad = False
        self.words = [(_tokens(t.word, self.strip_diacritics), t.prefix) for t in terms]
        self._seen: dict[str | None, int] = {}
        # The statements' parameters (see _built): the query's words as each engine reads
        # them, and the spaces when they are a list (a SELECT of them is part of the
        # statement, which is then built for this query only).
        self.values: dict[str, Any] = {}
        self.shape: tuple[Any, ...] | None = None
        if isinstance(space_ids, list):
            self.values["spaces"] = space_ids
            self.shape = (type(self).__name__, tuple(t.prefix for t in terms))

    def _held(self, text: str | None) -> int:
        """How many of the query's words `text` holds."""
        # Titles repeat (a page's on each of its rows; "Overview" on many pages).
        held = self._seen.get(text)
        if held is None:
            held = self._seen[text] = self._count_held(text)
        return held

    def _count_held(self, text: str | None) -> int:
        if not text:
            return 0
        lowered = text.lower()
        if lowered.isascii() and not any(word and word[0] in lowered for word, _ in self.words):
            # Most of a broad query's section titles hold no word of it, and tokenizing each
            # cost more than the rest of its ranking. An ASCII text's tokens are pieces of its
            # lower-cased form, so a word whose first token is not in it is not held; a
            # non-ASCII text goes to _tokens (FTS5 strips its diacritics: é is e).
            return 0
        return self._count_tokens(text)

    def _count_tokens(self, text: str) -> int:
        tokens = _tokens(text, self.strip_diacritics)
        present = set(tokens)

        def has(part: str, prefix: bool) -> bool:
            return any(t.startswith(part) for t in present) if prefix else part in present

        found = 0
        for word, prefix in self.words:
            if len(word) == 1 or not self.phrases:
                # Each token alone (a one-token word, or tsquery's reading of several).
                last = len(word) - 1
                hit = bool(word) and all(has(p, prefix and j == last) for j, p in enumerate(word))
            else:
                # FTS5 reads a word of several tokens as a phrase: consecutive, in order.
                last = len(word) - 1
                hit = any(
                    all(
                        tokens[i + j].startswith(p) if prefix and j == last else tokens[i + j] == p
                        for j, p in enumerate(word)
                    )
                    for i in range(len(tokens) - last)
                )
            found += int(hit)
        return found

    def section_share(self, section_title: str | None) -> float:
        """A section's score as section_score computes it in SQL, less the engine's relevance."""
        return _SECTION_WEIGHT * self._held(section_title) / len(self.words)

    def rescore(self, page_title: str, section_title: str | None) -> float:
        """A candidate row's score as `score` computes it in SQL, less the engine's relevance."""
        n = len(self.words)
        return (
            _TITLE_WEIGHT * self._held(page_title) + _SECTION_WEIGHT * self._held(section_title)
        ) / n

    def scan_order(self) -> list[sa.ColumnElement[Any]]:
        """The order in which the engine reads a query's matches cheaply (see candidates)."""
        raise NotImplementedError

    def candidates(self, in_scope: sa.ColumnElement[bool], *, title: bool) -> sa.Select[Any]:
        """At most CANDIDATES + 1 matching rows (space_id, page_id, position, page_title,
        section_title) in an order the engine reads cheaply (a LIMIT stops it early); with
        `title`, only rows whose page title holds every word."""
        return _built(
            self,
            ("candidates", title),
            lambda: (
                sa.select(
                    _t.c.space_id,
                    _t.c.page_id,
                    _t.c.position,
                    _t.c.page_title,
                    _t.c.section_title,
                )
                .where(self.title_matches() if title else self.matches(), in_scope)
                .order_by(*self.scan_order())
                .limit(CANDIDATES + 1)
            ),
            in_scope,
        )

    async def count_candidates(
        self, conn: AsyncConnection, in_scope: sa.ColumnElement[bool]
    ) -> int:
        """How many rows `candidates` would read (at most CANDIDATES + 1), reading none."""
        stmt = _built(self, ("count candidates",), lambda: self._counted(in_scope), in_scope)
        return int((await conn.execute(stmt, self.values)).scalar_one())

    def _counted(self, in_scope: sa.ColumnElement[bool]) -> sa.Select[Any]:
        rows = sa.select(sa.literal(1)).select_from(_t).where(self.matches(), in_scope)
        return sa.select(sa.func.count()).select_from(rows.limit(CANDIDATES + 1).subquery())

    def title_matches(self) -> sa.ColumnElement[bool]:
        """Rows whose page title holds every word: a match of the whole query."""
        raise NotImplementedError

    async def count_sections(self, conn: AsyncConnection, in_scope: sa.ColumnElement[bool]) -> int:
        """The matching rows, at least roughly."""
        raise NotImplementedError

    def matches(self) -> sa.ColumnElement[bool]:
        raise NotImplementedError

    def score(self) -> sa.ColumnElement[float]:
        raise NotImplementedError

    def section_matches(self) -> sa.ColumnElement[bool]:
        """Rows of the pages (of_pages) that match and hold a word of the query in their own
        text."""
        raise NotImplementedError

    def section_score(self) -> sa.ColumnElement[float]:
        """The score without the page title's part, which is the same for every section."""
        raise NotImplementedError

    def of_pages(self) -> sa.ColumnElement[bool]:
        """Rows of the (space, page) pairs of_pages_values gives."""
        raise NotImplementedError

    def of_pages_values(self, pages: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """The parameters of of_pages, section_matches and section_score for these pages."""
        raise NotImplementedError

    def snippet(self) -> sa.ColumnElement[str]:
        """The section's body, or an excerpt of it, with its matches between _OPEN and
        _CLOSE (unless `marked` marks them)."""
        raise NotImplementedError

    def marked(self, snippet: str) -> str:
        return snippet

    def in_order(self, column: sa.ColumnElement[str]) -> sa.ColumnElement[str]:
        return column


# -- SQLite: FTS5 ----------------------------------------------------------------------------------

_TEXT = "{page_title section_title body}"
# Column weights, in table order: space_id, page_id, position, anchor, page_title, section_title,
# body, document, title_vector.
_BM25 = "bm25(search_sections, 0, 0, 0, 0, 10.0, 4.0, 1.0, 0, 0)"
_BODY_COLUMN = 6
_ROWID: sa.ColumnElement[int] = sa.literal_column("search_sections.rowid", sa.Integer)
# Spaces found through FTS5's index (one OR of their ids) rather than filtered afterwards: an OR
# of many ids costs more than reading the space of each match (100 ids: ten times as much).
_SCOPE_MAX = 10
_SNIPPET_TOKENS = 32


def _fts_quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


_TOKEN_ID = re.compile(r"[A-Za-z0-9]+")


def _fts_any_of(columns: Mapping[str, Sequence[str]]) -> list[str]:
    """MATCH terms finding the rows with these ids through the index, so that a page's or a
    space's rows are not looked for by reading the whole table. Ids the tokenizer would cut
    or drop are left to the exact comparison the caller always makes as well: this only
    narrows (ids differing in case only are one token)."""
    if not all(_TOKEN_ID.fullmatch(v) for values in columns.values() for v in values):
        return []
    return [
        "{%s} : (%s)" % (column, " OR ".join(_fts_quote(v) for v in values))  # noqa: UP031
        for column, values in columns.items()
    ]


def _fts_ids(**columns: Sequence[str]) -> list[sa.ColumnElement[bool]]:
    terms = _fts_any_of(columns)
    return [_fts_match(*terms)] if terms else []


def _fts_pages(pages: Sequence[tuple[str, str]]) -> list[str]:
    # Page ids alone: they are random enough to find few other rows, which the caller's exact
    # (space, page) comparison drops; each term more is one more look-up in every segment.
    return _fts_any_of({"page_id": sorted({p for _, p in pages})})


def _fts_match(*parts: str) -> sa.ColumnElement[bool]:
    return sa.literal_column("search_sections").op("MATCH", return_type=sa.Boolean)(
        " AND ".join(parts)
    )


def _fts_matches(name: str) -> sa.ColumnElement[bool]:
    """MATCH the query string of the plan's parameter `name`."""
    return sa.literal_column("search_sections").op("MATCH", return_type=sa.Boolean)(
        sa.bindparam(name, type_=sa.Text)
    )


class _Fts5(_Plan):
    materialized = True
    phrases = True
    strip_diacritics = True

    def __init__(self, terms: list[_Term], space_ids: sa.Select[Any] | list[str]) -> None:
        super().__init__(terms, space_ids)
        self.quoted = [_fts_quote(t.word) + ("*" if t.prefix else "") for t in terms]
        self.all = "(" + " ".join(self.quoted) + ")"
        # The spaces are found through the index rather than filtered out of every space's
        # matches.
        self.scope: list[str] = []
        if isinstance(space_ids, list) and len(space_ids) <= _SCOPE_MAX:
            self.scope = _fts_any_of({"space_id": space_ids})
        if self.shape is not None:
            self.shape = (*self.shape, bool(self.scope))
        text = f"{_TEXT} : {self.all}"
        self.values["text"] = " AND ".join([*self.scope, text])
        # Every word in the page title is a match of the whole query.
        self.values["title"] = " AND ".join([*self.scope, f"{{page_title}} : {self.all}"])
        for column in ("page_title", "section_title"):
            for i, phrase in enumerate(self.quoted):
                # The rows of the whole query only: the word alone may be on most rows.
                self.values[f"text_{column}_{i}"] = " AND ".join(
                    [*self.scope, text, f"{{{column}}} : {phrase}"]
                )

    def title_matches(self) -> sa.ColumnElement[bool]:
        return _fts_matches("title")

    def scan_order(self) -> list[sa.ColumnElement[Any]]:
        # FTS5 reads matches in rowid order, newest last: descending, a LIMIT stops early.
        return [_ROWID.desc()]

    def _counted(self, in_scope: sa.ColumnElement[bool]) -> sa.Select[Any]:
        # As count_sections: with the index's scope, only rowids are read (150 matches: 0.06
        # against 0.5 ms with the exact comparison of space ids, which reads every row).
        rows = sa.select(_ROWID).select_from(_t).where(self.matches())
        if not self.scope:
            rows = rows.where(in_scope)
        return sa.select(sa.func.count()).select_from(rows.limit(CANDIDATES + 1).subquery())

    async def count_sections(self, conn: AsyncConnection, in_scope: sa.ColumnElement[bool]) -> int:
        # Counted up to COUNT_SECTIONS: FTS5 reads only rowids for this (27,000 in ~2 ms).

        def build() -> sa.Select[Any]:
            rows = sa.select(_ROWID).select_from(_t).where(self.matches())
            if not self.scope:
                rows = rows.where(in_scope)
            # With the index's scope the exact comparison of space ids (which reads every row)
            # is left out: ids differing only in case would both be counted, in an estimate.
            return sa.select(sa.func.count()).select_from(rows.limit(COUNT_SECTIONS).subquery())

        stmt = _built(self, ("count",), build, in_scope)
        return int((await conn.execute(stmt, self.values)).scalar_one())

    def matches(self) -> sa.ColumnElement[bool]:
        return _fts_matches("text")

    def _share(self, weight: float, rows: str) -> sa.ColumnElement[float]:
        """The share of the query's words in a column: each word's MATCH (`rows`_i) is of the
        whole query's rows and that word in the column."""
        each = weight / len(self.quoted)
        found = [
            sa.case(
                (
                    _ROWID.in_(
                        sa.select(sa.literal_column("rowid"))
                        .select_from(_t)
                        .where(_fts_matches(f"{rows}_{i}"))
                        .correlate(None)
                    ),
                    each,
                ),
                else_=0.0,
            )
            for i in range(len(self.quoted))
        ]
        return reduce(operator.add, found)

    def _relevance(self) -> sa.ColumnElement[float]:
        # bm25 is 0 or below, better when lower.
        return sa.literal_column(f"(-{_BM25}) / (1.0 - {_BM25})", sa.Float)

    def score(self) -> sa.ColumnElement[float]:
        return (
            self._share(_TITLE_WEIGHT, "text_page_title")
            + self._share(_SECTION_WEIGHT, "text_section_title")
            + self._relevance()
        )

    def _found_by(self, pages: Sequence[tuple[str, str]]) -> list[str]:
        """MATCH terms finding these pages' rows through the index. A query that is not
        broad has at most CANDIDATES matches in its spaces: found through the spaces
        (the caller keeps the pages' rows), they cost less than a term per page, which bm25
        weighs on every row (50 pages: 5 ms against 1)."""
        return self.scope if self.scope and not self.broad else _fts_pages(pages)

    def of_pages_values(self, pages: Sequence[tuple[str, str]]) -> dict[str, Any]:
        found = [*self._found_by(pages), f"{_TEXT} : {self.all}"]
        held = "(" + " OR ".join(self.quoted) + ")"
        values = {
            # One JSON parameter rather than two a page: each one is bound, and the expanded
            # statement rewritten, on every run (50 pages: ~0.3 ms).
            "pages": json.dumps(pages),
            "sections": " AND ".join([*found, f"{{section_title body}} : {held}"]),
        }
        for i, phrase in enumerate(self.quoted):
            values[f"sections_section_title_{i}"] = " AND ".join(
                [*found, f"{{section_title}} : {phrase}"]
            )
        return values

    def of_pages(self) -> sa.ColumnElement[bool]:
        pair = sa.func.json_each(sa.bindparam("pages", type_=sa.Text())).table_valued("value")
        return sa.tuple_(_t.c.space_id, _t.c.page_id).in_(
            sa.select(
                sa.func.json_extract(pair.c.value, "$[0]"),
                sa.func.json_extract(pair.c.value, "$[1]"),
            )
        )

    def section_matches(self) -> sa.ColumnElement[bool]:
        return _fts_matches("sections")

    def section_score(self) -> sa.ColumnElement[float]:
        return self._share(_SECTION_WEIGHT, "sections_section_title") + self._relevance()

    def snippet(self) -> sa.ColumnElement[str]:
        # A short body is its own snippet (and spared the engine's cutting at words).
        return sa.case(
            (sa.func.length(_t.c.body) <= SNIPPET_CHARS, _t.c.body),
            else_=sa.literal_column(
                f"snippet(search_sections, {_BODY_COLUMN}, char(2), char(3), '', "
                f"{_SNIPPET_TOKENS})",
                sa.Text,
            ),
        )


# -- PostgreSQL: tsvector ----------------------------------------------------------------------

_CONFIG: sa.ColumnElement[Any] = sa.literal_column(f"'{SEARCH_CONFIG}'::regconfig")
_TEXTS = ARRAY(sa.Text())
# ts_rank's weights, in the order {D, C, B, A}: body C, section title B, page title A.
_WEIGHTS: sa.ColumnElement[Any] = sa.literal_column("'{0, 0.1, 0.4, 1.0}'::float4[]")
_SECTION_WEIGHTS: sa.ColumnElement[Any] = sa.literal_column("'{b,c}'::\"char\"[]")


def _tsquery(name: str, prefix: bool) -> sa.ColumnElement[Any]:
    # plainto_tsquery reads any text as plain words; the prefix mark goes on its last lexeme
    # through the tsquery's text form, which ends with that lexeme quoted.
    plain = sa.func.plainto_tsquery(_CONFIG, sa.bindparam(name, type_=sa.Text), type_=TSQUERY)
    if not prefix:
        return plain
    text = sa.cast(plain, sa.Text)
    return sa.case(
        (sa.func.right(text, 1) == "'", sa.cast(text + ":*", TSQUERY)),
        else_=plain,
    )


def _matches(vector: sa.ColumnElement[Any], query: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    return vector.op("@@", return_type=sa.Boolean)(query)


class _Postgres(_Plan):
    def __init__(self, terms: list[_Term], space_ids: sa.Select[Any] | list[str]) -> None:
        super().__init__(terms, space_ids)
        self.values.update({f"word_{i}": t.word for i, t in enumerate(terms)})
        self.terms = [_tsquery(f"word_{i}", t.prefix) for i, t in enumerate(terms)]
        self.all = reduce(lambda a, b: a.op("&&", return_type=TSQUERY)(b), self.terms)
        self.any = reduce(lambda a, b: a.op("||", return_type=TSQUERY)(b), self.terms)

    def matches(self) -> sa.ColumnElement[bool]:
        return _matches(_t.c.document, self.all)

    def title_matches(self) -> sa.ColumnElement[bool]:
        # The title's vector is stored: the planner reads rows in primary-key order (see
        # scan_order) until enough hold the words, and computing it for each row read was most
        # of the cost (4,700 rows, 12.7 ms).
        return _matches(_t.c.title_vector, self.all)

    def scan_order(self) -> list[sa.ColumnElement[Any]]:
        return [_t.c.space_id, _t.c.page_id, _t.c.position]

    async def count_sections(self, conn: AsyncConnection, in_scope: sa.ColumnElement[bool]) -> int:
        # The planner's estimate (the GIN statistics of the words): counting means visiting
        # every matching row of the heap (57 ms for 16,000 rows), the cost a broad query must
        # not have.
        stmt = sa.select(sa.literal(1)).where(self.matches(), in_scope).params(self.values)
        compiled = stmt.compile(
            dialect=PGDialect(paramstyle="named"),  # type: ignore[no-untyped-call]
            compile_kwargs={"render_postcompile": True},
        )
        explain = sa.text(f"EXPLAIN (FORMAT JSON) {compiled}").bindparams(**compiled.params)
        plan = (await conn.execute(explain)).scalar_one()
        if isinstance(plan, str):
            plan = json.loads(plan)
        return min(int(plan[0]["Plan"]["Plan Rows"]), COUNT_SECTIONS)

    def _share(self, weight: float, vector: sa.ColumnElement[Any]) -> sa.ColumnElement[float]:
        each = weight / len(self.terms)
        found = [sa.case((_matches(vector, term), each), else_=0.0) for term in self.terms]
        return reduce(operator.add, found)

    def _rank(self) -> sa.ColumnElement[float]:
        return sa.cast(sa.func.ts_rank(_WEIGHTS, _t.c.document, self.all), sa.Double[float]())

    def _relevance(self) -> sa.ColumnElement[float]:
        rank = self._rank()
        return rank / (1.0 + rank)

    def score(self) -> sa.ColumnElement[float]:
        return self._share(_TITLE_WEIGHT, _t.c.title_vector) + self.section_score()

    def section_matches(self) -> sa.ColumnElement[bool]:
        own = sa.func.ts_filter(_t.c.document, _SECTION_WEIGHTS)
        return sa.and_(self.matches(), _matches(own, self.any))

    def section_score(self) -> sa.ColumnElement[float]:
        section_title = sa.func.coalesce(_t.c.section_title, "")
        share = self._share(_SECTION_WEIGHT, sa.func.to_tsvector(_CONFIG, section_title))
        return share + self._relevance()

    def of_pages(self) -> sa.ColumnElement[bool]:
        # Two array parameters rather than a pair of parameters per page: PostgreSQL planned
        # the pairs as an OR of one index scan each (~1 ms of planning for 50 pages), and
        # each parameter costs compiling and sending.
        pairs = (
            sa.func.unnest(
                sa.bindparam("page_spaces", type_=_TEXTS), sa.bindparam("page_ids", type_=_TEXTS)
            )
            .table_valued("space_id", "page_id")
            .render_derived()
        )
        return sa.tuple_(_t.c.space_id, _t.c.page_id).in_(
            sa.select(pairs.c.space_id, pairs.c.page_id)
        )

    def of_pages_values(self, pages: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return {"page_spaces": [s for s, _ in pages], "page_ids": [p for _, p in pages]}

    def snippet(self) -> sa.ColumnElement[str]:
        # The body, marked here (`marked`): ts_headline parsed every body again and weighed
        # its fragments, ~35 µs a section on the server, 3.8 of an organization search's 8 ms
        # there (110 sections); finding the first word of the query in Python costs a tenth.
        # Its beginning only: a section may hold 100,000 characters, and a first match past
        # _MARKED_CHARS is rare enough to show the beginning instead.
        return sa.func.substr(_t.c.body, 1, _MARKED_CHARS)

    def marked(self, snippet: str) -> str:
        if len(snippet) <= SNIPPET_CHARS:
            return snippet  # its own snippet: nothing to centre
        pattern = self._lexemes
        if pattern is None:
            return self._marked_token_by_token(snippet)
        # Searched in lower case (the lexemes are): a case-insensitive expression cost six
        # times as much. Unless lower-casing moved the offsets (a letter whose lower case is
        # two characters), which the case-insensitive one then reads as is.
        text = snippet.lower()
        if len(text) != len(snippet):
            text, pattern = snippet, re.compile(pattern.pattern, re.IGNORECASE)
        for m in pattern.finditer(text):
            # The start of a token: checked here, as a look-behind in the expression kept
            # the regex engine from skipping ahead to a word's first letters.
            if m.start() == 0 or not _WORD.match(text, m.start() - 1):
                return _mark(snippet, *m.span())
        return snippet  # only the section title held a word: the body's beginning

    def _marked_token_by_token(self, snippet: str) -> str:
        exact, prefixes = self._lexeme_sets
        for m in _TOKEN.finditer(snippet):
            token = m.group().lower()
            if token in exact or token.startswith(prefixes):
                return _mark(snippet, *m.span())
        return snippet

    @functools.cached_property
    def _lexeme_sets(self) -> tuple[frozenset[str], tuple[str, ...]]:
        # As tsquery reads the words: each of a word's tokens a lexeme of its own (the simple
        # configuration only lower-cases), the last one a prefix where the word is.
        exact: set[str] = set()
        prefixes: list[str] = []
        for tokens, prefix in self.words:
            for j, token in enumerate(tokens):
                if prefix and j == len(tokens) - 1:
                    prefixes.append(token)
                else:
                    exact.add(token)
        return frozenset(exact), tuple(prefixes)

    @functools.cached_property
    def _lexemes(self) -> re.Pattern[str] | None:
        """A token that is one of the query's lexemes, as one expression: the regex engine
        looks for all of them in one pass. None for lexemes too long for one: it tries each
        alternative at every position of a token, so its cost grows with their total length
        (a 500-letter word against a 10,000-letter run of the same letter is millions of
        steps); they are then matched token by token, linear in the text."""
        exact, prefixes = self._lexeme_sets
        if sum(map(len, exact)) + sum(map(len, prefixes)) > _REGEX_LEXEMES:
            return None
        either = "|".join(
            [*map(re.escape, sorted(exact)), *(re.escape(p) + r"[^\W_]*" for p in prefixes)]
        )
        return re.compile(rf"(?:{either or '(?!)'})(?![^\W_])")

    def in_order(self, column: sa.ColumnElement[str]) -> sa.ColumnElement[str]:
        # Ids are mixed-case: byte order, as on SQLite, not the database's collation.
        return column.collate("C")
