"""Parses that would hold the event loop go to a worker process (kit.offload).

markdown-it-py needs ~2.5 us a character and ten times that per markup character, so a page
near the size limit is seconds of CPU. `warm` sends such texts to the offload pool's parse lane
and adopts what it derived (links, limits, the JSON document, search sections) into this
process's memo, keyed by the text's hash, so the helpers that then run on the event loop, inside
the write transaction or a read, find it done. Small texts are parsed inline, where the round
trip would cost more than the parse, unless `every` asks for all of them (an import, whose
hundreds of small pages add up).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from docshelf.document import markdown as md
from docshelf.kit import offload
from docshelf.kit.errors import ServiceUnavailable

# Each batch gets this much per text, and more for long texts: preparing a text parses it twice
# (links and limits, then the document and sections), and a loaded machine parses four times
# slower than `parse_cost_us` says. A page at the size limit gets a minute and a half; past its
# time (or out of the worker's memory) the request answers 503: a costly text is never parsed
# on the event loop instead, where it would stall every other request.
PARSE_SECONDS = 30.0
_COST_MARGIN = 8
# Texts sent to the worker in one task, at most this many characters together.
_BATCH_CHARS = 2_000_000


def _batches(texts: list[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for text in texts:
        if batch and size + len(text) > _BATCH_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += len(text)
    if batch:
        yield batch


def _cost_seconds(texts: list[str]) -> float:
    return sum(md.parse_cost_us(t) for t in texts) / 1e6


async def warm(
    texts: Iterable[str],
    *,
    every: bool = False,
    lane: offload.Lane = "parse",
    tenant: str | None = None,
) -> None:
    """`lane`: imports parse in their own (kit/offload.py), so that their hundreds of pages
    never hold up the parse of another caller's page write; `tenant`: whose turn it is."""
    skip = md.memoized if every else (lambda t: not md.costly(t))
    todo = [t for t in dict.fromkeys(texts) if t and not skip(t)]
    for batch in _batches(todo):
        try:
            seconds = PARSE_SECONDS * len(batch) + _COST_MARGIN * _cost_seconds(batch)
            prepared = await offload.run(
                md.prepare_many, batch, seconds=seconds, lane=lane, tenant=tenant
            )
        except (offload.OffloadTimeout, offload.OffloadCrashed, MemoryError):
            if any(md.costly(t) for t in batch):
                raise ServiceUnavailable(
                    "A page body could not be parsed in time; retry shortly",
                    headers={"Retry-After": "5"},
                ) from None
            continue  # cheap texts (an import's) are parsed inline, as any small one is
        for text, result in zip(batch, prepared, strict=True):
            md.adopt(text, result)
