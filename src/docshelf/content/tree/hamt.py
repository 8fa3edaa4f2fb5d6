"""A persistent, content-addressed hash array mapped trie: an immutable map of str -> str whose
nodes are small JSON objects named by the hash of their bytes.

A node is a leaf `{"l": {key: value, ...}}` or a branch `{"b": {"<slot>": child_hash, ...},
"n": <entries below>}`. Keys are placed by sha256(key), 5 bits per level. The shape is canonical
(a function of the entries alone, never of the order of updates): a subtree is a leaf exactly
when it holds at most 32 entries or has run out of hash bits, otherwise a branch. So equal maps
have equal root hashes, an update rewrites only the nodes on its keys' paths, and a diff skips
every subtree whose hash both sides share.

All reads go through an `ObjectReader`, one `get_many` call per trie level, batched over every
key involved; nothing here writes: `update` returns the new objects for the caller to store.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol, TypeVar

import orjson

_BITS = 5
_MAX_LEAF = 1 << _BITS
# Levels 0..50 each have a full 5-bit chunk of the 256-bit key hash; nodes deeper must be leaves.
_MAX_DEPTH = 256 // _BITS

_V = TypeVar("_V")


class ObjectReader(Protocol):
    async def get_many(self, hashes: Collection[str]) -> Mapping[str, bytes]:
        """Bytes of each requested object (all requested hashes exist; raise KeyError
        otherwise)."""
        ...


def object_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def encode(node: dict[str, Any]) -> bytes:
    return orjson.dumps(node, option=orjson.OPT_SORT_KEYS)


# Nodes as read


@dataclass(frozen=True)
class _Leaf:
    entries: dict[str, str]

    @property
    def count(self) -> int:
        return len(self.entries)


@dataclass(frozen=True)
class _Branch:
    children: dict[int, str]
    count: int


_Node = _Leaf | _Branch


def _decode(data: bytes) -> _Node:
    raw = orjson.loads(data)
    if "l" in raw:
        return _Leaf(raw["l"])
    return _Branch({int(slot): child for slot, child in raw["b"].items()}, raw["n"])


async def _load(reader: ObjectReader, hashes: Collection[str]) -> dict[str, _Node]:
    data = await reader.get_many(hashes)
    return {h: _decode(data[h]) for h in hashes}


# Key placement


@lru_cache(maxsize=1 << 16)
def _key_bits(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest())


def _slot(key: str, depth: int) -> int:
    return (_key_bits(key) >> (256 - _BITS * (depth + 1))) & (_MAX_LEAF - 1)


def _by_slot(entries: Mapping[str, _V], depth: int) -> dict[int, dict[str, _V]]:
    groups: dict[int, dict[str, _V]] = defaultdict(dict)
    for key, value in entries.items():
        groups[_slot(key, depth)][key] = value
    return groups


# Reading


async def lookup(reader: ObjectReader, root: str | None, keys: Collection[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    # Node hash -> the wanted keys that would live below it.
    frontier: dict[str, list[str]] = {root: list(set(keys))} if root is not None and keys else {}
    depth = 0
    while frontier:
        nodes = await _load(reader, frontier.keys())
        below: dict[str, list[str]] = defaultdict(list)
        for h, wanted in frontier.items():
            node = nodes[h]
            if isinstance(node, _Leaf):
                found.update((k, node.entries[k]) for k in wanted if k in node.entries)
                continue
            for key in wanted:
                child = node.children.get(_slot(key, depth))
                if child is not None:
                    below[child].append(key)
        frontier = below
        depth += 1
    return found


async def items(reader: ObjectReader, root: str | None) -> dict[str, str]:
    entries: dict[str, str] = {}
    frontier = [root] if root is not None else []
    while frontier:
        nodes = await _load(reader, frontier)
        frontier = []
        for node in nodes.values():
            if isinstance(node, _Leaf):
                entries.update(node.entries)
            else:
                frontier.extend(node.children.values())
    return entries


async def walk(reader: ObjectReader, root: str | None) -> tuple[set[str], dict[str, str]]:
    """Every node hash of the trie and every entry: what a copy of this map needs."""
    nodes: set[str] = set()
    entries: dict[str, str] = {}
    frontier = [root] if root is not None else []
    while frontier:
        nodes.update(frontier)
        loaded = await _load(reader, frontier)
        frontier = []
        for node in loaded.values():
            if isinstance(node, _Leaf):
                entries.update(node.entries)
            else:
                frontier.extend(h for h in node.children.values() if h not in nodes)
    return nodes, entries


async def count(reader: ObjectReader, root: str | None) -> int:
    if root is None:
        return 0
    return (await _load(reader, [root]))[root].count


def count_of(node: bytes) -> int:
    """The entries of the map whose root node's bytes these are."""
    return _decode(node).count


# Either side of a diff at some position: an unread node, the entries of a leaf (possibly
# pushed down from a shallower level to meet the other side's branch), or nothing.
_Side = str | dict[str, str] | None


