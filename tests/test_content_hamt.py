"""The content-addressed HAMT (docshelf.content.tree.hamt) over an in-memory object store."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Collection, Mapping

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.content.tree import hamt


class MemoryReader:
    """An object store in a dict that counts reads."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.calls = 0
        self.hashes_read = 0

    async def get_many(self, hashes: Collection[str]) -> Mapping[str, bytes]:
        self.calls += 1
        self.hashes_read += len(hashes)
        return {h: self.objects[h] for h in hashes}

    def reset_counts(self) -> None:
        self.calls = self.hashes_read = 0


async def apply(
    reader: MemoryReader, root: str | None, changes: Mapping[str, str | None]
) -> str | None:
    """Update, check that exactly the new root's unseen nodes were returned, store them."""
    before = reachable(reader, root)
    new_root, objects = await hamt.update(reader, root, changes)
    for h, data in objects.items():
        assert hamt.object_hash(data) == h
    assert not objects.keys() & before
    reader.objects.update(objects)
    assert objects.keys() <= reachable(reader, new_root)
    check_canonical(reader, new_root)
    return new_root


async def build(entries: Mapping[str, str]) -> tuple[MemoryReader, str | None]:
    reader = MemoryReader()
    return reader, await apply(reader, None, entries)


def node(reader: MemoryReader, h: str) -> dict[str, dict[str, str]]:
    decoded: dict[str, dict[str, str]] = orjson.loads(reader.objects[h])
    return decoded


def reachable(reader: MemoryReader, root: str | None) -> set[str]:
    seen: set[str] = set()
    todo = [root] if root else []
    while todo:
        h = todo.pop()
        seen.add(h)
        todo.extend(node(reader, h).get("b", {}).values())
    return seen


def levels(reader: MemoryReader, root: str | None) -> int:
    """How many levels the trie has (0 when empty)."""
    if root is None:
        return 0
    return 1 + max((levels(reader, c) for c in node(reader, root).get("b", {}).values()), default=0)


def slot(key: str, depth: int) -> int:
    bits = int.from_bytes(hashlib.sha256(key.encode()).digest())
    return (bits >> (256 - 5 * (depth + 1))) & 31


def check_canonical(reader: MemoryReader, root: str | None) -> None:
    """Leaves hold at most 32 entries, branches more, and every key sits under its own slots."""

    def walk(h: str, depth: int, path: tuple[int, ...]) -> int:
        raw = orjson.loads(reader.objects[h])
        for key in raw.get("l", {}):
            assert tuple(slot(key, d) for d in range(depth)) == path
        if "l" in raw:
            assert 0 < len(raw["l"]) <= 32
            return len(raw["l"])
        assert set(raw) == {"b", "n"}
        total = sum(walk(c, depth + 1, (*path, int(s))) for s, c in raw["b"].items())
        assert total == raw["n"] > 32
        return total

    if root is not None:
        walk(root, 0, ())


def keys(n: int, prefix: str = "page-") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


# Basics


def test_object_hash_and_encoding_are_canonical() -> None:
    assert hamt.encode({"b": 1, "a": {"d": 2, "c": 3}}) == b'{"a":{"c":3,"d":2},"b":1}'
    assert hamt.object_hash(b"x") == hashlib.sha256(b"x").hexdigest()[:32]


async def test_empty_map() -> None:
    reader = MemoryReader()
    assert await hamt.update(reader, None, {}) == (None, {})
    assert await hamt.update(reader, None, {"gone": None}) == (None, {})
    assert await hamt.lookup(reader, None, ["a"]) == {}
    assert await hamt.items(reader, None) == {}
    assert await hamt.count(reader, None) == 0
    assert await hamt.diff(reader, None, None) == {}
    assert reader.calls == 0


