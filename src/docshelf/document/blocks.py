"""Block identities of a page's document, and reverting chosen block-level changes. Pure.

Docshelf stores markdown, not block records, so a top-level block's `key` is derived from what
it holds: the first 16 hex digits of the SHA-256 of its canonical JSON, with `-2`, `-3`... on
later blocks identical to an earlier one. A block keeps its key in every revision where it is
unchanged, wherever it moved; an edited block has a new key. Reads with `format=document` show
the keys; `revert_page` with `block` names them (from the current document or from the one
reverted to).
"""

from __future__ import annotations

import hashlib
from difflib import SequenceMatcher
from typing import Any

import orjson

JSON = dict[str, Any]


def _unkeyed(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _unkeyed(v) for k, v in node.items() if k != "key"}
    if isinstance(node, list):
        return [_unkeyed(v) for v in node]
    return node


def keys(nodes: list[JSON], within: str = "") -> list[str]:
    """Each block's key among its siblings; `within`: the key of the block holding them (a
    nested block's key names its place, so that equal blocks in two tabs differ)."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for node in nodes:
        canonical = orjson.dumps(_unkeyed(node), option=orjson.OPT_SORT_KEYS)
        digest = hashlib.sha256(within.encode() + canonical).hexdigest()[:16]
        seen[digest] = seen.get(digest, 0) + 1
        out.append(digest if seen[digest] == 1 else f"{digest}-{seen[digest]}")
    return out


def keyed(document: JSON) -> JSON:
    """The document with every block's key set (in place; returned for chaining): GitBook's
    documents key each block, and its renderer needs the keys of nested ones (tabs, their
    items). Top-level keys are what `revert_page` names."""
    stack: list[tuple[list[Any], str]] = [(document.get("nodes", []), "")]
    while stack:
        nodes, within = stack.pop()
        blocks = [n for n in nodes if isinstance(n, dict) and n.get("object") == "block"]
        for node, key in zip(blocks, keys(blocks, within), strict=True):
            node["key"] = key
            children = node.get("nodes")
            if isinstance(children, list):
                stack.append((children, key))
            fragments = node.get("fragments")
            if isinstance(fragments, list):
                for fragment in fragments:
                    if isinstance(fragment, dict) and isinstance(fragment.get("nodes"), list):
                        stack.append((fragment["nodes"], key))
    return document


def revert(old: list[JSON], new: list[JSON], named: set[str]) -> list[JSON] | str:
    """`new`'s blocks with the changes from `old` that touch a block in `named` undone: a block
    `new` added is removed, a block it deleted is restored where `old` had it, a modified block
    (paired with the old one it replaced) is reset, and a moved block goes back to its old
    place. Other blocks stay as in `new`. A key in neither list is answered as a message."""
    old_keys, new_keys = keys(old), keys(new)
    unknown = sorted(named - set(old_keys) - set(new_keys))
    if unknown:
        return f"block {unknown[0]!r} is in neither the page's document nor the revision's"
    out: list[JSON] = []
    matcher = SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(new[j1:j2])
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            reset = old_keys[i1 + k] in named or new_keys[j1 + k] in named
            out.append(old[i1 + k] if reset else new[j1 + k])
        # Blocks only `old` has here (deleted, or moved away): back if named.
        out.extend(old[i] for i in range(i1 + paired, i2) if old_keys[i] in named)
        # Blocks only `new` has here (added, or moved in): kept unless named.
        out.extend(new[j] for j in range(j1 + paired, j2) if new_keys[j] not in named)
    return [_unkeyed(node) for node in out]
