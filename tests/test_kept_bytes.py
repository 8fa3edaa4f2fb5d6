"""Bytes held by the process-wide caches take their length in memory, not orjson's buffer
(at least 4 KB per bytes object since orjson 3.12: a cache bounded by lengths held several
times its budget)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import orjson

from docshelf.content.tree.objects import ByteCache
from docshelf.document import markdown as md
from docshelf.kit.keep import kept

RECORD = {"id": "p1", "title": "A page", "description": "d" * 300, "children": []}


def left_behind(make: Callable[[], object]) -> tuple[int, int]:
    """(all bytes, the largest allocation) that `make()` leaves behind, what it returns kept
    alive."""
    tracemalloc.start()
    try:
        keep = make()
        sizes = [t.size for t in tracemalloc.take_snapshot().traces]
    finally:
        tracemalloc.stop()
    assert keep is not None
    return sum(sizes), max(sizes)


def test_kept_copies_into_an_allocation_of_its_length() -> None:
    raw = orjson.dumps(RECORD)
    copy = kept(raw)
    assert copy == raw
    assert copy is not raw
    assert left_behind(lambda: kept(orjson.dumps(RECORD)))[1] <= len(raw) + 64


def test_the_byte_cache_holds_what_it_counts() -> None:
    cache = ByteCache(1 << 20)

    def fill() -> ByteCache:
        for i in range(100):
            cache.put(f"k{i}", orjson.dumps({**RECORD, "id": f"p{i}"}))
        return cache

    held, _ = left_behind(fill)
    assert cache.size > 100 * len(orjson.dumps(RECORD))
    # With the keys and the ordered dict's table (orjson's buffers alone would be 100 x 4 KB).
    assert held <= 2 * cache.size


def test_the_rendered_memo_holds_its_documents_length() -> None:
    text = "# Title\n\n" + "".join(f"Paragraph {i} with *some* text.\n\n" for i in range(20))
    md.to_document("# Another\n\nThe parser, built on first use.")
    _, largest = left_behind(lambda: md._RENDERED.get(text, md._render))
    data, _, answered = md._RENDERED.get(text, md._render)
    assert 4096 < len(data) < 8192 - 64  # orjson's buffer for it would be 8 KB
    assert len(data) < len(answered) < 8192 - 64  # the same, its blocks keyed
    assert largest <= len(answered) + 64
