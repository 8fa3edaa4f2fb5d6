"""The three-way merge: pages.py merges page trees by page identity (pure; texts with merge3),
revisions.py merges stored revisions through it."""

from docshelf.content.merge.pages import (
    ConflictKind,
    MergeConflict,
    MergeResult,
    merge,
    merge_markdown,
)
from docshelf.content.merge.revisions import merge_snapshots

__all__ = [
    "ConflictKind",
    "MergeConflict",
    "MergeResult",
    "merge",
    "merge_markdown",
    "merge_snapshots",
]
