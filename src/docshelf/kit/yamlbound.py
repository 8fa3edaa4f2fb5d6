"""YAML written by someone else, read within bounds set before any Python object is built.

PyYAML's safe loader constructs nothing dangerous, but a document of a few hundred bytes can
still cost minutes: aliases make a node graph whose expansion (what a walk of the result, or a
JSON dump of it, visits) grows exponentially with its written size ("billion laughs"), and
nesting can run deep. So the text is refused past a size, the events are composed by PyYAML's
composer with counts of depth, nodes and aliases, and the composed graph is measured once per
node (memoized: a bomb costs its written size, not its expansion) before it is constructed.
Every refusal is a `YamlRefused` with a one-line reason.

Only imported where YAML is read (the offload and job workers), never by the API at start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer


class YamlRefused(Exception):
    """Not valid YAML (`bound` False), or past a bound; the message says which."""

    def __init__(self, message: str, *, bound: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.bound = bound


@dataclass(frozen=True)
class Bounds:
    # Characters of text (a cheap bound, checked before anything is parsed).
    text_chars: int
    depth: int
    # Nodes once every alias is expanded.
    nodes: int
    aliases: int


def one_line(text: str) -> str:
    return " ".join(text.split())[:500]


class _Counting:
    """Composes like PyYAML's composer, counting depth, nodes and aliases as it goes."""

    bounds: Bounds

    def _start_counting(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self._depth = 0
        self._aliases = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):  # type: ignore[attr-defined]
            self._aliases += 1
            if self._aliases > self.bounds.aliases:
                raise YamlRefused(f"more than {self.bounds.aliases} YAML aliases")
            return super().compose_node(parent, index)  # type: ignore[misc]
        # Written nodes too: a flat list of a million numbers would otherwise be composed whole
        # (at ~1 KB of node and marks each) before `_measure` could refuse it.
        self._nodes += 1
        if self._nodes > self.bounds.nodes:
            raise YamlRefused(f"more than {self.bounds.nodes} nodes")
        self._depth += 1
        if self._depth > self.bounds.depth:
            raise YamlRefused(f"nested deeper than {self.bounds.depth} levels")
        try:
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1


if yaml.__with_libyaml__:

    class _Loader(_Counting, Composer, yaml.CSafeLoader):
        """LibYAML's parser for the events (about twice as fast as PyYAML's), PyYAML's composer
        (with the counts above, first in the MRO) for the nodes: LibYAML's own composer could
        not be bounded."""

        def __init__(self, stream: str, bounds: Bounds) -> None:
            yaml.CSafeLoader.__init__(self, stream)
            Composer.__init__(self)
            self._start_counting(bounds)

else:  # pragma: no cover - PyYAML built without LibYAML

    class _Loader(_Counting, yaml.SafeLoader):  # type: ignore[no-redef]
        def __init__(self, stream: str, bounds: Bounds) -> None:
            yaml.SafeLoader.__init__(self, stream)
            self._start_counting(bounds)


class _TolerantLoader(_Loader):
    """Reads tags it does not know (mkdocs.yml's `!!python/name:...`, `!ENV`) as the plain
    value they tag instead of refusing the whole document, and constructs nothing for them."""


def _unknown(loader: Any, suffix: str, node: Any) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_TolerantLoader.add_multi_constructor("!", _unknown)
_TolerantLoader.add_multi_constructor("tag:yaml.org,2002:python/", _unknown)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _measure(root: yaml.Node, bounds: Bounds) -> None:
    """Refuses a node graph whose expanded tree (aliases copied out, as JSON would write it)
    has more than `bounds.nodes` nodes or `bounds.depth` levels, or that contains itself. Each
    node is measured once, so the cost is the graph's size, not the expansion's."""
    sizes: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()
    deep = f"nested deeper than {bounds.depth} levels once aliases are expanded"

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            return known
        if key in open_:
            raise YamlRefused("a YAML alias refers to a node that contains it")
        if depth > bounds.depth:
            raise YamlRefused(deep)
        open_.add(key)
        count, height = 1, 0
        for child in _children(node):
            child_count, child_height = visit(child, depth + 1)
            count += child_count
            height = max(height, child_height + 1)
            if count > bounds.nodes:
                raise YamlRefused(f"more than {bounds.nodes} nodes once YAML aliases are expanded")
        if depth + height > bounds.depth:
            raise YamlRefused(deep)
        open_.discard(key)
        sizes[key] = (count, height)
        return count, height

    visit(root, 1)


def load(text: str, bounds: Bounds, *, tolerant: bool = False, empty: str | None = None) -> Any:
    """The document's value; for an empty document (no node at all), None, or a refusal saying
    `empty`. `tolerant` reads unknown tags as plain values (configuration files written for
    tools with tags of their own)."""
    if len(text) > bounds.text_chars:
        raise YamlRefused(f"the YAML is longer than {bounds.text_chars} characters")
    loader = (_TolerantLoader if tolerant else _Loader)(text, bounds)
    try:
        node = loader.get_single_node()
        if node is None:
            if empty is not None:
                raise YamlRefused(empty)
            return None
        _measure(node, bounds)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        if "exceeded maximum nesting depth" in str(exc):
            # PyYAML (6.0.4 and later) bounds nesting itself, at a depth past ours: the same
            # refusal, said as ours.
            raise YamlRefused(f"nested deeper than {bounds.depth} levels") from None
        raise YamlRefused(f"invalid YAML: {one_line(str(exc))}", bound=False) from None
    except RecursionError:
        raise YamlRefused(f"nested deeper than {bounds.depth} levels") from None
    finally:
        loader.dispose()
