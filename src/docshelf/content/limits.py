"""Every bound content writes are held to, in one place (README "Limits" lists them).

A write that exceeds one answers 400 and stores nothing. Reads never refuse: content stored
before a limit existed is cut at the limit where it is presented (see `presenter.nest_pages`,
`markdown.to_document`), so no read can fail on it.
"""

from __future__ import annotations

# A page's markdown, in UTF-8 bytes. The parser is linear in the text, so this bounds the time
# one write (and one uncached read) of a page can take to well under a second.
MAX_MARKDOWN_BYTES = 1024 * 1024

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
