"""Bytes kept past the request that made them, in an allocation of their own length."""

from __future__ import annotations


def kept(data: bytes) -> bytes:
    """A copy of `data` sized to its length, for a cache or memo to hold.

    orjson (3.12 and later) hands back its working buffer as the bytes object without trimming
    it: at least 4 KB, or the power of two it grew to, whatever the length. A 400-byte page
    record kept as it came held 4-16 KB, which made a cache bounded by lengths several times
    larger than its budget (benchmarks/RESULTS.md, "Memory"). A two-part join always copies
    and is the cheapest copy (~0.1 µs for a record)."""
    return b"".join((data, b""))
