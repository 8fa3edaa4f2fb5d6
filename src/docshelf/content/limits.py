"""Every bound content writes are held to, in one place (README "Limits" lists them).

A write that exceeds one answers 400 and stores nothing. Reads never refuse: content stored
before a limit existed is cut at the limit where it is presented (see `presenter.nest_pages`,
`markdown.to_document`), so no read can fail on it.
"""

from __future__ import annotations

# A page's markdown, in UTF-8 bytes. Parsing is linear in the text, at ~2.5 us a character for
# markdown-it-py (benchmarks/RESULTS.md), so this bounds one parse to about a second.
MAX_MARKDOWN_BYTES = 512 * 1024

# Characters that start inline markup ([ ] ! < * _ ` ~ & and backslash) in a page's inline
# content (code blocks and fences do not count). Each costs the parser 10-35 us, ten times any
# other character: this bounds a body made of nothing else to about a second as well. Ordinary
# pages hold a few percent of them.
MAX_MARKUP = 50_000

# Block containers (block quotes and list items) nested inside each other. Deeper content would
# be silently dropped by the parser, and a JSON document nests two levels per container.
MAX_BLOCK_NESTING = 32

# Link and image destinations (inline, reference definitions, autolinks) in one page.
MAX_LINKS = 5000

# Levels of a page tree: a top-level page is at depth 1. GitBook's page listing nests `pages`
# inside pages, two JSON levels each, and orjson refuses more than 254.
MAX_PAGE_DEPTH = 50

# Folders (or SUMMARY.md indentation levels) an import may nest; each becomes a page level.
MAX_IMPORT_DEPTH = MAX_PAGE_DEPTH


def too_deep(depth: int) -> str:
    return (
        f"this would place a page {depth} levels deep; "
        f"page trees hold at most {MAX_PAGE_DEPTH} levels"
    )
