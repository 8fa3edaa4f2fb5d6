"""The search index through the migrated database: the same expectations on SQLite (FTS5) and on
PostgreSQL (tsvector)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.models import search_sections, spaces
from docshelf.search import engine
from docshelf.search.engine import Hit, IndexedPage, IndexedSection, SectionHit
from tests import factories
from tests.helpers import executed

Pages = dict[str, IndexedPage | None]


async def make_spaces(db: AsyncEngine, *titles: str) -> list[str]:
    org_id, _ = await factories.org_with_members(db)
    now = utcnow()
    ids = [f"space{i}{title}"[:20] for i, title in enumerate(titles)]
    async with unit_of_work(db) as conn:
        await conn.execute(
            sa.insert(spaces),
            [
                {
                    "id": sid,
                    "organization_id": org_id,
                    "title": title,
                    "visibility": "private",
                    "revision_id": f"rev{sid}"[:20],
                    "created_at": now,
                    "updated_at": now,
                }
                for sid, title in zip(ids, titles, strict=True)
            ],
        )
    return ids


def page(title: str, *sections: tuple[str | None, str]) -> IndexedPage:
    """Sections as (title, body); the anchor is the lower-cased title."""
    return IndexedPage(
        title,
        tuple(IndexedSection(t and t.lower().replace(" ", "-"), t, body) for t, body in sections),
    )


async def index(db: AsyncEngine, space_id: str, pages: Pages) -> None:
    async with unit_of_work(db) as conn:
        await engine.reindex(conn, space_id, pages)


async def find(
    db: AsyncEngine,
    query: str,
    space_ids: sa.Select[Any] | list[str],
    *,
    limit: int = 20,
    offset: int = 0,
) -> tuple[list[Hit], int]:
    async with unit_of_work(db, write=False) as conn:
        found = await engine.search(conn, query, space_ids=space_ids, limit=limit, offset=offset)
    return found.hits, found.count


async def found(db: AsyncEngine, query: str, space_ids: list[str]) -> list[str]:
    hits, total = await find(db, query, space_ids)
    assert total == len(hits)
    return [h.page_id for h in hits]


async def test_a_title_match_ranks_above_a_section_title_above_the_body(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    await index(
        db,
        sid,
        {
            # Said again and again in a long body: still below any title.
            "body": page(
                "Overview",
                (None, "Kubernetes " * 30 + "and more."),
                ("Deploying", "Use the kubernetes operator. " * 5),
            ),
            "section": page("Guides", (None, "Intro."), ("Kubernetes", "Clusters.")),
            "title": page("Kubernetes", (None, "All about clusters.")),
            "other": page("Unrelated", (None, "Nothing to see.")),
        },
    )
    hits, total = await find(db, "kubernetes", [sid])
    assert [h.page_id for h in hits] == ["title", "section", "body"]
    assert total == 3
    assert hits[0].score > hits[1].score > hits[2].score > 0
    assert {h.space_id for h in hits} == {sid}
    # Case and the end of a word typed so far do not matter.
    assert await found(db, "KUBER", [sid]) == ["title", "section", "body"]
    # Every word is required, wherever it is on the page.
    assert await found(db, "kubernetes operator", [sid]) == ["body"]
    assert await found(db, "kubernetes clusters", [sid]) == ["title", "section"]
    assert await found(db, "kubernetes nowhere", [sid]) == []


async def test_section_hits_and_snippets(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    long_body = "Lorem ipsum dolor sit amet. " * 40 + "The needle is here. " + "Filler text. " * 40
    await index(
        db,
        sid,
        {
            "overview": page(
                "Overview",
                (None, "Intro text without the word."),
                ("Deploying", "Use the kubernetes operator to deploy."),
                ("Scaling", "Nothing relevant."),
                ("Kubernetes", "Only the section title matches."),
            ),
            "title": page("Kubernetes", (None, "All about clusters.")),
            "long": page("Haystack", (None, long_body)),
            "many": page("Many", *((f"Part {i}", f"kubernetes number {i}") for i in range(7))),
        },
    )
    hits, _ = await find(db, "kubernetes", [sid])
    by_id = {h.page_id: h for h in hits}
    # Best first: the section whose title matches, then the body match.
    assert by_id["overview"].sections == (
        SectionHit("kubernetes", "Kubernetes", "Only the section title matches."),
        SectionHit("deploying", "Deploying", "Use the kubernetes operator to deploy."),
    )
    # Only the page title matched: no section to point at.
    assert by_id["title"].sections == ()
    many = by_id["many"].sections
    assert len(many) == engine.MAX_SECTIONS
    assert len({s.anchor for s in many}) == engine.MAX_SECTIONS

    (hit,), _ = await find(db, "needle", [sid])
    (section,) = hit.sections
    assert section.anchor is None and section.title is None
    assert "needle" in section.body
    assert 100 <= len(section.body) <= engine.SNIPPET_CHARS
    assert section.body in " ".join(long_body.split())


async def test_snippets_are_cut_around_the_first_word_of_the_query_found(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    filler = "Lorem ipsum dolor sit amet. " * 20
    bodies = {
        "prefix": filler + "Then the Deployment starts. " + filler,
        "parts": filler + "Read the v2 notes. " + filler,
        "second": filler + "A canary here, " + filler + "and a canary there.",
        "title": filler,
    }
    await index(
        db,
        sid,
        {
            pid: page("Page", (("Canary", body) if pid == "title" else (None, body)))
            for pid, body in bodies.items()
        },
    )
    plain = {pid: " ".join(body.split()) for pid, body in bodies.items()}

    async def snippet_of(query: str, pid: str) -> str:
        hits, _ = await find(db, query, [sid])
        (section,) = {h.page_id: h for h in hits}[pid].sections
        assert 100 <= len(section.body) <= engine.SNIPPET_CHARS
        assert section.body in plain[pid]
        return section.body

    # The last word a prefix, matched whatever its case.
    assert "Then the Deployment starts." in await snippet_of("deploy", "prefix")
    # A word of two tokens: both required, either marks.
    assert "Read the v2 notes." in await snippet_of("v2", "parts")
    # The first of two matches, not a later one.
    assert "A canary here," in await snippet_of("canary", "second")
    # Only the section title held the word: the body's beginning.
    assert plain["title"].startswith(await snippet_of("canary", "title"))


def test_postgresql_marks_the_first_token_that_is_a_word_of_the_query() -> None:
    pad = "x " * 110  # longer than a snippet: marked
    cases = [
        # (query, text after the padding, the marked token or None)
        ("webhook", "a Webhook here, a webhook there", "Webhook"),
        ("webh", "see webhooks", "webhooks"),  # the last word is a prefix
        ("webhook", "awebhook webhooks", "webhooks"),  # a token's start, never its middle
        ("webhook", "awebhook webhook_x", "webhook"),  # _ separates tokens
        ("webhook now", "now a webhook", "now"),  # any word of the query, the first found
        ("a:b", "c b a", "b"),  # a word of two tokens: either
        ("İstanbul", "İSTANBUL İstanbul", None),  # lower-cased by tsquery as "i̇stanbul"
        ("straße", "STRASSE Straße", "Straße"),  # read as is where lower-casing grows text
        ("zyzzyva", "nothing here", None),
    ]
    for query, text, token in cases:
        plan = engine._Postgres(engine._terms(query), [])
        marked = plan.marked(pad + text)
        if token is None:
            assert marked == pad + text, query
        else:
            assert f"\x02{token}\x03" in marked, (query, marked[-40:])
            assert marked.replace("\x02", "").replace("\x03", "") == pad + text
    short = "a webhook"
    assert engine._Postgres(engine._terms("webhook"), []).marked(short) == short
    # Token by token (lexemes too long for one expression) marks the same tokens.
    for query, text, _ in cases:
        plan = engine._Postgres(engine._terms(query), [])
        if text.isascii():
            assert plan._marked_token_by_token(pad + text) == plan.marked(pad + text), query
    long_word = "a" * 300
    plan = engine._Postgres(engine._terms(f"x {long_word}"), [])
    assert plan._lexemes is None
    text = "b" * 5000 + " " + "a" * 299 + " " + long_word + "aa"
    assert plan.marked(text) == text.replace(long_word + "aa", f"\x02{long_word}aa\x03")


async def test_reindex_replaces_and_none_removes(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    await index(
        db, sid, {"a": page("Alpha", (None, "apples")), "b": page("Beta", (None, "bananas"))}
    )
    assert await found(db, "apples", [sid]) == ["a"]
    await index(db, sid, {"a": page("Alpha", (None, "cherries"), ("More", "dates"))})
    assert await found(db, "apples", [sid]) == []
    assert await found(db, "cherries", [sid]) == ["a"]
    assert await found(db, "dates", [sid]) == ["a"]
    assert await found(db, "bananas", [sid]) == ["b"]
    # A page without any text is still found by its title.
    await index(db, sid, {"a": None, "c": page("Gamma")})
    assert await found(db, "cherries", [sid]) == []
    assert await found(db, "alpha", [sid]) == []
    assert await found(db, "gamma", [sid]) == ["c"]
    await index(db, sid, {})
    assert await found(db, "bananas", [sid]) == ["b"]


async def test_ids_of_any_shape_are_replaced_exactly(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    ids = ["x-y", "x_y", "--", "ab", "AB"]
    await index(db, sid, {pid: page("Old", (None, f"old {i}")) for i, pid in enumerate(ids)})
    await index(db, sid, {pid: page("New", (None, "new")) for pid in ids})
    assert await found(db, "old", [sid]) == []
    assert await found(db, "new", [sid]) == sorted(ids)
    await index(db, sid, {"AB": None, "--": None})
    assert await found(db, "new", [sid]) == sorted(["x-y", "x_y", "ab"])


async def test_spaces_are_kept_apart_and_dropped(db: AsyncEngine) -> None:
    one, two, three = await make_spaces(db, "One", "Two", "Three")
    for sid in (one, two, three):
        await index(db, sid, {"page1": page("Shared", (None, "common words"))})
    assert {h.space_id for h in (await find(db, "common", [one, three]))[0]} == {one, three}
    assert (await find(db, "common", []))[0] == []
    visible = sa.select(spaces.c.id).where(spaces.c.title.in_(["Two", "Three"]))
    hits, total = await find(db, "common", visible)
    assert sorted(h.space_id for h in hits) == sorted([two, three]) and total == 2
    # The same page id in two spaces is two pages, ordered by page id then space id.
    assert [h.space_id for h in hits] == sorted([two, three])
    # Ids are indexed too, but out of the reach of queries.
    assert await found(db, two, [one, two, three]) == []
    assert await found(db, "page1", [one, two, three]) == []

    async with unit_of_work(db) as conn:
        await engine.drop_space(conn, two)
    assert {h.space_id for h in (await find(db, "common", visible))[0]} == {three}
    async with db.connect() as conn:
        left = await conn.execute(
            sa.select(search_sections.c.space_id).where(search_sections.c.space_id == two)
        )
        assert left.all() == []


async def test_deleting_a_space_cascades_on_postgresql(db: AsyncEngine) -> None:
    # SQLite's FTS5 table has no foreign key: there, drop_space (above) is how rows go.
    (sid,) = await make_spaces(db, "Docs")
    await index(db, sid, {"p": page("Title", (None, "words"))})
    if db.dialect.name != "postgresql":
        return
    async with unit_of_work(db) as conn:
        await conn.execute(sa.delete(spaces).where(spaces.c.id == sid))
    assert await found(db, "words", [sid]) == []


async def test_hostile_queries_never_raise(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    await index(db, sid, {"p": page("Unicode", (None, "ünïcode text and a:b pairs, 'quoted' too"))})
    hostile = [
        '"',
        '""',
        "*",
        "a*",
        "a:b",
        "body:x",
        "NEAR(",
        "NEAR(a b)",
        "a AND",
        "OR",
        "NOT x",
        "'",
        "'; DROP TABLE spaces; --",
        "--",
        "(",
        ")",
        "{page_title}: x",
        "^x",
        "x + y",
        "!x & y | z <-> w",
        "\\",
        "\x00",
        "a\x00b",
        "\x02x\x03",
        "😀 emoji",
        "中文 日本語",
        "ü" * 512,
        "😀" * 600,
        "x" * 5000,
        "a " * 256,
        " ".join(f"w{i}:*" for i in range(100)),
    ]
    for query in hostile:
        await find(db, query, [sid])
    assert await found(db, "ünïcode", [sid]) == ["p"]
    assert await found(db, "a:b", [sid]) == ["p"]
    assert await found(db, "ünï\x00code", [sid]) == ["p"]
    assert await found(db, "'quoted'", [sid]) == ["p"]
    assert await found(db, '"pairs"', [sid]) == ["p"]
    for blank in ("", "   ", "\n\t", "--", '"', "*"):
        assert await find(db, blank, [sid]) == ([], 0)


async def test_pagination_with_total_and_stable_ties(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    # Identical pages score the same: page ids decide, byte order (upper case first).
    ids = ["pb", "pA", "pa", "pB", "p0"]
    await index(db, sid, {pid: page("Same", (None, "same words")) for pid in ids})
    ordered = sorted(ids)
    assert ordered == ["p0", "pA", "pB", "pa", "pb"]
    assert await found(db, "same", [sid]) == ordered
    seen = []
    for offset in range(0, 6, 2):
        hits, total = await find(db, "same", [sid], limit=2, offset=offset)
        assert total == 5
        seen += [h.page_id for h in hits]
    assert seen == ordered
    assert await find(db, "same", [sid], limit=2, offset=10) == ([], 5)
    assert await find(db, "same", [sid], limit=0, offset=0) == ([], 5)
    assert await find(db, "missing", [sid], limit=2, offset=4) == ([], 0)


def selects(statements: list[Any]) -> set[int]:
    return {id(s) for s in statements if isinstance(s, sa.Select)}


async def test_a_statement_is_built_once_per_shape_and_run_with_each_querys_values(
    db: AsyncEngine,
) -> None:
    a, b = await make_spaces(db, "A", "B")
    await index(db, a, {"pa": page("Alpha", ("Fruit", "red apples"))})
    await index(db, b, {"pb": page("Beta", ("Fruit", "green pears"))})
    engine._BUILT.clear()
    async with executed() as built:
        hits, _ = await find(db, "apples", [a])
    assert [(h.page_id, h.sections) for h in hits] == [
        ("pa", (SectionHit("fruit", "Fruit", "red apples"),))
    ]
    assert built
    # The same shape (one word, one space): the statements already built, with this query's
    # words, spaces and pages.
    async with executed() as again:
        hits, _ = await find(db, "pears", [b])
        assert await found(db, "apples", [b]) == []
    assert [(h.page_id, h.sections) for h in hits] == [
        ("pb", (SectionHit("fruit", "Fruit", "green pears"),))
    ]
    # (PostgreSQL's SET and RESET of the plan mode around a search are text, made each time.)
    assert selects(again) <= selects(built)
    # Two words are another shape.
    async with executed() as other:
        assert await found(db, "red apples", [a, b]) == ["pa"]
    assert not selects(other) & selects(built)


async def test_a_huge_section_is_indexed_in_part_never_refused(db: AsyncEngine) -> None:
    (sid,) = await make_spaces(db, "Docs")
    # Distinct words enough for a tsvector over PostgreSQL's 1 MB limit.
    huge = " ".join(f"w{i}" for i in range(300_000))
    await index(db, sid, {"p": page("Huge", (None, huge))})
    assert await found(db, "w10", [sid]) == ["p"]
    assert await found(db, "w299999", [sid]) == []


async def search(db: AsyncEngine, query: str, sid: str, **kw: int) -> engine.Results:
    async with unit_of_work(db, write=False) as conn:
        limit = kw.pop("limit", 1000)
        return await engine.search(conn, query, space_ids=[sid], limit=limit, offset=0, **kw)  # type: ignore[arg-type]


async def test_count_is_exact_up_to_the_candidates_and_an_estimate_past_them(
    db: AsyncEngine,
) -> None:
    (sid,) = await make_spaces(db, "Docs")
    n = engine.CANDIDATES
    # Two matching sections a page: exactly CANDIDATES sections match, half as many pages.
    await index(
        db,
        sid,
        {
            f"p{i:04}": page("Page", (None, "common ground"), ("More", "common again"))
            for i in range(n // 2)
        },
    )
    found = await search(db, "common", sid)
    assert (found.count, found.exact, found.ranked) == (n // 2, True, n // 2)
    assert len(found.hits) == n // 2

    # Past CANDIDATES sections: broad. The count estimates the pages from the matching
    # sections and the share of distinct pages among the first candidates (here exactly).
    more = {
        f"q{i:04}": page("Page", (None, "common ground"), ("More", "common again"))
        for i in range(n)
    }
    await index(db, sid, more)
    total_pages = n // 2 + n
    found = await search(db, "common", sid)
    assert not found.exact
    if db.dialect.name == "postgresql":
        # The planner's estimate of the matching sections (never below the pages ranked).
        assert found.count >= found.ranked
    else:
        assert found.count == total_pages
    # Only the candidates' pages are ranked and served: the newest CANDIDATES sections on
    # SQLite, the first in id order on PostgreSQL (two sections a page).
    assert found.ranked == n // 2 == len(found.hits)
    assert len({h.page_id for h in found.hits}) == found.ranked
    # count=False leaves the count out, nothing else.
    cheap = await search(db, "common", sid, count=False)
    assert (cheap.count, cheap.ranked, cheap.hits) == (0, found.ranked, found.hits)
    # Selective queries are unaffected.
    await index(db, sid, {"rare": page("Rare", (None, "common and unusual"))})
    found = await search(db, "unusual", sid)
    assert (found.count, found.exact, [h.page_id for h in found.hits]) == (1, True, ["rare"])
    found = await search(db, "common unusual", sid)
    assert (found.count, found.exact, [h.page_id for h in found.hits]) == (1, True, ["rare"])


async def test_a_word_broad_only_as_a_prefix_is_ranked_as_broad_and_exact_otherwise(
    db: AsyncEngine,
) -> None:
    """The last word is tried as typed, then as a prefix: ranked at once while its matches
    are within CANDIDATES, as a broad query past them, the same at any offset."""
    (sid,) = await make_spaces(db, "Docs")
    n = engine.CANDIDATES
    await index(db, sid, {"exact": page("Exact", (None, "deploy here"))})
    others = {f"p{i:04}": page("Page", (None, f"deployment {i}")) for i in range(n - 1)}
    await index(db, sid, others)
    # deploy* matches exactly CANDIDATES sections: every one ranked, the count exact.
    found = await search(db, "deploy", sid)
    assert (found.count, found.exact, found.ranked, len(found.hits)) == (n, True, n, n)
    assert found.hits[0].page_id == "exact"  # the word itself weighs more than a longer one
    hits, total = await find(db, "deploy", [sid], limit=5, offset=n + 10)
    assert (hits, total) == ([], n)
    hits, total = await find(db, "deploy", [sid], limit=0)
    assert (hits, total) == ([], n)
    assert await find(db, "deplorable", [sid]) == ([], 0)
    # One more: broad, though the word as typed matches one section.
    await index(db, sid, {"last": page("Page", (None, "deployments"))})
    found = await search(db, "deploy", sid)
    assert (found.exact, found.ranked) == (False, n)
    later, _ = await find(db, "deploy", [sid], limit=5, offset=n + 10)
    assert later == []


async def test_a_broad_query_keeps_title_matches_first_and_pages_without_overlap(
    db: AsyncEngine,
) -> None:
    (sid,) = await make_spaces(db, "Docs")
    n = engine.CANDIDATES
    # Indexed first (the oldest rows on SQLite), ids sorting last (PostgreSQL's order): outside
    # the first candidates. The title tier still finds the page title match; the section title
    # match is served only if it is a candidate (here: not).
    await index(db, sid, {"zz-title": page("Webhook", (None, "About them."))})
    await index(db, sid, {"zz-section": page("Guide", ("Webhook", "Setup."))})
    await index(
        db, sid, {f"body{i:04}": page("Page", (None, "a webhook in the body")) for i in range(n)}
    )
    whole = await search(db, "webhook", sid)
    assert not whole.exact
    ids = [h.page_id for h in whole.hits]
    assert ids[0] == "zz-title" and "zz-section" not in ids
    assert len(ids) == len(set(ids)) == whole.ranked
    # Body matches alike in where the word is: page id order.
    body = [i for i in ids if i.startswith("body")]
    assert body == sorted(body)
    # Page by page, with offsets as the cursors carry them: the same order, no page twice.
    seen: list[str] = []
    for offset in range(0, whole.ranked + 14, 7):
        async with unit_of_work(db, write=False) as conn:
            part = await engine.search(conn, "webhook", space_ids=[sid], limit=7, offset=offset)
        assert (part.count, part.ranked, part.exact) == (whole.count, whole.ranked, False)
        seen += [h.page_id for h in part.hits]
    assert seen == ids
    # Sections of a broad query's hits are found as for any other.
    (body_hit,) = [h for h in whole.hits if h.page_id == ids[-1]]
    assert [s.body for s in body_hit.sections] == ["a webhook in the body"]


async def test_a_broad_query_over_a_select_of_spaces_finds_title_matches_in_any_of_them(
    db: AsyncEngine,
) -> None:
    """An organization passes its spaces as a SELECT. The title tier (a title vector stored on
    PostgreSQL) finds a title match in a space whose rows come after every candidate, and the
    answer is the one the same spaces give as a list."""
    first, last = await make_spaces(db, "A", "B")
    n = engine.CANDIDATES
    await index(
        db, first, {f"body{i:04}": page("Page", (None, "a webhook in the body")) for i in range(n)}
    )
    await index(db, last, {"zz-title": page("Webhook guide", (None, "About them."))})
    chosen = sa.select(spaces.c.id).where(spaces.c.id.in_([first, last]))
    async with unit_of_work(db, write=False) as conn:
        by_select = await engine.search(conn, "webhook", space_ids=chosen, limit=5, offset=0)
        by_list = await engine.search(conn, "webhook", space_ids=[last, first], limit=5, offset=0)
    assert not by_select.exact
    assert (by_select.hits[0].space_id, by_select.hits[0].page_id) == (last, "zz-title")
    body = [(h.space_id, h.page_id) for h in by_select.hits[1:]]
    assert body == sorted(body) and {s for s, _ in body} == {first}
    # The title holds the query's word: the whole title share (a broad query's ranking leaves
    # the engine's relevance out).
    assert by_select.hits[0].score == 2.0
    assert by_select.hits == by_list.hits
    # (`count` is the planner's estimate on PostgreSQL, which a list informs better.)
    assert by_select.ranked == by_list.ranked


async def test_postgresql_plans_searches_for_their_words_and_resets_after(db: AsyncEngine) -> None:
    """Reads run without a transaction, so the custom plans are a session setting: set for the
    search's statements, reset before the connection serves anything else."""
    (sid,) = await make_spaces(db, "Docs")
    await index(db, sid, {"p1": page("Webhooks", (None, "a webhook"))})
    async with unit_of_work(db, write=False) as conn:
        found = await engine.search(conn, "webhook", space_ids=[sid], limit=5, offset=0)
        assert [h.page_id for h in found.hits] == ["p1"]
        if conn.dialect.name == "postgresql":
            mode = (await conn.execute(sa.text("SHOW plan_cache_mode"))).scalar_one()
            assert mode == "auto"