async def diff(
    reader: ObjectReader, a: str | None, b: str | None
) -> dict[str, tuple[str | None, str | None]]:
    changed: dict[str, tuple[str | None, str | None]] = {}
    pairs: list[tuple[_Side, _Side]] = [(a, b)] if a != b else []
    depth = 0
    while pairs:
        unread = {side for pair in pairs for side in pair if isinstance(side, str)}
        nodes = await _load(reader, unread) if unread else {}
        below: list[tuple[_Side, _Side]] = []
        for x, y in pairs:
            nx = nodes[x] if isinstance(x, str) else x
            ny = nodes[y] if isinstance(y, str) else y
            if isinstance(nx, _Branch) or isinstance(ny, _Branch):
                sx, sy = _split(nx, depth), _split(ny, depth)
                below.extend(
                    (sx.get(s), sy.get(s)) for s in sx.keys() | sy.keys() if sx.get(s) != sy.get(s)
                )
            else:
                ex = nx.entries if isinstance(nx, _Leaf) else nx or {}
                ey = ny.entries if isinstance(ny, _Leaf) else ny or {}
                for key in ex.keys() | ey.keys():
                    if ex.get(key) != ey.get(key):
                        changed[key] = (ex.get(key), ey.get(key))
        pairs = below
        depth += 1
    return changed


class DiffWalker:
    """A diff read lazily, in a fixed order (by key hash, i.e. trie order), one leaf's worth of
    changed entries per `next_batch`, so a caller that needs the first N changes reads only the
    nodes on their paths. `rest` then accounts for everything not yet read: subtrees present on
    one side only are counted from their nodes' entry counts without being descended, and only
    subtrees present on both sides are walked to find the keys that changed in place."""

    def __init__(self, reader: ObjectReader, a: str | None, b: str | None) -> None:
        self.reader = reader
        # (side a, side b, depth), popped from the end: the next pair in trie order is last.
        self.stack: list[tuple[_Side, _Side, int]] = [(a, b, 0)] if a != b else []

    async def next_batch(self) -> list[tuple[str, str | None, str | None]] | None:
        while self.stack:
            x, y, depth = self.stack.pop()
            unread = {side for side in (x, y) if isinstance(side, str)}
            nodes = await _load(self.reader, unread) if unread else {}
            nx = nodes[x] if isinstance(x, str) else x
            ny = nodes[y] if isinstance(y, str) else y
            if isinstance(nx, _Branch) or isinstance(ny, _Branch):
                sx, sy = _split(nx, depth), _split(ny, depth)
                for slot in sorted(sx.keys() | sy.keys(), reverse=True):
                    if sx.get(slot) != sy.get(slot):
                        self.stack.append((sx.get(slot), sy.get(slot), depth + 1))
                continue
            ex = nx.entries if isinstance(nx, _Leaf) else nx or {}
            ey = ny.entries if isinstance(ny, _Leaf) else ny or {}
            changed = [
                (key, ex.get(key), ey.get(key))
                for key in sorted(ex.keys() | ey.keys(), key=_key_bits)
                if ex.get(key) != ey.get(key)
            ]
            if changed:
                return changed
        return None

    async def rest(self) -> tuple[int, dict[str, tuple[str, str]]]:
        """(how many keys not yet returned exist on one side only, the others that changed
        in place with their old and new values); empties the walker."""
        one_sided = 0
        in_place: dict[str, tuple[str, str]] = {}
        pairs, self.stack = self.stack, []
        while pairs:
            unread = {side for x, y, _ in pairs for side in (x, y) if isinstance(side, str)}
            nodes = await _load(self.reader, unread) if unread else {}
            below: list[tuple[_Side, _Side, int]] = []
            for x, y, depth in pairs:
                nx = nodes[x] if isinstance(x, str) else x
                ny = nodes[y] if isinstance(y, str) else y
                if nx is None or ny is None:
                    only = nx if nx is not None else ny
                    one_sided += (
                        only.count if isinstance(only, _Leaf | _Branch) else len(only or {})
                    )
                    continue
                if isinstance(nx, _Branch) or isinstance(ny, _Branch):
                    sx, sy = _split(nx, depth), _split(ny, depth)
                    below.extend(
                        (sx.get(s), sy.get(s), depth + 1)
                        for s in sx.keys() | sy.keys()
                        if sx.get(s) != sy.get(s)
                    )
                    continue
                ex = nx.entries if isinstance(nx, _Leaf) else nx
                ey = ny.entries if isinstance(ny, _Leaf) else ny
                for key in ex.keys() | ey.keys():
                    old, new = ex.get(key), ey.get(key)
                    if old == new:
                        continue
                    if old is None or new is None:
                        one_sided += 1
                    else:
                        in_place[key] = (old, new)
            pairs = below
        return one_sided, in_place