async def test_small_map_is_one_leaf() -> None:
    reader, root = await build({"a": "1", "b": "2"})
    assert root is not None
    assert node(reader, root) == {"l": {"a": "1", "b": "2"}}
    assert await hamt.lookup(reader, root, ["a", "zz"]) == {"a": "1"}
    assert await hamt.count(reader, root) == 2
    assert await apply(reader, root, {"a": None, "b": None}) is None


async def test_no_op_changes_write_nothing() -> None:
    reader, root = await build(dict.fromkeys(keys(500), "v"))
    assert await hamt.update(reader, root, {"absent": None}) == (root, {})
    assert await hamt.update(reader, root, {"page-7": "v"}) == (root, {})


# Scale


async def test_single_key_update_on_10000_keys_touches_one_path() -> None:
    entries = {k: f"hash-{k}" for k in keys(10_000)}
    reader, root = await build(entries)
    depth = levels(reader, root)
    assert depth == 3
    assert await hamt.count(reader, root) == 10_000

    reader.reset_counts()
    new_root, objects = await hamt.update(reader, root, {"page-42": "changed"})
    assert len(objects) == depth <= 5
    assert reader.calls == depth
    reader.objects.update(objects)

    reader.reset_counts()
    assert await hamt.lookup(reader, new_root, ["page-42", "page-43", "nope"]) == {
        "page-42": "changed",
        "page-43": "hash-page-43",
    }
    assert reader.calls == depth

    reader.reset_counts()
    assert await hamt.diff(reader, root, new_root) == {"page-42": ("hash-page-42", "changed")}
    assert reader.calls == depth
    assert reader.hashes_read <= 2 * depth

    # Inserting a new key and deleting one are as cheap.
    for change in ({"page-new": "x"}, {"page-9": None}):
        reader.reset_counts()
        _, objects = await hamt.update(reader, root, change)
        assert len(objects) <= depth
        assert reader.calls == depth


async def test_batched_lookup_reads_once_per_level() -> None:
    reader, root = await build(dict.fromkeys(keys(10_000), "v"))
    reader.reset_counts()
    wanted = keys(10_000)[::7]
    assert await hamt.lookup(reader, root, wanted) == dict.fromkeys(wanted, "v")
    assert reader.calls == levels(reader, root)


async def test_items_reads_once_per_level() -> None:
    entries = {k: k.upper() for k in keys(3_000)}
    reader, root = await build(entries)
    reader.reset_counts()
    assert await hamt.items(reader, root) == entries
    assert reader.calls == levels(reader, root)


async def test_mass_deletion_collapses_to_the_directly_built_trie() -> None:
    entries = dict.fromkeys(keys(10_000), "v")
    reader, root = await build(entries)
    for survivors in (1_000, 40, 33, 32, 5):
        doomed = dict.fromkeys(keys(10_000)[survivors:])
        remaining = dict.fromkeys(keys(survivors), "v")
        reader.reset_counts()
        collapsed = await apply(reader, root, doomed)
        # The changed paths, plus one read of the untouched children being merged.
        assert reader.calls <= levels(reader, root) + 1
        assert collapsed == (await build(remaining))[1]
        assert await hamt.items(reader, collapsed) == remaining
    assert await apply(reader, root, dict.fromkeys(entries)) is None


async def test_splitting_and_collapsing_one_key_at_a_time() -> None:
    reader = MemoryReader()
    root = None
    roots = []
    for k in keys(40):
        root = await apply(reader, root, {k: "v"})
        roots.append(root)
    assert root is not None
    assert "b" in node(reader, root)
    for k, before in zip(reversed(keys(40)), reversed([None, *roots[:-1]]), strict=True):
        root = await apply(reader, root, {k: None})
        assert root == before


# Properties

