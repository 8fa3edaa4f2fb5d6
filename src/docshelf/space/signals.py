"""What the spaces package announces, in the transaction that made it (see kit.signals)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from docshelf.kit.signals import Signal


@dataclass(frozen=True, slots=True)
class SpaceCreated:
    space_id: str
    revision_id: str  # the id main's first revision must take
    author_id: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class SpaceDuplicated:
    source: str
    copy: str
    revision_id: str  # the id the copy's first revision must take
    author_id: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class SpacesLeft:
    """Spaces deleted, or transferred to another organization: its sites stop showing them."""

    space_ids: Sequence[str]


created: Signal[SpaceCreated] = Signal("space.created")
duplicated: Signal[SpaceDuplicated] = Signal("space.duplicated")
left: Signal[SpacesLeft] = Signal("space.left")
# A deleted space is purged for good: heard with its id, before its rows go.
purging: Signal[str] = Signal("space.purging")
