"""What the content engine announces, in the transaction that made it (see kit.signals)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from docshelf.content.tree.snapshot import Snapshot
from docshelf.kit.signals import Signal


@dataclass(frozen=True, slots=True)
class PageText:
    title: str
    type: str
    markdown: str


@dataclass(frozen=True, slots=True)
class MainMoved:
    """Main of a space moved (an edit, a merge, an import, a revert) from `before` to `after`.

    `pages` holds the pages whose title, type or text changed, None for those that left main;
    `appeared` and `gone` the pages and files (by kind, "page" or "file") that entered or left
    main, whose links change status."""

    space_id: str
    after: Snapshot
    pages: Mapping[str, PageText | None]
    appeared: Mapping[str, Sequence[str]]
    gone: Mapping[str, Sequence[str]]


@dataclass(frozen=True, slots=True)
class ContentCopied:
    """`target`'s first revision is `source`'s main: what is derived from it can be copied."""

    source: str
    target: str


main_moved: Signal[MainMoved] = Signal("content.main_moved")
copied: Signal[ContentCopied] = Signal("content.copied")
# A space's content is going for good (its purge): heard with the space's id.
released: Signal[str] = Signal("content.released")