def _split(side: _Node | dict[str, str] | None, depth: int) -> Mapping[int, _Side]:
    """One side's children by slot, so it can be compared with a branch on the other side."""
    if isinstance(side, _Branch):
        return side.children
    if isinstance(side, _Leaf):
        return _by_slot(side.entries, depth)
    return _by_slot(side or {}, depth)


# Updating


@dataclass(frozen=True)
class _Written:
    """A new branch, already encoded."""

    hash: str
    count: int


# A new subtree: its entries while they fit in one leaf (not yet encoded, since a collapsing
# parent may absorb them), or a written branch. `{}` is the empty subtree.
_New = dict[str, str] | _Written


class _NotLoaded(Exception):
    """This pass needs nodes that are not loaded yet (now listed in `_Pass.missing`)."""


class _Pass:
    """One attempt to build the updated trie from the nodes loaded so far.

    Each attempt goes as deep as the loaded nodes allow and notes every node it lacks at that
    depth, so `update` can load them in one batch and try again: one read per level of the
    changed paths, plus one more when a branch collapses and its untouched children must be
    read to merge their entries.
    """

    def __init__(self, loaded: Mapping[str, _Node]) -> None:
        self.loaded = loaded
        self.missing: set[str] = set()
        self.objects: dict[str, bytes] = {}

    def node(self, h: str) -> _Node:
        node = self.loaded.get(h)
        if node is None:
            self.missing.add(h)
            raise _NotLoaded
        return node

    def apply(self, h: str | None, changes: Mapping[str, str | None], depth: int) -> _New:
        node = self.node(h) if h is not None else _Leaf({})
        if isinstance(node, _Leaf):
            entries = dict(node.entries)
            for key, value in changes.items():
                if value is None:
                    entries.pop(key, None)
                else:
                    entries[key] = value
            return self.shape(entries, depth)

        groups = _by_slot(changes, depth)
        new: dict[int, _New] = {}
        incomplete = False
        for slot, sub in groups.items():
            try:
                new[slot] = self.apply(node.children.get(slot), sub, depth + 1)
            except _NotLoaded:
                incomplete = True  # keep going: siblings' missing nodes join the same batch
        if incomplete:
            raise _NotLoaded

        kept = {s: child for s, child in node.children.items() if s not in groups}
        old_changed = sum(self.loaded[node.children[s]].count for s in groups if s in node.children)
        total = node.count - old_changed + sum(_size(n) for n in new.values())
        if total > _MAX_LEAF:
            children = kept | {s: self.ref(n) for s, n in new.items() if n}
            return self.branch(children, total)
        # Collapse. Every new child is small enough to still be plain entries.
        entries = self.collect(kept.values())
        for n in new.values():
            assert isinstance(n, dict)
            entries.update(n)
        return entries

    def collect(self, hashes: Iterable[str]) -> dict[str, str]:
        """Every entry below the given (unchanged) nodes."""
        entries: dict[str, str] = {}
        incomplete = False
        for h in hashes:
            try:
                node = self.node(h)
                if isinstance(node, _Leaf):
                    entries.update(node.entries)
                else:
                    entries.update(self.collect(node.children.values()))
            except _NotLoaded:
                incomplete = True
        if incomplete:
            raise _NotLoaded
        return entries

    def shape(self, entries: dict[str, str], depth: int) -> _New:
        """The canonical subtree at `depth` holding exactly `entries`."""
        if len(entries) <= _MAX_LEAF or depth >= _MAX_DEPTH:
            return entries
        groups = _by_slot(entries, depth)
        children = {s: self.ref(self.shape(sub, depth + 1)) for s, sub in groups.items()}
        return self.branch(children, len(entries))

    def ref(self, new: _New) -> str:
        """The hash of a non-empty new child, writing it if it is a leaf."""
        if isinstance(new, _Written):
            return new.hash
        return self.write({"l": new})

    def branch(self, children: dict[int, str], total: int) -> _Written:
        node = {"b": {str(s): h for s, h in children.items()}, "n": total}
        return _Written(self.write(node), total)

    def write(self, node: dict[str, Any]) -> str:
        data = encode(node)
        h = object_hash(data)
        self.objects[h] = data
        return h


def _size(new: _New) -> int:
    return new.count if isinstance(new, _Written) else len(new)


async def update(
    reader: ObjectReader, root: str | None, changes: Mapping[str, str | None]
) -> tuple[str | None, dict[str, bytes]]:
    if not changes:
        return root, {}
    loaded: dict[str, _Node] = {}
    while True:
        attempt = _Pass(loaded)
        try:
            new = attempt.apply(root, changes, 0)
        except _NotLoaded:
            loaded.update(await _load(reader, attempt.missing))
            continue
        new_root = attempt.ref(new) if new else None
        # Rebuilding an untouched node (say, a no-op delete) yields its old hash: not new.
        objects = {h: d for h, d in attempt.objects.items() if h not in loaded}
        return new_root, objects
