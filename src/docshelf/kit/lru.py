"""The one per-process LRU: bounded by the total size of what it holds (bytes, an estimate),
not by a count, so a budget in MB means what it says."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SizedLRU(Generic[K, V]):
    def __init__(self, capacity: int, size_of: Callable[[V], int]) -> None:
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._size = 0
        self._capacity = capacity
        self._size_of = size_of

    def __contains__(self, key: K) -> bool:
        return key in self._items

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is None:
            return None
        self._items.move_to_end(key)
        return found[0]

    def put(self, key: K, value: V) -> None:
        """Keeps `value` under `key` (replacing what was there), then drops the least recently
        used entries past the budget. A value larger than the whole budget is not kept."""
        old = self._items.pop(key, None)
        if old is not None:
            self._size -= old[1]
        cost = self._size_of(value)
        if cost > self._capacity:
            return
        self._items[key] = (value, cost)
        self._size += cost
        while self._size > self._capacity:
            _, (_, gone) = self._items.popitem(last=False)
            self._size -= gone

    @property
    def size(self) -> int:
        return self._size

    def clear(self) -> None:
        self._items.clear()
        self._size = 0


def _one(_value: object) -> int:
    return 1


def counted(capacity: int) -> SizedLRU[K, V]:
    """An LRU of at most `capacity` entries, whatever their size: for kept structures that a
    count bounds well enough (bytes and rendered text are bounded by their length instead)."""
    return SizedLRU(capacity, _one)
