"""Every bound content writes are held to, in one place (README "Limits" lists them).

A write that exceeds one answers 400 and stores nothing; an import leaves out the page that
exceeds one (reported as `skipped`, naming the limit) and imports the rest. Reads never refuse:
content stored before a limit existed is cut at the limit where it is presented (see
`presenter.nest_pages`, `markdown.to_document`), so no read can fail on it.

The bounds are set by what real documentation holds (a long-lived project's release notes are
~0.9 MB of markdown with ~5,500 links: Rust's RELEASES.md in 2026) with room to grow, and by
what one page then costs: every parse is linear in the text and runs in the offload pool
(document/parsing.py), and a page at these bounds costs seconds there, not on the event loop
(benchmarks/page_limits.py, benchmarks/RESULTS.md "Page limits").
"""

from __future__ import annotations

# A page's markdown, in UTF-8 bytes: 2.3 times the largest real page we know of. markdown-it-py
# parses ~1.5-6 us a character (quiet to loaded machine): a parse at the bound is seconds of a
# worker's CPU, and a read of its JSON document a second of the event loop's, serializing ~9 MB.
# Twice this (measured) made a cold read a minute under load, and one page's document took
# two thirds of the rendered-document memo (markdown.py), so two such pages evicted each other.
MAX_MARKDOWN_BYTES = 2 * 1024 * 1024

# Characters that start inline markup ([ ] ! < * _ ` ~ & and backslash) in a page's inline
# content (code blocks and fences do not count). Each costs the parser 10-35 us, ten times any
# other character, so a body made of nothing else costs about what a page of prose at the size
# bound does. Real pages hold 3-5 % of them (Rust's release notes: 4.2 %, 88,000 at 2 MiB).
MAX_MARKUP = 150_000

# Block containers (block quotes and list items) nested inside each other. Deeper content would
# be silently dropped by the parser, and a JSON document nests two levels per container.
MAX_BLOCK_NESTING = 32

# Link and image destinations (inline, reference definitions, autolinks) in one page: a link
# every 85 bytes at the size bound (release notes: one every 160, an index of links one every
# 30-60). Each is a row of the links index and ~200 bytes of the links memo.
MAX_LINKS = 25_000

# Blocks in one page (paragraphs, headings, list items, code blocks, rows...). A page's JSON
# document grows with them, not with its bytes: 2 MiB of one-letter paragraphs is 700,000 blocks
# and a 200 MB document, against ~28,000 blocks and 8 MB for release notes of that size. At
# this bound a document stays within what the rendered-document memo keeps, so a page is
# never rendered again on each read.
MAX_BLOCKS = 60_000

# Levels of a page tree: a top-level page is at depth 1. GitBook's page listing nests `pages`
# inside pages, two JSON levels each, and orjson refuses more than 254.
MAX_PAGE_DEPTH = 50

# Folders (or SUMMARY.md indentation levels) an import may nest; each becomes a page level.
# What lies deeper is left out of the import and reported.
MAX_IMPORT_DEPTH = MAX_PAGE_DEPTH

# The names refusals and import reports give each limit (README "Limits" uses the same).
PAGE_SIZE = "page size"
MARKUP = "markup characters"
BLOCK_NESTING = "block nesting"
LINKS = "links per page"
BLOCKS = "blocks per page"
PAGE_DEPTH = "page depth"


def too_deep(depth: int) -> str:
    return (
        f"this would place a page {depth} levels deep; "
        f"page trees hold at most {MAX_PAGE_DEPTH} levels"
    )
