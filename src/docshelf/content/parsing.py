"""Parses that would hold the event loop go to a worker process (kit.offload).

markdown-it-py needs ~2.5 us a character and ten times that per markup character, so a page
near the size limit is a second of CPU. `warm` sends such a text to the offload pool and adopts
what it derived (links, limits, the JSON document, search sections) into this process's memo,
keyed by the text's hash, so the helpers that then run on the event loop, inside the write
transaction or a read, find it done. Small texts are parsed inline: the round trip would cost
more than the parse.
"""

from __future__ import annotations

from collections.abc import Iterable

from docshelf.content import markdown as md
from docshelf.kit import offload

# A parse within the limits takes about a second; a text for which this is not enough is left
# to the inline path (which `markdown.check` bounds too).
PARSE_SECONDS = 30.0


async def warm(texts: Iterable[str]) -> None:
    for text in texts:
        if not md.costly(text):
            continue
        try:
            prepared = await offload.run(md.prepare, text, seconds=PARSE_SECONDS, lane="parse")
        except (offload.OffloadTimeout, offload.OffloadCrashed, MemoryError):
            continue
        md.adopt(text, prepared)
