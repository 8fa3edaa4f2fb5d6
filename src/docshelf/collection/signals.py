"""What the collections package announces, in the transaction that made it (see kit.signals)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from docshelf.kit.signals import Signal


@dataclass(frozen=True, slots=True)
class SpacesDeleted:
    """Deleted with their collection: purged like any other deleted space."""

    space_ids: Sequence[str]
    at: datetime


# Spaces deleted with their collection, and spaces moved to another organization with theirs.
spaces_deleted: Signal[SpacesDeleted] = Signal("collection.spaces_deleted")
spaces_transferred: Signal[Sequence[str]] = Signal("collection.spaces_transferred")