def test_a_statement_is_kept_only_for_a_list_of_spaces_given_as_the_parameter() -> None:
    engine._BUILT.clear()
    plan = engine._Fts5(engine._terms("word"), ["space"])
    other = engine._t.c.space_id == "space"
    first = engine._built(plan, ("probe",), lambda: sa.select(sa.literal(1)), other)
    assert engine._built(plan, ("probe",), lambda: sa.select(sa.literal(1)), other) is not first
    kept = engine._built(plan, ("probe",), lambda: sa.select(sa.literal(1)), engine._IN_SPACES)
    assert (
        engine._built(plan, ("probe",), lambda: sa.select(sa.literal(2)), engine._IN_SPACES) is kept
    )
    selected = engine._Fts5(engine._terms("word"), sa.select(sa.literal("space")))
    made = engine._built(selected, ("probe",), lambda: sa.select(sa.literal(1)))
    assert engine._built(selected, ("probe",), lambda: sa.select(sa.literal(1))) is not made


@settings(max_examples=400, deadline=None)
@given(
    query=st.lists(
        st.text(alphabet="abcé:-_ Z9\u212ak\u0130i", min_size=1, max_size=6), min_size=1, max_size=3
    ).map(" ".join),
    text=st.one_of(st.none(), st.text(alphabet="abcéÉ:-_ Z9xyz.\u212ak\u0130i", max_size=30)),
)
def test_a_title_is_counted_alike_with_or_without_the_quick_look(
    query: str, text: str | None
) -> None:
    """A broad query's titles are counted without tokenizing those that cannot hold a word of
    it (_count_held's quick look at the text): the count is the tokenized one, always."""
    terms = engine._terms(query)
    assume(terms)  # search answers a query without words before any plan
    for plan_class in (engine._Fts5, engine._Postgres):
        plan = plan_class(terms, ["s"])
        full = 0 if not text else plan._count_tokens(text)
        assert plan._count_held(text) == full