# A key space small enough that bulk batches often split a leaf or collapse a branch.
KEYS = st.integers(0, 100).map(lambda i: f"k{i}")
VALUES = st.sampled_from(["a", "b", "c"]) | st.text(max_size=4)
BATCHES = st.dictionaries(KEYS, st.none() | VALUES, max_size=12) | st.builds(
    lambda lo, n, value: {f"k{i}": value for i in range(lo, lo + n)},
    st.integers(0, 100),
    st.integers(0, 100),
    st.none() | VALUES,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(BATCHES, max_size=8), st.lists(KEYS, max_size=20))
def test_updates_behave_like_a_dict_and_stay_canonical(
    batches: list[dict[str, str | None]], probes: list[str]
) -> None:
    async def run() -> None:
        reader = MemoryReader()
        root = None
        expected: dict[str, str] = {}
        for batch in batches:
            root = await apply(reader, root, batch)
            for k, v in batch.items():
                if v is None:
                    expected.pop(k, None)
                else:
                    expected[k] = v
            assert await hamt.items(reader, root) == expected
        assert await hamt.count(reader, root) == len(expected)
        wanted = [*probes, *expected]
        assert await hamt.lookup(reader, root, wanted) == expected
        assert root == (await build(expected))[1]
        assert (root is None) == (not expected)

    asyncio.run(run())


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(KEYS, VALUES, max_size=250),
    st.lists(BATCHES, max_size=3),
)
def test_diff_is_the_dict_difference(
    start: dict[str, str], batches: list[dict[str, str | None]]
) -> None:
    async def run() -> None:
        reader = MemoryReader()
        a = await apply(reader, None, start)
        b = a
        for batch in batches:
            b = await apply(reader, b, batch)
        da, db = await hamt.items(reader, a), await hamt.items(reader, b)
        expected = {
            k: (da.get(k), db.get(k)) for k in da.keys() | db.keys() if da.get(k) != db.get(k)
        }
        assert await hamt.diff(reader, a, b) == expected
        flipped = {k: (y, x) for k, (x, y) in expected.items()}
        assert await hamt.diff(reader, b, a) == flipped
        assert await hamt.diff(reader, None, b) == {k: (None, v) for k, v in db.items()}
        assert await hamt.diff(reader, a, None) == {k: (v, None) for k, v in da.items()}

    asyncio.run(run())


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(KEYS, VALUES, max_size=250),
    st.lists(BATCHES, max_size=3),
    st.integers(min_value=0, max_value=300),
)
def test_lazy_diff_reads_a_prefix_and_accounts_for_the_rest(
    start: dict[str, str], batches: list[dict[str, str | None]], stop: int
) -> None:
    """Batches taken until `stop` entries, then `rest`, account for exactly the diff: every
    key once, in a fixed order, one-sided keys counted and in-place changes named."""

    async def run() -> None:
        reader = MemoryReader()
        a = await apply(reader, None, start)
        b = a
        for batch in batches:
            b = await apply(reader, b, batch)
        expected = await hamt.diff(reader, a, b)
        for x, y in ((a, b), (None, b), (a, None)):
            want = await hamt.diff(reader, x, y)
            walker = hamt.DiffWalker(reader, x, y)
            seen: list[tuple[str, str | None, str | None]] = []
            while len(seen) < stop and (found := await walker.next_batch()) is not None:
                seen += found
            one_sided, in_place = await walker.rest()
            assert len({k for k, _, _ in seen}) == len(seen)
            assert {k: (o, n) for k, o, n in seen} | in_place == {
                k: v for k, v in want.items() if k in in_place or k in {s[0] for s in seen}
            }
            rest = {k: v for k, v in want.items() if k not in {s[0] for s in seen}}
            assert one_sided == sum(1 for o, n in rest.values() if o is None or n is None)
            assert in_place == {
                k: v for k, v in rest.items() if v[0] is not None and v[1] is not None
            }
        full = hamt.DiffWalker(reader, a, b)
        ordered = []
        while (found := await full.next_batch()) is not None:
            ordered += found
        assert {k: (o, n) for k, o, n in ordered} == expected
        assert await full.rest() == (0, {})

    asyncio.run(run())
