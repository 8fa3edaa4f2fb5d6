"""What one read of a large page's JSON document costs the event loop: the old path (decode the
kept document, key its blocks, encode the answer) against the kept, keyed bytes sent as they
are (markdown.answered_document). The page is release notes at the size limit, built from
tests/fixtures/imports as benchmarks/page_limits.py builds it.

    PYTHONPATH=src .venv/bin/python benchmarks/answered_document.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import orjson

from docshelf.document import blocks
from docshelf.document import markdown as md
from docshelf.document.limits import MAX_MARKDOWN_BYTES

FIXTURE = Path(__file__).resolve().parent.parent / "tests/fixtures/imports"


def main() -> None:
    notes = (FIXTURE / "rust-releases-1.94-1.95.md").read_text()
    text = (
        (notes * (MAX_MARKDOWN_BYTES // len(notes.encode()) + 1))
        .encode()[: MAX_MARKDOWN_BYTES - 4]
        .decode(errors="ignore")
    )
    md.adopt(text, md.prepare(text))  # what the parse lane's worker hands back
    old, new = [], []
    for _ in range(5):
        start = time.perf_counter()
        orjson.dumps({"document": blocks.keyed(md.to_document(text))})
        old.append(time.perf_counter() - start)
        start = time.perf_counter()
        orjson.dumps({"document": md.answered_document(text)})
        new.append(time.perf_counter() - start)
    size = len(orjson.dumps(md.answered_document(text)))
    print(f"page {len(text.encode()):,} bytes, document {size:,} bytes")
    print(f"decode, key, encode: median {statistics.median(old) * 1000:.0f} ms")
    print(f"kept bytes sent as they are: median {statistics.median(new) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
